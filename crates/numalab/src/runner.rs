//! Loading machines and workloads and running them: the glue between the
//! CLI and the model, shared by `run`, `bench` and `reproduce`.

use crate::progress::Progress;
use numalab_record::RunRecord;
use numalab_sim::kernel::TraceFilter;
use numalab_sim::{Knobs, RunOptions};
use numalab_topology::Machine;

/// Loads a machine preset or spec file.
pub fn load_machine(name: &str) -> Result<Machine, String> {
    numalab_topology::presets::load(name).map_err(|e| e.to_string())
}

/// Parses `--set` values into knobs and checks the rules over several
/// knobs: once per command, before any run starts.
pub fn knobs<S: AsRef<str>>(sets: &[S]) -> Result<Knobs, String> {
    Knobs::from_sets(sets)
}

/// One model run of `workload` (preset or file) on `machine` with `knobs`
/// (parsed once by [`knobs`], shared by every run of a command).
pub fn run_model(
    machine: &Machine,
    workload: &str,
    knobs: &Knobs,
    seed: u64,
    scale: f64,
    trace: Option<&TraceFilter>,
    show_progress: bool,
) -> Result<(RunRecord, Vec<numalab_sim::kernel::TraceEvent>), String> {
    run_model_in(
        machine,
        workload,
        None,
        knobs,
        seed,
        scale,
        trace,
        show_progress,
    )
    .map(|f| (f.rec, f.trace))
}

/// [`run_model`], with the workload's processes of the root cgroup moved
/// into cgroup `cgroup` (created empty) when given, as a benchmark run
/// inside a cgroup is (`numalab reproduce per-cgroup-numa-balancing`),
/// also returning what the run cost the engine ([`Finished::stats`]:
/// `numalab bench` reports the cost per engine step).
#[allow(clippy::too_many_arguments)]
pub fn run_model_in(
    machine: &Machine,
    workload: &str,
    cgroup: Option<&str>,
    knobs: &Knobs,
    seed: u64,
    scale: f64,
    trace: Option<&TraceFilter>,
    show_progress: bool,
) -> Result<Finished, String> {
    if !(scale > 0.0 && scale <= 1.0) {
        return Err(format!("--scale {scale}: must be in (0, 1]"));
    }
    let spec = numalab_workload::presets::load(workload).map_err(|e| e.to_string())?;
    let mut w =
        numalab_workload::spec::resolve(&spec, machine, seed, scale).map_err(|e| e.to_string())?;
    if let Some(cg) = cgroup {
        if w.cgroups.iter().any(|c| c.path == cg) {
            return Err(format!("workload {workload} already has a cgroup {cg}"));
        }
        w.cgroups.push(numalab_workload::Cgroup {
            path: cg.to_string(),
            cpuset_cpus: None,
            cpuset_mems: None,
            files: Default::default(),
        });
        for p in w.processes.iter_mut().filter(|p| p.cgroup == "/") {
            p.cgroup = cg.to_string();
        }
    }
    let opts = RunOptions {
        seed,
        scale,
        trace: trace.is_some(),
        check_every: 0,
    };
    let mut p = Progress::new(&w.name, show_progress);
    let sim = numalab_sim::Sim::new(machine.clone(), w, knobs.clone(), opts)
        .map_err(|e| e.to_string())?
        .with_trace_filter(trace.cloned().unwrap_or_default());
    let (rec, tr, stats) = sim
        .run_with_stats(&mut |s| p.update(s))
        .map_err(|e| e.to_string())?;
    p.finish();
    Ok(Finished {
        rec,
        trace: tr,
        stats,
    })
}

/// A finished model run: its record, its trace events (when asked for)
/// and what it cost the engine.
pub struct Finished {
    /// The Run record.
    pub rec: RunRecord,
    /// Trace events recorded.
    pub trace: Vec<numalab_sim::kernel::TraceEvent>,
    /// Engine steps taken and the budget.
    pub stats: numalab_sim::engine::RunStats,
}
