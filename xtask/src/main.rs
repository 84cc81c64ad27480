//! Developer tasks, run with `cargo run -p xtask -- TASK` (not a default
//! member: `cargo build` does not build it). For fuzzing, prefer
//! `cargo run --profile test -p xtask -- fuzz N`: optimized, with overflow
//! checks and debug assertions on.
//!
//! `fuzz N [--seed S] [--jobs J] [--show-errors]`: runs N mutation-fuzz
//! cases (seeds S, S+1, ..., S+N-1; S defaults to 1) through the model
//! pipeline with the long-run bounds (`numalab_fuzz::Limits::LONG`) on J
//! threads (default: the available cores), prints the counts and every
//! failure (panic, broken invariant or work bound, unclear error) with its
//! reproducer, and exits 1 if there was one. The counts do not depend on
//! J: each case depends only on its seed.
//!
//! `import-cycles`: lists import cycles between the files of a crate and
//! crate dependencies up the layers (import_cycles.rs; its tests fail on
//! either in `cargo test`), and exits 1 if there is one.
//!
//! Left out: fuzzing the command line (the test suite's
//! `crates/numalab/tests/fuzz_cli.rs` does that through the built binary).

mod import_cycles;

use numalab_fuzz::{pipeline, run_case, Case, Counts, Limits, Outcome};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const USAGE: &str =
    "usage: cargo run -p xtask -- fuzz N [--seed S] [--jobs J] [--show-errors] | import-cycles";

/// The parsed `fuzz` arguments.
struct Args {
    n: u64,
    seed: u64,
    jobs: usize,
    show_errors: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut it = args.iter();
    match it.next().map(String::as_str) {
        Some("fuzz") => {}
        Some(t) => return Err(format!("unknown task '{t}'; {USAGE}")),
        None => return Err(USAGE.to_string()),
    }
    let mut a = Args {
        n: 0,
        seed: 1,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        show_errors: false,
    };
    let mut n = None;
    while let Some(x) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .ok_or_else(|| format!("{name} needs a value; {USAGE}"))
                .and_then(|v| {
                    v.parse::<u64>()
                        .map_err(|_| format!("{name} '{v}' is not a non-negative integer"))
                })
        };
        match x.as_str() {
            "--seed" => a.seed = value("--seed")?,
            "--jobs" => a.jobs = value("--jobs")?.clamp(1, 256) as usize,
            "--show-errors" => a.show_errors = true,
            v if n.is_none() => {
                n = Some(
                    v.parse::<u64>()
                        .map_err(|_| format!("N '{v}' is not a non-negative integer; {USAGE}"))?,
                )
            }
            v => return Err(format!("unexpected argument '{v}'; {USAGE}")),
        }
    }
    a.n = n.ok_or_else(|| USAGE.to_string())?;
    Ok(a)
}

/// `import-cycles`: lists import cycles between the files of each crate
/// and crate dependencies that point up the layers; exit 1 if any.
fn import_cycles_task() -> ExitCode {
    let root = import_cycles::workspace_root();
    let result = import_cycles::workspace_cycles(&root).and_then(|cycles| {
        let deps = import_cycles::crate_deps(&root)?;
        Ok((cycles, import_cycles::layer_violations(&deps)))
    });
    match result {
        Ok((cycles, layers)) => {
            for l in cycles.iter().chain(&layers) {
                println!("{l}");
            }
            println!(
                "import cycles: {}; dependencies up the layers: {}",
                cycles.len(),
                layers.len()
            );
            if cycles.is_empty() && layers.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("import-cycles") {
        return import_cycles_task();
    }
    let a = match parse(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            return ExitCode::from(2);
        }
    };
    pipeline::quiet_panics();
    let next = AtomicU64::new(0);
    let counts = Mutex::new(Counts::default());
    // (seed, case, outcome) of every failure, and of every error if asked.
    let shown = Mutex::new(Vec::new());
    // Cases are handed out one at a time from a shared counter: a few
    // threads and a counter are all this needs, so no thread-pool crate.
    std::thread::scope(|s| {
        for _ in 0..a.jobs {
            s.spawn(|| {
                let mut mine = Counts::default();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= a.n {
                        break;
                    }
                    let seed = a.seed.wrapping_add(i);
                    let case = Case::new(seed);
                    let o = run_case(&case, &Limits::LONG);
                    mine.add(&o);
                    let show = o.is_failure() || (a.show_errors && !matches!(o, Outcome::Result));
                    if show {
                        if let Ok(mut v) = shown.lock() {
                            v.push((seed, case, o));
                        }
                    }
                }
                if let Ok(mut c) = counts.lock() {
                    c.merge(&mine);
                }
            });
        }
    });
    let counts = counts.into_inner().unwrap_or_default();
    let mut shown = shown.into_inner().unwrap_or_default();
    shown.sort_by_key(|(seed, _, _)| *seed);
    for (seed, case, o) in &shown {
        if o.is_failure() {
            println!("==== seed {seed}: {o}\n{}\n", case.reproducer());
        } else {
            println!("seed {seed}: {o}");
        }
    }
    println!(
        "fuzz: {} cases, seeds {}..{}\n{counts}",
        a.n,
        a.seed,
        a.seed.wrapping_add(a.n)
    );
    if counts.failures() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
