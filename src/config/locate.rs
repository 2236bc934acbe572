//! Finds the line and column of a key path in TOML source, for error messages.
