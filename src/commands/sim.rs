//! `ralph __sim`: the entry of the built-in scripted agent.

use crate::agent::sim::{self, SimArgs};
use crate::cli::SimCli;
use crate::config::SimStep;

pub(crate) fn main(cli: SimCli) -> i32 {
    let steps: Vec<SimStep> = match serde_json::from_str(&cli.steps) {
        Ok(steps) => steps,
        Err(e) => {
            eprintln!("ralph __sim: the steps do not parse: {e}");
            return 2;
        }
    };
    sim::run(SimArgs { session: cli.resume, agent: cli.agent, launch: cli.launch, steps, prompt: cli.prompt.join(" ") })
}
