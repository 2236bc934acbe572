//! The command line, dispatched: parse it, run the chosen command, map the outcome to
//! an exit code. `src/main.rs` only exits with it, so that everything else can stay
//! private to the crate.

use clap::{CommandFactory, Parser};

use crate::cli::{Cli, Command, RunArgs};
use crate::commands::{self, dir, in_dir, report};
use crate::error::RalphError;
use crate::exit;
use crate::run::{self, Options, ResumeFlag};

/// Runs the command line ralph was started with and returns its exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    let reports_only = match &cli.command {
        Some(
            Command::Completions { .. }
            | Command::Init { .. }
            | Command::Doctor { .. }
            | Command::Status { .. }
            | Command::Stop { .. }
            | Command::Logs { .. }
            | Command::Clean { .. },
        ) => true,
        Some(Command::Fleet(fleet)) => fleet.command.is_some(),
        Some(Command::Run(args)) => args.dry_run || args.inspect_checkpoint,
        None => cli.run.dry_run || cli.run.inspect_checkpoint,
        Some(Command::Sim(_) | Command::Demo { .. } | Command::Mcp { .. } | Command::Watch(_)) => false,
    };
    // A command that only prints (`ralph status | head`) ends quietly when its reader
    // goes away, as any Unix filter does, instead of panicking on the failed write.
    // A run keeps SIGPIPE ignored: an agent that closes its end of a pipe early is a
    // failure ralph handles, not ralph's death.
    if reports_only {
        let _ = crate::os::set_disposition(nix::sys::signal::Signal::SIGPIPE, false);
    }
    match cli.command {
        // The scripted agent is a plain synchronous program: no runtime, no handlers.
        Some(Command::Sim(sim)) => commands::sim::main(sim),
        Some(Command::Completions { shell }) => {
            clap_complete::generate(shell, &mut Cli::command(), "ralph", &mut std::io::stdout());
            exit::DONE
        }
        Some(Command::Demo { keep }) => report(commands::demo::main(keep)),
        Some(Command::Init { force, example: true, place }) => in_dir(&place, |d| commands::init::example(d, force)),
        Some(Command::Init { force, place, .. }) => in_dir(&place, |d| commands::init::main(d, force)),
        Some(Command::Doctor { config, json, place }) => {
            in_dir(&place, |d| commands::doctor::main(d, config.as_deref(), json))
        }
        Some(Command::Status { json, all, prune, .. }) if all || prune => {
            report(commands::status_all::main(json, prune))
        }
        Some(Command::Status { json, place, .. }) => in_dir(&place, |d| commands::status::main(d, json)),
        Some(Command::Stop { now, all: true, timeout, .. }) => report(commands::stop::all(now, timeout)),
        Some(Command::Stop { now, timeout, place, .. }) => in_dir(&place, |d| commands::stop::main(d, now, timeout)),
        Some(Command::Mcp { socket, attempt }) => report(commands::mcp::main(socket, attempt)),
        Some(Command::Watch(watch)) => report(commands::watch::main(&watch)),
        Some(Command::Logs { follow, config, place }) => {
            in_dir(&place, |d| commands::logs::main(d, config.as_deref(), follow))
        }
        Some(Command::Clean { keep, config, place }) => {
            in_dir(&place, |d| commands::clean::main(d, config.as_deref(), keep))
        }
        Some(Command::Fleet(fleet)) => commands::fleet::main(fleet),
        Some(Command::Run(args)) => report(run_command(args)),
        None => report(run_command(cli.run)),
    }
}

fn run_command(args: RunArgs) -> Result<i32, RalphError> {
    let dir = dir(&args.place)?;
    if args.dry_run {
        return commands::dry_run::main(&dir, args.config.as_deref(), args.from.as_deref());
    }
    if args.inspect_checkpoint {
        return commands::inspect::main(&dir, args.json);
    }
    if let (Some(phase), true) = (&args.from, args.no_resume) {
        return Err(RalphError::Usage(format!(
            "--from {phase} cannot be used with --no-resume: `ralph --from {phase}` starts a new run at phase \
             {phase}, `ralph --resume --from {phase}` moves the unfinished run there, and `ralph --no-resume` \
             starts a new run at the first phase"
        )));
    }
    let options = Options {
        dir,
        config: args.config,
        resume: match (args.resume, args.no_resume, args.resume_or_start) {
            (true, _, _) => ResumeFlag::Resume,
            (_, true, _) => ResumeFlag::Fresh,
            (_, _, true) => ResumeFlag::ResumeOrStart,
            _ => ResumeFlag::Ask,
        },
        from: args.from,
        quiet: args.quiet,
        verbose: args.verbose,
        allow_dirty: args.allow_dirty,
        log_format: args.log_format,
    };
    let runtime = crate::process::runtime().map_err(|e| RalphError::io("cannot start the runtime", e))?;
    let end = runtime.block_on(run::run(options));
    // A background connectivity probe still resolving a host name must not hold
    // up the exit.
    runtime.shutdown_background();
    Ok(exit::code(exit::Ending::Run(&end?)))
}
