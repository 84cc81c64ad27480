//! Loading machines and workloads and running them: the glue between the
//! CLI and the model, shared by `run`, `bench` and `reproduce`; and what
//! a run can tell about NUMA balancing having had the time to act: before
//! it starts, when the workload's fixed duration is shorter than the scan
//! delay ([`too_short_to_scan`]), and after it ends, when balancing was on
//! and no PTE was ever updated ([`balancing_never_acted`]). Left out: an
//! estimate, before the run, of how long a workload without a fixed
//! duration will run (that is what the model computes).

use crate::progress::Progress;
use numalab_knobs::knob;
use numalab_record::lab;
use numalab_record::RunRecord;
use numalab_sim::kernel::TraceFilter;
use numalab_sim::{Knobs, RunOptions};
use numalab_topology::Machine;
use numalab_workload::model::Workload;

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
/// (parsed once by [`knobs`], shared by every run of a command); with
/// `show_progress`, its progress and warnings on stderr ([`Progress`]),
/// else nothing there.
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
    let p = if show_progress {
        Progress::new(workload, 1)
    } else {
        Progress::silent()
    };
    run_with(machine, workload, cgroup, knobs, seed, scale, trace, &p)
}

/// [`run_model_in`], reporting to `progress` (shared by a command's runs):
/// its modeled time as it goes, and, once the run is set up, a warning
/// when NUMA balancing cannot scan in it ([`too_short_to_scan`]).
#[allow(clippy::too_many_arguments)]
pub fn run_with(
    machine: &Machine,
    workload: &str,
    cgroup: Option<&str>,
    knobs: &Knobs,
    seed: u64,
    scale: f64,
    trace: Option<&TraceFilter>,
    progress: &Progress,
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
    let warning = too_short_to_scan(&w, knobs, scale);
    let (name, total_s) = (w.name.clone(), w.duration_ns.map(|d| d as f64 / 1e9));
    let sim = numalab_sim::Sim::new(machine.clone(), w, knobs.clone(), opts)
        .map_err(|e| e.to_string())?
        .with_trace_filter(trace.cloned().unwrap_or_default());
    // Only now: a refused setup is one error line, not a warning and an
    // error.
    if let Some(text) = warning {
        progress.warn_once(&no_scan_key(&name), &text);
    }
    let run = progress.start(&name, total_s);
    let (rec, tr, stats) = sim
        .run_with_stats(&mut |s| run.update(s))
        .map_err(|e| e.to_string())?;
    drop(run);
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

/// The scan delay in force: `numa_balancing.scan_delay_ms`
/// (`sysctl_numa_balancing_scan_delay`), which `init_numa_balancing`
/// adds to a new mm's `numa_next_scan`: no scan starts before it.
fn scan_delay_ms(knobs: &Knobs) -> u64 {
    knobs.get(knob::SCAN_DELAY_MS)
}

/// Why NUMA balancing will not scan in resolved workload `w` at `scale`,
/// known before the run: balancing is on and the workload has a fixed
/// duration shorter than the scan delay. Gives the smallest `--scale` at
/// which the run lasts the delay (a run shorter than that cannot scan; a
/// longer one may). None when it may scan, or when the workload has no
/// fixed duration (its length is known only once it has run).
pub fn too_short_to_scan(w: &Workload, knobs: &Knobs, scale: f64) -> Option<String> {
    let d = w.duration_ns? as f64;
    let delay = scan_delay_ms(knobs);
    let delay_ns = delay as f64 * 1e6;
    if knobs.get(knob::NUMA_BALANCING) == 0 || d >= delay_ns {
        return None;
    }
    // `duration` shrinks linearly with --scale.
    let full = d / scale;
    let need = if full >= delay_ns {
        let s = (delay_ns / full * 1000.0).ceil() / 1000.0;
        format!("--scale {s} or more lets it last the delay")
    } else {
        format!(
            "it lasts only {:.2} s even at --scale 1; a smaller numa_balancing.scan_delay_ms lets balancing start",
            full / 1e9
        )
    };
    Some(format!(
        "NUMA balancing will not scan in {}: it runs {:.2} s at --scale {scale} (its fixed duration), and no scan starts before scan_delay_ms ({delay} ms); {need}",
        w.name,
        d / 1e9
    ))
}

/// Why NUMA balancing never updated a PTE in run `rec`, read from the
/// record: None when it did, or when balancing was off. The run ended
/// before the scan delay; or scan passes ran and marked nothing; or no
/// pass ran at all.
pub fn balancing_never_acted(rec: &RunRecord) -> Option<String> {
    let setting = |k: &str| rec.settings.get(k).map(|v| v.trim().to_string());
    let mode = setting("kernel.numa_balancing").unwrap_or_else(|| "1".into());
    if mode == "0" || rec.vm("numa_pte_updates") > 0 {
        return None;
    }
    let delay: f64 = setting(knob::SCAN_DELAY_MS.def().name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000.0);
    let passes = rec.lab.get(lab::NUMA_SCANS).unwrap_or(0.0);
    let end = rec.elapsed_s;
    let why = if end * 1000.0 < delay {
        format!("the run ended at {end:.2} s, before scan_delay_ms ({delay:.0} ms) let the first scan start")
    } else if passes > 0.0 {
        format!(
            "{passes:.0} task_numa_work pass(es) ran between scan_delay_ms ({delay:.0} ms) and the end at {end:.2} s and marked nothing: every VMA they reached was skipped (under a bind or interleave policy without MPOL_F_NUMA_BALANCING, in its own scan delay, or not accessed by the scanning task)"
        )
    } else {
        format!(
            "no task_numa_work pass ran in {end:.2} s: no task was eligible (kernel.numa_balancing={mode} with no cgroup's cpu.numa_load_balance=1, or cpuset.mems of one node) or none ran scan_delay_ms ({delay:.0} ms) of CPU time"
        )
    };
    Some(why)
}

/// The subject of the warnings that NUMA balancing does not act in the
/// runs of workload `name`: a run warned about before it starts
/// ([`too_short_to_scan`]) is not warned about again after it.
pub fn no_scan_key(name: &str) -> String {
    format!("no scan in {name}")
}

/// What `numalab run` says after a run in which NUMA balancing was on and
/// no PTE was ever updated ([`no_scan_notice`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoScanNotice {
    /// Its subject ([`no_scan_key`]): said once per workload.
    pub key: String,
    /// The text.
    pub text: String,
    /// A warning when the run was too short for balancing to act (it
    /// ended before the scan delay, or ran at a `--scale` below 1); a note
    /// when it ran in full and balancing found nothing to do (memory
    /// bound to its node, a mode-4 cgroup left disabled).
    pub warning: bool,
}

/// The notice for run `rec` when NUMA balancing was on and no PTE was
/// ever updated ([`balancing_never_acted`]); None otherwise.
pub fn no_scan_notice(rec: &RunRecord) -> Option<NoScanNotice> {
    let why = balancing_never_acted(rec)?;
    let delay: f64 = rec
        .settings
        .get(knob::SCAN_DELAY_MS.def().name)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(1000.0);
    let (hint, warning) = if rec.elapsed_s * 1000.0 < delay {
        (
            "; run at a larger --scale, or with a smaller numa_balancing.scan_delay_ms".to_string(),
            true,
        )
    } else if rec.scale < 1.0 {
        (
            format!(
                "; at --scale {} the phases balancing could act in may be too short: try a larger --scale",
                rec.scale
            ),
            true,
        )
    } else {
        (String::new(), false)
    };
    let name = rec.workload_name().unwrap_or("");
    Some(NoScanNotice {
        key: no_scan_key(name),
        text: format!(
            "NUMA balancing was on but no PTE was ever updated in {name} (numa_pte_updates 0): {why}{hint}"
        ),
        warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(workload: &str, scale: f64, sets: &[&str]) -> RunRecord {
        let m = load_machine("tiny-2n").unwrap();
        let k = knobs(sets).unwrap();
        run_model(&m, workload, &k, 1, scale, None, false)
            .unwrap()
            .0
    }

    #[test]
    fn a_run_over_before_the_scan_delay_is_warned_about() {
        let rec = run("numa02", 0.01, &[]);
        let n = no_scan_notice(&rec).expect("a notice");
        assert!(n.warning);
        assert!(
            n.text.contains(&format!(
                "the run ended at {:.2} s, before scan_delay_ms (1000 ms)",
                rec.elapsed_s
            )),
            "{}",
            n.text
        );
        // Balancing off: nothing to say.
        assert_eq!(
            no_scan_notice(&run("numa02", 0.01, &["kernel.numa_balancing=0"])),
            None
        );
    }

    #[test]
    fn a_run_that_scanned_gets_no_notice() {
        let rec = run("numa02", 0.3, &[]);
        assert!(rec.vm("numa_pte_updates") > 0);
        assert_eq!(balancing_never_acted(&rec), None);
    }

    #[test]
    fn passes_that_marked_nothing_are_a_warning_scaled_and_a_note_in_full() {
        let scaled = no_scan_notice(&run("numa02-hard-bind", 0.3, &[])).expect("scaled");
        assert!(scaled.warning);
        assert!(
            scaled.text.contains("task_numa_work pass(es) ran")
                && scaled.text.contains("marked nothing"),
            "{}",
            scaled.text
        );
        let full = no_scan_notice(&run("numa02-hard-bind", 1.0, &[])).expect("full");
        assert!(!full.warning, "{}", full.text);
        assert_eq!(full.key, scaled.key);
    }

    #[test]
    fn a_mode_4_run_without_an_enabled_cgroup_ran_no_pass() {
        let rec = run("numa02", 0.5, &["kernel.numa_balancing=4"]);
        let why = balancing_never_acted(&rec).expect("never acted");
        assert!(why.starts_with("no task_numa_work pass ran"), "{why}");
    }

    #[test]
    fn a_fixed_duration_shorter_than_the_scan_delay_is_known_before_the_run() {
        let m = load_machine("tiny-2n").unwrap();
        let spec = numalab_workload::presets::load("oltp").unwrap();
        let w = numalab_workload::spec::resolve(&spec, &m, 1, 0.1).unwrap();
        let say = |sets: &[&str]| too_short_to_scan(&w, &knobs(sets).unwrap(), 0.1);
        let text = say(&[]).expect("3 s x 0.1 is under 1 s");
        assert!(
            text.contains("it runs 0.30 s at --scale 0.1")
                && text.ends_with("--scale 0.334 or more lets it last the delay"),
            "{text}"
        );
        assert_eq!(say(&["scan_delay_ms=200"]), None);
        assert_eq!(say(&["kernel.numa_balancing=0"]), None);
        let never = say(&["scan_delay_ms=5000"]).expect("longer than the whole run");
        assert!(
            never.contains("it lasts only 3.00 s even at --scale 1"),
            "{never}"
        );
        // No fixed duration: not known before the run.
        let spec = numalab_workload::presets::load("numa02").unwrap();
        let w = numalab_workload::spec::resolve(&spec, &m, 1, 0.01).unwrap();
        assert_eq!(
            too_short_to_scan(&w, &knobs::<&str>(&[]).unwrap(), 0.01),
            None
        );
    }
}
