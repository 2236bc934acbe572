//! The `named!` macro: an enum of unit variants whose stable names (in `ralph.toml`,
//! the checkpoint, the journal) are written once. A leaf of the crate's floors: it
//! imports nothing, so config, recovery, supervise and state all take it from here
//! and none of them from another.

/// An enum of unit variants whose stable names are written once: serde reads and
/// writes each variant as its name, and `as_str` and `Display` give it.
macro_rules! named {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)*
        }

        impl $name {
            $vis fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use named;

#[cfg(test)]
mod tests {
    use std::fmt::Display;

    use serde::Serialize;

    use crate::config::AgentKind;
    use crate::fleet::state::{FleetStatus, LandingStep, TaskState};
    use crate::outcome::{Category, Status};
    use crate::supervise::Detector;

    /// `enum: name name …`, after checking that serde, `Display` and the string
    /// agree on each variant's name.
    fn names<T: Serialize + Display + Copy>(name: &str, variants: &[T], text: fn(T) -> &'static str) -> String {
        let names: Vec<&str> = variants.iter().map(|v| text(*v)).collect();
        for (v, n) in variants.iter().zip(&names) {
            assert_eq!(serde_json::to_value(v).unwrap(), *n, "{name}");
            assert_eq!(v.to_string(), *n, "{name}");
        }
        format!("{name}: {}", names.join(" "))
    }

    /// Every stable name of every named enum, pinned: they are formats
    /// (`ralph.toml`, the checkpoint, the journal), so none may change.
    #[test]
    fn the_stable_names_are_as_before() {
        use crate::recovery::Rule as R;
        use crate::supervise::completion::Rule as C;
        let lines = [
            names(
                "AgentKind",
                &[
                    AgentKind::Claude,
                    AgentKind::Codex,
                    AgentKind::Opencode,
                    AgentKind::Gemini,
                    AgentKind::Command,
                    AgentKind::Sim,
                ],
                AgentKind::as_str,
            ),
            names(
                "Detector",
                &[
                    Detector::Stall,
                    Detector::ToolTimeout,
                    Detector::AttemptTimeout,
                    Detector::ToolCallLoop,
                    Detector::ToolText,
                    Detector::ToolTextInThinking,
                    Detector::CostCap,
                    Detector::PermissionDenials,
                    Detector::ContinueStorm,
                    Detector::ReadyToContinue,
                    Detector::DoneConfirmation,
                ],
                Detector::as_str,
            ),
            names(
                "completion::Rule",
                &[
                    C::NegatedWork,
                    C::StillWorking,
                    C::PostponedSignal,
                    C::InstructionEcho,
                    C::Example,
                    C::Quoted,
                    C::InCode,
                    C::TagNotLast,
                    C::LimitNotice,
                    C::DoubtWord,
                    C::Uncertain,
                    C::ClaimInWords,
                ],
                C::as_str,
            ),
            names(
                "Category",
                &[Category::Environmental, Category::Agent, Category::UserConfig, Category::Ambiguous],
                Category::as_str,
            ),
            names(
                "Status",
                &[
                    Status::Running,
                    Status::Paused,
                    Status::Waiting,
                    Status::Interrupted,
                    Status::Completed,
                    Status::Failed,
                    Status::Blocked,
                ],
                Status::as_str,
            ),
            names(
                "FleetStatus",
                &[
                    FleetStatus::Running,
                    FleetStatus::Stopped,
                    FleetStatus::Interrupted,
                    FleetStatus::Unfinished,
                    FleetStatus::Finished,
                    FleetStatus::Blocked,
                ],
                FleetStatus::as_str,
            ),
            names(
                "TaskState",
                &[
                    TaskState::Queued,
                    TaskState::Starting,
                    TaskState::Running,
                    TaskState::Finished,
                    TaskState::Merging,
                    TaskState::Merged,
                    TaskState::Evicted,
                    TaskState::Failed,
                    TaskState::Blocked,
                    TaskState::Stopped,
                    TaskState::Discarded,
                ],
                TaskState::as_str,
            ),
            names("LandingStep", &[LandingStep::Prepared, LandingStep::Swapping], LandingStep::as_str),
            names(
                "recovery::Rule",
                &[
                    R::StallInProviderRetry,
                    R::Stall,
                    R::ToolTimeout,
                    R::AttemptTimeout,
                    R::ToolCallLoop,
                    R::ToolText,
                    R::ToolTextInThinking,
                    R::CostCap,
                    R::RepeatedPermissionDenials,
                    R::BinaryMissing,
                    R::AuthFailed,
                    R::BillingDisabled,
                    R::RateLimited,
                    R::ProviderOverloaded,
                    R::ProviderError,
                    R::SessionNotFound,
                    R::ConfiguredError,
                    R::CliRejectedArgument,
                    R::ModelInvalid,
                    R::ContextTooLong,
                    R::DnsFailure,
                    R::ConnectionReset,
                    R::ConnectionRefused,
                    R::RequestTimeout,
                    R::StreamStalled,
                    R::StreamInterrupted,
                    R::ToolUnavailable,
                    R::ReportedInterruption,
                    R::Crashed,
                    R::KilledFromOutside,
                    R::ExitNonzero,
                    R::NoDoneSignal,
                    R::Unexplained,
                    R::Offline,
                    R::LaunchImpossible,
                    R::SpawnFailed,
                    R::CommitRejected,
                    R::Other,
                ],
                R::as_str,
            ),
        ];
        insta::assert_snapshot!(lines.join("\n"));
    }
}
