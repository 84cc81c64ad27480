//! The runs of one or several reproductions as one set (`reproduce all`):
//! runs with identical inputs shared, the rest scheduled longest-first
//! over the `-j` workers.
//!
//! Two runs are the same run when their machine, workload, cgroup, knobs
//! (as parsed: the same values however they were spelled), seed and scale
//! are equal: the model is deterministic, so one run answers both (
//! mainline-ablation's "mainline" numa01-threadlocal is
//! numa-balancing-threadlocal's "balancing-on" one). Each distinct run is
//! made once; the records are handed back per reproduction in declaration
//! order, so the output does not depend on the schedule or on `-j`.
//!
//! Longest-first needs each run's cost before it runs: [`estimated_cost`]
//! guesses it from the resolved workload (its modeled length when fixed,
//! its memory and threads otherwise) and the machine's CPUs. A wrong
//! guess costs wall time at the end of the schedule, never output.
//!
//! With `NUMALAB_REPRODUCE_TIMES=FILE` in the environment, each run's
//! worker, wall start and end, CPU seconds and estimated cost go to FILE
//! ([`RunTimings`]): a measurement aid that changes no other output.
//! Left out: learning costs from earlier runs, and splitting one run
//! over several workers.

use numalab_sim::Knobs;
use numalab_topology::Machine;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// What makes a model run: equal specs give byte-identical records.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec<'a> {
    /// Machine preset (its name: one preset, one machine).
    pub machine: &'a str,
    /// Workload preset with its parameters.
    pub workload: &'a str,
    /// Cgroup the workload's root processes run in.
    pub cgroup: Option<&'a str>,
    /// Knobs in force, as parsed.
    pub knobs: &'a Knobs,
    /// Seed.
    pub seed: u64,
}

/// Distinct runs of `specs` and, for each spec, the index of its
/// distinct run; distinct runs are in order of first appearance.
pub fn distinct<'s, 'a>(specs: &'s [RunSpec<'a>]) -> (Vec<&'s RunSpec<'a>>, Vec<usize>) {
    let mut unique: Vec<&RunSpec> = Vec::new();
    let slots = specs
        .iter()
        .map(|s| match unique.iter().position(|u| *u == s) {
            Some(i) => i,
            None => {
                unique.push(s);
                unique.len() - 1
            }
        })
        .collect();
    (unique, slots)
}

/// A guess of a run's CPU cost, in arbitrary units, for ordering runs
/// only: the number of CPUs times the modeled seconds when the workload
/// has a fixed length; otherwise the number of threads times the memory
/// they touch (pass-based benchmarks whose length the model computes).
/// Errors (an unknown workload) give 0: the run then fails where it
/// always did, with its own message.
pub fn estimated_cost(machine: &Machine, workload: &str, seed: u64, scale: f64) -> f64 {
    let Ok(spec) = numalab_workload::presets::load(workload) else {
        return 0.0;
    };
    let Ok(w) = numalab_workload::spec::resolve(&spec, machine, seed, scale) else {
        return 0.0;
    };
    let cpus = machine.nr_cpus() as f64;
    match w.duration_ns {
        Some(ns) => cpus * ns as f64 / 1e9,
        None => {
            let threads: f64 = w.processes.iter().map(|p| p.threads.len() as f64).sum();
            let bytes: f64 = w
                .processes
                .iter()
                .map(|p| p.regions.iter().map(|r| r.bytes as f64).sum::<f64>())
                .sum();
            threads * bytes / 1e9
        }
    }
}

/// Runs `run(i)` for every `i < costs.len()` on the current rayon pool's
/// threads, each thread taking the costliest run not yet started; the
/// results come back by index. After a run fails, no new run starts.
pub fn longest_first<T: Send, E: Send>(
    costs: &[f64],
    run: impl Fn(usize) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]).then(a.cmp(&b)));
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Vec<Mutex<Option<Result<T, E>>>> =
        (0..costs.len()).map(|_| Mutex::new(None)).collect();
    rayon::scope(|s| {
        for _ in 0..rayon::current_num_threads().min(costs.len()) {
            s.spawn(|_| {
                while !failed.load(Ordering::Relaxed) {
                    let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let r = run(i);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    let done: Vec<Option<Result<T, E>>> = results
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    // The first failure in declaration order, whatever finished first.
    let mut out = Vec::with_capacity(done.len());
    let mut skipped = false;
    for r in done {
        match r {
            Some(Ok(t)) => out.push(t),
            Some(Err(e)) => return Err(e),
            None => skipped = true,
        }
    }
    assert!(!skipped, "a run was skipped without a failure");
    Ok(out)
}

/// The environment variable naming [`RunTimings`]' file.
pub const TIMES_ENV: &str = "NUMALAB_REPRODUCE_TIMES";

/// Per-run timings for `NUMALAB_REPRODUCE_TIMES` (nothing kept when it is
/// unset): one line per run, in the order runs finished.
pub struct RunTimings {
    /// The file to write, when asked for.
    path: Option<String>,
    /// When the runs began.
    origin: std::time::Instant,
    /// Lines so far.
    lines: Mutex<Vec<String>>,
}

/// A run in flight: its wall start and its thread's CPU time then.
pub struct Started {
    wall_s: f64,
    cpu_ns: u64,
}

impl RunTimings {
    /// Timings to `$NUMALAB_REPRODUCE_TIMES` when set (an empty value is an
    /// error), else none.
    pub fn from_env() -> Result<RunTimings, String> {
        let path = match std::env::var(TIMES_ENV) {
            Ok(p) if p.is_empty() => return Err(format!("{TIMES_ENV} is set but empty")),
            Ok(p) => Some(p),
            Err(std::env::VarError::NotPresent) => None,
            Err(e) => return Err(format!("{TIMES_ENV}: {e}")),
        };
        Ok(RunTimings {
            path,
            origin: std::time::Instant::now(),
            lines: Mutex::new(Vec::new()),
        })
    }

    /// A run starts on the calling thread.
    pub fn start(&self) -> Started {
        Started {
            wall_s: self.origin.elapsed().as_secs_f64(),
            cpu_ns: numalab_real::sys::thread_cpu_ns(),
        }
    }

    /// Run `s`, begun at `t` on the calling thread, is over.
    pub fn stop(&self, t: Started, s: &RunSpec, cost: f64) {
        if self.path.is_none() {
            return;
        }
        let cpu_s = (numalab_real::sys::thread_cpu_ns() - t.cpu_ns) as f64 / 1e9;
        let line = format!(
            "worker {} start {:.2} end {:.2} cpu {:.2} est {:.0} {} {} {} seed {} knobs {:016x}",
            rayon::current_thread_index().unwrap_or(0),
            t.wall_s,
            self.origin.elapsed().as_secs_f64(),
            cpu_s,
            cost,
            s.machine,
            s.workload,
            s.cgroup.unwrap_or("-"),
            s.seed,
            {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                format!("{:?}", s.knobs).hash(&mut h);
                h.finish()
            }
        );
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }

    /// Writes the lines to the file, when asked for.
    pub fn write(&self) -> Result<(), String> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        std::fs::write(path, lines.join("\n") + "\n")
            .map_err(|e| format!("{TIMES_ENV} {path}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_inputs_share_a_run_and_spelling_does_not_matter() {
        let on = Knobs::from_sets(&["kernel.numa_balancing=1"]).unwrap();
        let default = Knobs::from_sets::<&str>(&[]).unwrap();
        let off = Knobs::from_sets(&["kernel.numa_balancing=0"]).unwrap();
        let spec = |knobs, seed, cgroup| RunSpec {
            machine: "spr-4n",
            workload: "numa01-threadlocal",
            cgroup,
            knobs,
            seed,
        };
        let specs = [
            spec(&off, 1, None),
            spec(&on, 1, None),
            spec(&default, 1, None),
            spec(&default, 2, None),
            spec(&default, 1, Some("/mytest")),
            spec(&off, 1, None),
        ];
        let (unique, slots) = distinct(&specs);
        assert_eq!(slots, vec![0, 1, 1, 2, 3, 0]);
        assert_eq!(unique.len(), 4);
        assert_eq!(unique[1], &specs[1]);
    }

    #[test]
    fn results_come_back_by_index_on_any_number_of_threads() {
        let costs = [1.0, 5.0, 3.0, 5.0, 0.0];
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let out = pool.install(|| longest_first(&costs, |i| Ok::<_, String>(i * 10)));
            assert_eq!(out, Ok(vec![0, 10, 20, 30, 40]));
        }
    }

    #[test]
    fn one_worker_takes_the_costliest_first() {
        let costs = [1.0, 5.0, 3.0, 5.0, 0.0];
        let started = Mutex::new(Vec::new());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        pool.install(|| {
            longest_first(&costs, |i| {
                started.lock().unwrap().push(i);
                Ok::<_, String>(())
            })
        })
        .unwrap();
        assert_eq!(started.into_inner().unwrap(), vec![1, 3, 2, 0, 4]);
    }

    #[test]
    fn a_failure_is_the_first_in_declaration_order_and_stops_new_runs() {
        let costs = [1.0, 2.0, 3.0, 4.0];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let ran = AtomicUsize::new(0);
        let out = pool.install(|| {
            longest_first(&costs, |i| {
                ran.fetch_add(1, Ordering::Relaxed);
                if i == 2 {
                    Err(format!("run {i} failed"))
                } else {
                    Ok(i)
                }
            })
        });
        assert_eq!(out, Err("run 2 failed".to_string()));
        // 3 then 2 ran; 1 and 0 never started.
        assert_eq!(ran.load(Ordering::Relaxed), 2);
    }
}
