//! `ralph watch [--once] [-q] [--root DIR] [--hold | --release] [--print-systemd-unit]`:
//! arguments to [`crate::watch`].

use crate::cli::WatchCli;
use crate::error::RalphError;

pub(crate) fn main(cli: &WatchCli) -> Result<i32, RalphError> {
    if cli.print_systemd_unit {
        let exe = crate::os::self_exe().map_err(|e| RalphError::io("cannot find ralph's own executable", e))?;
        print!("{}", crate::watch::unit::systemd_unit(&exe));
        return Ok(crate::exit::DONE);
    }
    if cli.hold {
        return crate::watch::hold();
    }
    if cli.release {
        return crate::watch::release();
    }
    let canonical = |r: &std::path::PathBuf| {
        std::fs::canonicalize(r).map_err(|e| RalphError::setup(format!("cannot use --root {}", r.display()), e))
    };
    let roots = cli.roots.iter().map(canonical).collect::<Result<Vec<_>, _>>()?;
    crate::watch::main(&crate::watch::Options {
        once: cli.once,
        interval: cli.interval,
        max_concurrent: usize::try_from(cli.max_concurrent).unwrap_or(usize::MAX),
        roots,
        scan_depth: cli.scan_depth,
        quiet: cli.quiet,
    })
}
