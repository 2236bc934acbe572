//! Build script: how ralph's release executable is linked, for a small resident
//! size (issue 16: peak RSS <= 8 MiB; docs/performance.md, "Peak RSS"). Only the
//! release profile, and only where the toolchain surely has what it takes: where it
//! may not, the build goes on without (the binary is the same, only larger in
//! memory), never fails.
//!
//! * Packed relative relocations (`-z pack-relative-relocs`), on Linux with glibc
//!   2.36 or later (native builds). A position-independent Rust executable carries
//!   a 24-byte relocation for every pointer in its read-only data (vtables, string
//!   tables: ~14,000 in ralph), and the loader reads them all at start-up; packed,
//!   they are a few KiB. Address-space randomisation stays (a non-PIE build would
//!   drop it). The linker records a `GLIBC_ABI_DT_RELR` dependency, which an older
//!   glibc refuses (so older ones are not tried).
//! * Where rustc links with its own lld (x86_64 Linux, rustc 1.90+, its `rust-lld`
//!   shipped, no linker chosen by the user): the functions a run executes, together
//!   (`scripts/symbol-order.txt`, made by `scripts/symbol-order.sh`). The kernel
//!   maps code 64 KiB around each page fault, so ~1,200 functions spread over
//!   6.8 MB keep most of it resident; packed, they are one stretch of 1.8 MiB. A
//!   name the build no longer has is skipped, so a stale list costs memory, never
//!   correctness.
//!
//! `RALPH_PLAIN_LINK=1` turns both off.

use std::path::Path;
use std::process::Command;

const ORDER: &str = "scripts/symbol-order.txt";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed={ORDER}");
    for key in ["RALPH_PLAIN_LINK", "RUSTC_LINKER"] {
        println!("cargo::rerun-if-env-changed={key}");
    }
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    let native = var("TARGET") == var("HOST");
    if !var("RALPH_PLAIN_LINK").is_empty() || var("PROFILE") != "release" || var("CARGO_CFG_TARGET_OS") != "linux" {
        return;
    }
    if native && var("CARGO_CFG_TARGET_ENV") == "gnu" && glibc_minor().is_some_and(|minor| minor >= 36) {
        link_arg("-z");
        link_arg("pack-relative-relocs");
    }
    // The user's choice of linker, in any of the ways rustc takes one.
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let own_linker = std::env::var_os("RUSTC_LINKER").is_none()
        && !["linker", "fuse-ld", "link-self-contained"].iter().any(|flag| flags.contains(flag));
    if var("TARGET") == "x86_64-unknown-linux-gnu" && own_linker && rust_lld(&var("RUSTC")) && Path::new(ORDER).exists()
    {
        link_arg(&format!("--symbol-ordering-file={}/{ORDER}", var("CARGO_MANIFEST_DIR")));
        link_arg("--no-warn-symbol-ordering");
    }
}

/// One argument for the linker itself, as it is (`-Wl,` would split it at commas).
fn link_arg(arg: &str) {
    println!("cargo::rustc-link-arg-bins=-Xlinker");
    println!("cargo::rustc-link-arg-bins={arg}");
}

/// The minor version of this machine's glibc (`glibc 2.36` → 36).
fn glibc_minor() -> Option<u32> {
    let out = Command::new("getconf").arg("GNU_LIBC_VERSION").output().ok()?;
    let version = String::from_utf8(out.stdout).ok()?;
    version.split_whitespace().nth(1)?.split('.').nth(1)?.trim().parse().ok()
}

/// Whether the compiler links through its own `rust-lld` by default: rustc 1.90 or
/// later, with the linker shipped in its sysroot (a distribution's build may not).
fn rust_lld(rustc: &str) -> bool {
    let output = |arg: &str| {
        let out = Command::new(rustc).arg(arg).output().ok()?;
        String::from_utf8(out.stdout).ok()
    };
    let minor = output("-V").and_then(|v| v.split_whitespace().nth(1)?.split('.').nth(1)?.parse::<u32>().ok());
    let sysroot = output("--print=sysroot").map(|s| s.trim().to_owned());
    minor.is_some_and(|minor| minor >= 90)
        && sysroot.is_some_and(|root| {
            Path::new(&root).join("lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld/ld.lld").exists()
        })
}
