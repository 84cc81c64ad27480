//! Records what built the binary (compiler, target, profile settings,
//! rustflags) as `NUMALAB_BUILD`, so that `numalab bench --instructions`
//! compares instruction counts only with counts of the same build
//! (src/bench_instructions.rs). Left out: dependency versions (pinned by
//! Cargo.lock, which the guard's baseline travels with).

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "rustc unknown".into());
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let assertions = if std::env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_some() {
        "on"
    } else {
        "off"
    };
    let flags = var("CARGO_ENCODED_RUSTFLAGS").replace('\u{1f}', " ");
    println!(
        "cargo:rustc-env=NUMALAB_BUILD={version}, {}, opt-level {}, debug-assertions {assertions}, rustflags [{flags}]",
        var("TARGET"),
        var("OPT_LEVEL"),
    );
    println!("cargo:rerun-if-changed=build.rs");
}
