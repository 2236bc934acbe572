//! Supervising a live attempt, pure over events and text: what its output comes to
//! ([`collected`]), the silence and time
//! limits ([`watch`]), tool calls printed as text ([`tool_text`]), tool-call loops
//! ([`loops`]), repeated permission denials ([`denials`]), continue storms
//! ([`storm`]), who ended the attempt ([`ended_by`]) and the detectors' names
//! ([`detector`]), honest completion in the final
//! message and the done tags ([`completion`]), which text is the final message
//! ([`final_message`]) and what of it reaches a commit or the next prompt
//! ([`excerpt`]), and the recovery note for the next attempt ([`note`]; what went
//! wrong in its words is the step's, `step::trouble`). Each
//! detector decides from values passed in only (no I/O, no clock of its own), so it
//! is tested with paused time, fixed instants and text corpora, and no processes.

pub(crate) mod collected;
pub(crate) mod completion;
pub(crate) mod denials;
pub(crate) mod detector;
pub(crate) mod ended_by;
pub(crate) mod excerpt;
pub(crate) mod final_message;
pub(crate) mod loops;
mod markdown;
pub(crate) mod note;
pub(crate) mod storm;
pub(crate) mod supervisor;
pub(crate) mod tool_text;
pub(crate) mod watch;

pub(crate) use detector::Detector;
pub(crate) use supervisor::{Intervention, Supervisor};
pub(crate) use watch::Watch;
