//! Asking an agent CLI for its version (`BINARY --version`), bounded in time.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// How long `--version` may take.
pub(crate) const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The first line of `binary --version`, or why there is none.
pub(crate) async fn installed(binary: &Path) -> Result<String, String> {
    let run = tokio::process::Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(VERSION_TIMEOUT, run).await {
        Ok(Ok(out)) if out.status.success() => {
            Ok(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_string())
        }
        Ok(Ok(out)) => Err(format!("`--version` failed ({})", out.status)),
        Ok(Err(e)) => Err(format!("cannot run it: {e}")),
        Err(_) => Err(format!("`--version` did not answer within {}s", VERSION_TIMEOUT.as_secs())),
    }
}
