//! Build script: how ralph's executable is linked, for a small resident size
//! (issue 16: peak RSS <= 8 MiB; docs/performance.md, "Peak RSS").
//!
//! * Linux with glibc: packed relative relocations (`-z pack-relative-relocs`). A
//!   position-independent Rust executable carries a 24-byte relocation for every
//!   pointer in its read-only data (vtables, string tables: ~14,000 in ralph), and
//!   the loader reads them all at start-up; packed, they are a few KiB. Address-space
//!   randomisation stays (a non-PIE build would drop it). The linker records a
//!   `GLIBC_ABI_DT_RELR` dependency, so a glibc older than 2.36 refuses the binary
//!   with a clear message.
//! * Where rustc links with its own lld (x86_64 Linux, rustc 1.90+, no linker set):
//!   the functions a run executes first, together (`scripts/symbol-order.txt`, made
//!   by `scripts/symbol-order.sh`). The kernel maps code 64 KiB around each page
//!   fault, so ~1,200 functions spread over 6.8 MB keep most of it resident;
//!   packed, they are one stretch of 1.8 MiB. A name the build no longer has is
//!   skipped, so a stale list costs memory, never correctness.
//!
//! `RALPH_PLAIN_LINK=1` turns both off (a toolchain or libc that lacks them).

use std::process::Command;

const ORDER: &str = "scripts/symbol-order.txt";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed={ORDER}");
    println!("cargo::rerun-if-env-changed=RALPH_PLAIN_LINK");
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    if !var("RALPH_PLAIN_LINK").is_empty() || var("CARGO_CFG_TARGET_OS") != "linux" {
        return;
    }
    if var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let own_lld = var("TARGET") == "x86_64-unknown-linux-gnu"
        && std::env::var_os("RUSTC_LINKER").is_none()
        && rustc_minor(&var("RUSTC")).is_some_and(|minor| minor >= 90);
    if own_lld && std::path::Path::new(ORDER).exists() {
        println!("cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}/{ORDER}", var("CARGO_MANIFEST_DIR"));
        println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// The minor version of the compiler (`rustc 1.95.0 (…)` → 95).
fn rustc_minor(rustc: &str) -> Option<u32> {
    let out = Command::new(rustc).arg("-V").output().ok()?;
    let version = String::from_utf8(out.stdout).ok()?;
    version.split_whitespace().nth(1)?.split('.').nth(1)?.parse().ok()
}
