//! `numalab bench`: wall time and peak memory of one full model run, the
//! speed and memory targets' measuring stick (tests never time things).

use crate::runner;
use std::time::Instant;

/// Peak resident set size of this process in bytes (VmHWM).
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Runs the model once and prints wall time, peak memory and the run's
/// headline figures.
pub fn bench(
    machine: &str,
    workload: &str,
    sets: &[String],
    seed: u64,
    scale: f64,
) -> Result<(), String> {
    let m = runner::load_machine(machine)?;
    let t0 = Instant::now();
    let (rec, _) = runner::run_model(
        &m,
        workload,
        &runner::knobs(sets)?,
        seed,
        scale,
        None,
        false,
    )?;
    let wall = t0.elapsed().as_secs_f64();
    let peak = peak_rss_bytes().map_or("unknown".to_string(), |b| {
        format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
    });
    crate::out::print(&format!(
        "bench: machine {} workload {} scale {} seed {}\n  modeled elapsed {:.2} s, user {:.1} s, sys {:.1} s\n  wall time       {wall:.2} s\n  peak memory     {peak}\n",
        m.name,
        rec.test_name(),
        scale,
        seed,
        rec.elapsed_s,
        rec.user_s,
        rec.sys_s
    ))
}
