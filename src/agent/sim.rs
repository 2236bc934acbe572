//! The built-in scripted agent (`kind = "sim"`): a deterministic, offline stand-in
//! for Claude Code that follows a script and misbehaves on purpose.
