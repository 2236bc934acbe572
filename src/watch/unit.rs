//! `ralph watch --print-systemd-unit`: a systemd user unit that runs the watchdog,
//! restarts it when it fails, reads the credentials a resumed run needs from an
//! environment file, and logs to the journal. Checked by `systemd-analyze verify`
//! in the tests.

use std::path::Path;

/// Where the unit reads the environment the resumed runs need (API keys, `PATH`).
pub(crate) const ENV_FILE: &str = "%h/.config/ralph/watch.env";

pub(crate) fn systemd_unit(ralph: &Path) -> String {
    format!(
        "\
[Unit]
Description=ralph watch: resume ralph runs interrupted by a crash or a reboot
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart={ralph} watch
# API keys and the PATH of the agent CLIs (npm, nvm): a service starts without them.
# One NAME=value per line; the leading '-' lets the unit start before the file exists.
EnvironmentFile=-{ENV_FILE}
Restart=on-failure
RestartSec=10
# The runs it resumed are separate processes that outlive a restart of the watcher.
KillMode=process
StandardOutput=journal
StandardError=journal

[Install]
WantedBy=default.target
",
        ralph = ralph.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_names_the_binary_the_env_file_and_restarts() {
        let unit = systemd_unit(Path::new("/usr/local/bin/ralph"));
        assert!(unit.contains("ExecStart=/usr/local/bin/ralph watch\n"));
        assert!(unit.contains("EnvironmentFile=-%h/.config/ralph/watch.env"));
        assert!(unit.contains("Restart=on-failure"));
        assert!(unit.contains("KillMode=process"));
    }
}
