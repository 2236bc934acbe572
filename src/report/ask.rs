//! The one question ralph asks on a terminal: what to do with an unfinished run
//! found at the start (resume it, start a new one, or quit). Without a terminal, or
//! after three answers it cannot read, the run refuses with a message naming the
//! flags; a Ctrl+C at the question stops ralph at once.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use crate::error::RalphError;
use crate::listeners::Signals;
use crate::signal::InterruptAction;
use crate::state::checkpoint::Checkpoint;
use crate::step::start::{Answer, ResumeFlag, parse_answer};

/// The user's choice about the unfinished run `existing` at `path`; `None` for "quit".
pub(crate) async fn resume(
    path: &Path,
    existing: Option<&Checkpoint>,
    from: Option<&str>,
    signals: &mut Signals,
) -> Result<Option<ResumeFlag>, RalphError> {
    let Some(cp) = existing else { return Ok(Some(ResumeFlag::Fresh)) };
    let needed = || RalphError::ResumeChoiceNeeded {
        path: path.to_path_buf(),
        status: cp.status.into_str().to_string(),
        phase: cp.progress.position.phase_name.clone(),
        iteration: cp.progress.position.iteration,
        from: from.map(str::to_string),
    };
    let at = from.map(|p| format!(" at phase {p}")).unwrap_or_default();
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(needed());
    }
    let mut stderr = std::io::stderr();
    for _ in 0..3 {
        let _ = write!(
            stderr,
            "An unfinished run ({}, phase {}, iteration {}) is here. [r]esume it{at}, start [n]ew{at} (archives it), \
             or [q]uit? [r] ",
            cp.status.into_str(),
            cp.progress.position.phase_name,
            cp.progress.position.iteration
        );
        let _ = stderr.flush();
        let Some(line) = read_answer(signals).await? else { break };
        match parse_answer(&line) {
            Some(Answer::Flag(flag)) => return Ok(Some(flag)),
            Some(Answer::Quit) => return Ok(None),
            None => {}
        }
    }
    Err(needed())
}

/// One line from the terminal, or `None` at its end. The read blocks, so it runs on
/// its own thread while the signals are watched here: a Ctrl+C at the question
/// stops ralph at once (the thread ends with the process).
async fn read_answer(signals: &mut Signals) -> Result<Option<String>, RalphError> {
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line);
        let _ = tx.send(read.is_ok_and(|n| n > 0).then_some(line));
    });
    loop {
        tokio::select! {
            answer = &mut rx => return Ok(answer.unwrap_or(None)),
            action = signals.next() => match action {
                InterruptAction::Stop(cause) => return Err(RalphError::StoppedBeforeStart(cause)),
                // The control socket listens only once the run has started.
                InterruptAction::ForceExit | InterruptAction::Ignore | InterruptAction::Control => {}
            },
        }
    }
}
