//! The CI's QEMU smoke test, and a way to try real runs by hand.
//!
//! ```text
//! vm-smoke host  [--machine PRESET|FILE] [--secs S] [--chunk-mib M] [--kernel V] [--timeout S]
//!                [--json FILE] [--min-local F] [--verbose]
//!     boots a guest (default 4 nodes x 1 CPU x 1 GiB) running `vm-smoke guest`, then
//!     checks the record (smoke::check_pinned) and prints "N passed, N failed".
//! vm-smoke guest --secs S --chunk-mib M --json FILE
//!     inside the guest: the pinned first-touch workload on this machine.
//! vm-smoke real  [--secs S] [--chunk-mib M] [--json FILE] [--allow-sysctl] [--set K=V]...
//!     the same workload on this host (no checks: a one-node host migrates nothing).
//! ```
//!
//! It builds the workload in code (numalab_real::smoke), so it needs
//! neither the CLI nor the spec parser.

use numalab_real::smoke::{check_pinned, ci_machine, pinned_first_touch};
use numalab_real::vm::{vm_run, VmOptions, GUEST_RESULT};
use numalab_real::{host_machine, real_run, RealError, RealOptions};
use std::process::exit;
use std::time::Duration;

struct Args {
    mode: String,
    secs: f64,
    chunk_mib: u64,
    kernel: Option<String>,
    timeout: u64,
    json: Option<String>,
    min_local: f64,
    verbose: bool,
    sets: Vec<(String, String)>,
    allow_sysctl: bool,
    machine: Option<String>,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mode = it
        .next()
        .ok_or("usage: vm-smoke host|guest|real [options]")?;
    let mut a = Args {
        mode,
        secs: 25.0,
        chunk_mib: 64,
        kernel: None,
        timeout: 300,
        json: None,
        min_local: 0.5,
        verbose: false,
        sets: Vec::new(),
        allow_sysctl: false,
        machine: None,
    };
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--secs" => a.secs = val()?.parse().map_err(|_| "--secs: not a number")?,
            "--chunk-mib" => {
                a.chunk_mib = val()?.parse().map_err(|_| "--chunk-mib: not a number")?
            }
            "--kernel" => a.kernel = Some(val()?),
            "--timeout" => a.timeout = val()?.parse().map_err(|_| "--timeout: not a number")?,
            "--json" => a.json = Some(val()?),
            "--min-local" => {
                a.min_local = val()?.parse().map_err(|_| "--min-local: not a number")?
            }
            "--verbose" => a.verbose = true,
            "--set" => a.sets.push(numalab_real::parse_set(&val()?)?),
            "--allow-sysctl" => a.allow_sysctl = true,
            "--machine" => a.machine = Some(val()?),
            _ => return Err(format!("unknown option {k}")),
        }
    }
    Ok(a)
}

fn fail(e: RealError) -> ! {
    eprintln!("vm-smoke: {e}");
    exit(e.exit_code())
}

fn write_json(path: &Option<String>, text: &str) {
    if let Some(p) = path {
        if let Err(e) = std::fs::write(p, text) {
            eprintln!("vm-smoke: {p}: {e}");
            exit(1);
        }
    }
}

fn main() {
    let a = parse().unwrap_or_else(|e| {
        eprintln!("vm-smoke: {e}");
        exit(2)
    });
    let chunk = a.chunk_mib << 20;
    match a.mode.as_str() {
        "guest" | "real" => {
            let m = host_machine().unwrap_or_else(|e| fail(RealError::Refused(e)));
            let w = pinned_first_touch(&m, chunk, a.secs)
                .unwrap_or_else(|e| fail(RealError::Refused(e)));
            let opts = RealOptions {
                verbose: true,
                sets: a.sets.clone(),
                allow_sysctl: a.allow_sysctl,
                ..RealOptions::default()
            };
            let rec = real_run(&w, &m, &opts).unwrap_or_else(|e| fail(e));
            write_json(&a.json, &rec.to_json());
            eprintln!(
                "vm-smoke: {} on {} ({} nodes): elapsed {:.1}s, numa_hint_faults {}, numa_pages_migrated {}",
                w.name,
                rec.kernel.as_deref().unwrap_or("?"),
                m.nr_nodes(),
                rec.elapsed_s,
                rec.vm("numa_hint_faults"),
                rec.vm("numa_pages_migrated")
            );
        }
        "host" => {
            let m = match &a.machine {
                None => ci_machine(),
                Some(name) => numalab_topology::presets::load(name)
                    .unwrap_or_else(|e| fail(RealError::Refused(e.to_string()))),
            };
            let exe =
                std::env::current_exe().unwrap_or_else(|e| fail(RealError::Failed(e.to_string())));
            let mut o = VmOptions::new(
                exe,
                vec![
                    "guest".into(),
                    "--secs".into(),
                    a.secs.to_string(),
                    "--chunk-mib".into(),
                    a.chunk_mib.to_string(),
                    "--json".into(),
                    GUEST_RESULT.into(),
                ],
            );
            o.kernel = a.kernel.clone();
            o.timeout = Duration::from_secs(a.timeout);
            o.verbose = a.verbose;
            let out = vm_run(&m, &o).unwrap_or_else(|e| fail(e));
            write_json(&a.json, &out.record.to_json());
            println!(
                "vm-smoke: kernel {} ({}={}), boot {:.1}s, QEMU {:.1}s, total {:.1}s",
                out.record.kernel.as_deref().unwrap_or("?"),
                out.kernel.package,
                out.kernel.package_version,
                out.boot_s.unwrap_or(f64::NAN),
                out.qemu_s,
                out.total_s
            );
            let checks = check_pinned(&out.record, &m, a.min_local);
            let mut passed = 0;
            let mut failed = 0;
            for c in &checks {
                println!(
                    "{} {} ({})",
                    if c.ok { "PASS" } else { "FAIL" },
                    c.name,
                    c.detail
                );
                if c.ok {
                    passed += 1;
                } else {
                    failed += 1;
                }
            }
            println!("qemu-stage: {passed} passed, {failed} failed");
            if failed > 0 {
                exit(1);
            }
        }
        m => {
            eprintln!("vm-smoke: unknown mode '{m}' (host, guest or real)");
            exit(2);
        }
    }
}
