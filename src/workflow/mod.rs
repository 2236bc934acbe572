//! The workflow model, pure: where a run stands ([`Progress`]), where it goes at a
//! phase boundary and where it starts ([`advance`]: order, repeating passes,
//! `--from`), how an attempt's output proves an iteration done ([`done`]), the
//! prompts and their templates ([`prompt`]), and whether the goal file says anything
//! ([`goal`]).

pub(crate) mod advance;
pub(crate) mod done;
pub(crate) mod goal;
pub(crate) mod progress;
pub(crate) mod prompt;

pub(crate) use progress::Progress;
