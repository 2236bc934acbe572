//! What set-up does with the checkpoint it found, decided before anything changes:
//! a new run (with the old checkpoint archived or set aside, and the old run whose
//! leftovers are ended), the run on disk resumed (with the journal's newer snapshot
//! to restore), the run left as it is, or a refusal. `run::setup` reads the disk,
//! asks the question, and carries the choice out once every check has passed.

use std::path::{Path, PathBuf};

use crate::config::Loaded;
use crate::events::RunEvent;
use crate::outcome::RunEnd;
use crate::state::checkpoint::{Checkpoint, InFlight};
use crate::state::format::{FormatError, Stale};

use super::start::{self, Refused, ResumeFlag, Start};

/// What becomes of the checkpoint; carried out by set-up once every check has passed.
pub(crate) enum Chosen {
    /// A new run, after the checkpoint found is set aside (`aside`); `old_run`
    /// names the run whose leftovers are ended.
    Fresh { cp: Box<Checkpoint>, aside: Option<Aside>, old_run: Option<String> },
    /// The run on disk continues (`cp` as it resumes), with the attempt that was in
    /// flight; `restore` is the journal's newer snapshot to put in place of the file;
    /// `clean_stop`: it ended in order (a person may have edited since).
    Resume {
        cp: Box<Checkpoint>,
        interrupted: Option<InFlight>,
        said: Vec<RunEvent>,
        restore: Option<(Box<Checkpoint>, Stale)>,
        clean_stop: bool,
    },
}

/// How the checkpoint found is set aside for a new run.
pub(crate) enum Aside {
    /// `--no-resume`, or a completed run: archived.
    Archive,
    /// `--no-resume` over a checkpoint that cannot be used.
    Unusable { label: &'static str, problem: String },
}

/// Why set-up does not start the run.
pub(crate) enum NotStarted {
    /// The run is settled as it is (`--resume-or-start` found it over): its end, and
    /// what to say.
    Settled(RunEnd, Box<RunEvent>),
    /// Nothing to resume (`--resume`): why, in a sentence.
    NothingToResume(String),
    /// No checkpoint, but one that did not parse was kept aside (here): that run is
    /// not over, and a job engine restarting ralph must not start a new one over its
    /// work tree (a crash never leaves a torn checkpoint; a person has to look).
    OverCorrupt(PathBuf),
    /// The checkpoint cannot continue under the config found now.
    Refused(Refused),
}

/// What a new run or a resume starts from: the config and goal found now, `--from`,
/// and the new run's clock, pid and the earlier phases' results on disk.
pub(crate) struct Inputs<'a> {
    pub loaded: &'a Loaded,
    pub goal: &'a str,
    pub prompt_checksum: &'a str,
    pub from: Option<&'a str>,
    pub has_artifact: &'a dyn Fn(&str) -> bool,
    pub now: jiff::Timestamp,
    pub pid: u32,
}

impl Inputs<'_> {
    /// A new run, after the checkpoint found is set aside (`aside`).
    pub(crate) fn fresh(&self, aside: Option<Aside>, old_run: Option<String>) -> Result<Chosen, NotStarted> {
        let (loaded, from) = (self.loaded, self.from);
        let cp = start::fresh(loaded, self.prompt_checksum, from, self.has_artifact, self.now, self.pid)
            .map_err(|e| NotStarted::Refused(Refused::From(e)))?;
        Ok(Chosen::Fresh { cp: Box::new(cp), aside, old_run })
    }
}

/// Carries out `decision` (see [`start::decide`]) on the checkpoint `existing` read
/// from `cp_path` under `flag`; `restore` is the journal's newer snapshot of it, and
/// `corrupt_aside` the newest checkpoint kept aside because it did not parse (looked
/// for only when there is no checkpoint and `--resume-or-start` asks).
#[must_use = "set-up carries out the choice"]
pub(crate) fn choose(
    (decision, flag): (Start, ResumeFlag),
    existing: Option<Checkpoint>,
    restore: Option<(Box<Checkpoint>, Stale)>,
    (cp_path, corrupt_aside): (&Path, Option<PathBuf>),
    inputs: &Inputs<'_>,
) -> Result<Chosen, NotStarted> {
    match (decision, existing) {
        (Start::Resume, Some(cp)) => {
            let (interrupted, clean_stop) = (cp.in_flight.clone(), cp.clean_stop);
            let (loaded, goal, checksum, from) = (inputs.loaded, inputs.goal, inputs.prompt_checksum, inputs.from);
            let (cp, said) = start::resume(cp, loaded, goal, checksum, from).map_err(NotStarted::Refused)?;
            Ok(Chosen::Resume { cp: Box::new(cp), interrupted, said, restore, clean_stop })
        }
        (Start::ArchiveThenFresh, Some(cp)) => inputs.fresh(Some(Aside::Archive), Some(cp.run_id)),
        (Start::Settled, Some(cp)) => {
            let (end, said) = start::settled(&cp);
            Err(NotStarted::Settled(end, Box::new(said)))
        }
        (Start::NothingToResume, existing) => Err(NotStarted::NothingToResume(match existing {
            Some(cp) => format!("the run {} is {}", cp.run_id, cp.status.into_str()),
            None => format!("there is no checkpoint at {}", cp_path.display()),
        })),
        (_, None) if flag == ResumeFlag::ResumeOrStart => match corrupt_aside {
            Some(aside) => Err(NotStarted::OverCorrupt(aside)),
            None => inputs.fresh(None, None),
        },
        (_, existing) => inputs.fresh(None, existing.map(|cp| cp.run_id)),
    }
}

/// How `--no-resume` sets aside a checkpoint that cannot be used: the label of its
/// copy, and the problem to say.
#[must_use]
pub(crate) fn unusable(e: &FormatError) -> (&'static str, String) {
    match e {
        FormatError::Corrupt(message) => ("corrupt", format!("does not parse ({message})")),
        other => ("archived", format!("cannot be used ({other})")),
    }
}
