//! Helpers shared by the scenario tests: load presets, resolve, run.

#![allow(dead_code)]

use numalab_record::RunRecord;
use numalab_sim::{Knobs, RunOptions, Sim, SimError};

/// Runs preset workload `w` on preset machine `m` with the given knobs.
pub fn run(m: &str, w: &str, scale: f64, seed: u64, sets: &[&str]) -> Result<RunRecord, SimError> {
    run_steps(m, w, scale, seed, sets).map(|(r, _)| r)
}

/// Like [`run`], also returning the engine steps the run took.
pub fn run_steps(
    m: &str,
    w: &str,
    scale: f64,
    seed: u64,
    sets: &[&str],
) -> Result<(RunRecord, u64), SimError> {
    let machine = numalab_topology::presets::load(m).expect("machine preset");
    let spec = numalab_workload::presets::load(w).expect("workload preset");
    let wl = numalab_workload::spec::resolve(&spec, &machine, seed, scale).expect("resolve");
    let k = Knobs::from_sets(sets).expect("knobs");
    let opts = RunOptions {
        seed,
        scale,
        trace: false,
        check_every: 50,
    };
    let (rec, _, stats) = Sim::new(machine, wl, k, opts)?.run_with_stats(&mut |_| {})?;
    Ok((rec, stats.steps))
}

/// Runs a workload given as TOML text.
pub fn run_toml(m: &str, toml: &str, sets: &[&str]) -> Result<RunRecord, SimError> {
    let machine = numalab_topology::presets::load(m).expect("machine preset");
    let spec = numalab_workload::spec::parse(toml, "test").expect("parse");
    let wl = numalab_workload::spec::resolve(&spec, &machine, 1, 1.0).expect("resolve");
    let k = Knobs::from_sets(sets).expect("knobs");
    let opts = RunOptions {
        check_every: 10,
        ..Default::default()
    };
    Sim::new(machine, wl, k, opts)?.run(&mut |_| {})
}

/// Share of a run's task bytes that were local to the node the task ended on.
pub fn local_share(r: &RunRecord) -> f64 {
    let (mut local, mut all) = (0u64, 0u64);
    for t in &r.tasks {
        all += t.bytes_by_node.iter().sum::<u64>();
        local += t.bytes_by_node[t.last_node];
    }
    local as f64 / all.max(1) as f64
}
