//! The `ralph` binary: parse the command line, run, map the outcome to an exit code.

use clap::{CommandFactory, Parser};

use ralph::cli::{Cli, Command, Place, RunArgs};
use ralph::run::{self, Options, ResumeFlag};
use ralph::{commands, exit};

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        // The scripted agent is a plain synchronous program: no runtime, no handlers.
        Some(Command::Sim(sim)) => commands::sim::main(sim),
        Some(Command::Completions { shell }) => {
            clap_complete::generate(shell, &mut Cli::command(), "ralph", &mut std::io::stdout());
            exit::DONE
        }
        Some(Command::Demo { keep }) => report(commands::demo::main(keep)),
        Some(Command::Init { force }) => {
            dir(&Place { dir: None }).map_or_else(fail, |d| report(commands::init::main(&d, force)))
        }
        Some(Command::Doctor { config, place }) => {
            dir(&place).map_or_else(fail, |d| report(commands::doctor::main(&d, config.as_deref())))
        }
        Some(Command::Status { json, place }) => {
            dir(&place).map_or_else(fail, |d| report(commands::status::main(&d, json)))
        }
        Some(Command::Run(args)) => run_command(args),
        None => run_command(cli.run),
    };
    std::process::exit(code);
}

fn run_command(args: RunArgs) -> i32 {
    let dir = match dir(&args.place) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    if args.inspect_checkpoint {
        return report(commands::inspect::main(&dir, args.json));
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
        quiet: args.quiet,
        verbose: args.verbose,
    };
    // One thread: the agent is forked from it, so its parent-death signal is tied to
    // ralph's life rather than to a worker thread's.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(ralph::error::RalphError::io("cannot start the runtime", e)),
    };
    match runtime.block_on(run::run(options)) {
        Ok(end) => end.exit_code(),
        Err(e) => fail(e),
    }
}

fn dir(place: &Place) -> Result<std::path::PathBuf, ralph::error::RalphError> {
    match &place.dir {
        Some(d) => {
            std::fs::canonicalize(d).map_err(|e| ralph::error::RalphError::io(format!("cannot use {}", d.display()), e))
        }
        None => {
            std::env::current_dir().map_err(|e| ralph::error::RalphError::io("cannot read the current directory", e))
        }
    }
}

fn report(result: Result<i32, ralph::error::RalphError>) -> i32 {
    result.unwrap_or_else(fail)
}

fn fail(error: ralph::error::RalphError) -> i32 {
    eprintln!("ralph: {error}");
    exit::for_error(&error)
}
