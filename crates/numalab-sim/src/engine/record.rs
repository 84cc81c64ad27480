//! Building the Run record at the end of a run: times, counters, per-cgroup
//! memory.stat (hierarchical), per-process, per-task and per-node figures,
//! the balancer's counts and the sampled time series.

use super::Sim;
use crate::kernel::stats::{MEMCG_ITEMS, NR_VM_ITEMS, VM_NAMES};
use crate::kernel::{NodeId, TaskId};
use numalab_record::counters::MODEL_VMSTAT_SERIES;
use numalab_record::{
    CgroupFigures, Column, NodeFigures, ProcessFigures, RunKind, RunRecord, Score, TaskFigures,
    TimeSeries, FORMAT_NAME, FORMAT_VERSION,
};
use numalab_workload::Score as WScore;
use std::collections::BTreeMap;

/// Rounds to nanosecond-ish precision so the JSON is stable and readable.
fn secs(ns: f64) -> f64 {
    (ns / 1e3).round() / 1e6
}

impl Sim {
    /// The Run record of a run that ended at `end` (ns).
    pub(crate) fn finish(mut self, end: u64) -> RunRecord {
        let k = &self.k;
        let elapsed_ns = end as f64;
        // Background kernel threads are not the workload's: left out.
        let user: f64 = k
            .tasks
            .iter()
            .filter(|t| !t.kthread)
            .map(|t| t.user_ns)
            .sum();
        let sys: f64 = k
            .tasks
            .iter()
            .filter(|t| !t.kthread)
            .map(|t| t.sys_ns)
            .sum();
        let mut vmstat = BTreeMap::new();
        for (name, v) in VM_NAMES.iter().zip(k.vmstat.0.iter()) {
            vmstat.insert(name.to_string(), *v);
        }
        // Hierarchical cgroup figures: each cgroup includes its descendants.
        let mut cgroups = BTreeMap::new();
        for (i, cg) in k.cgroups.all.iter_enumerated() {
            let mut f = CgroupFigures::default();
            let mut stat = [0u64; NR_VM_ITEMS];
            for (j, d) in k.cgroups.all.iter_enumerated() {
                if !k.cgroups.is_ancestor(i, j) {
                    continue;
                }
                f.user_s += d.user_ns;
                f.sys_s += d.sys_ns;
                f.nr_tasks += d.nr_tasks;
                for (s, v) in stat.iter_mut().zip(d.stat.0.iter()) {
                    *s += v;
                }
            }
            f.user_s = secs(f.user_s);
            f.sys_s = secs(f.sys_s);
            for item in MEMCG_ITEMS {
                f.memory_stat
                    .insert(VM_NAMES[item as usize].to_string(), stat[item as usize]);
            }
            // Proposal 2: the access latencies of the tasks below it.
            let mut lat = super::latency::TaskLatency::default();
            for (id, t) in k.tasks.iter_enumerated() {
                if !t.kthread && k.cgroups.is_ancestor(i, t.cgroup) {
                    lat.merge(&self.exec[id].lat);
                }
            }
            f.access_latency = lat.figures(
                k.knobs
                    .get(crate::kernel::sysctl::knob::ACCESS_LATENCY_THRESHOLD_US),
            );
            cgroups.insert(cg.path.clone(), f);
        }
        let nn = k.m.nr_nodes();
        let processes = self
            .procs
            .iter()
            .enumerate()
            .map(|(pi, p)| {
                let tasks: Vec<TaskId> = p.tasks.iter().flatten().copied().collect();
                let mm = k.mms.iter().find(|m| m.tgid == p.pid);
                ProcessFigures {
                    pid: p.pid,
                    name: self.w.processes[pi].name.clone(),
                    cgroup: self.w.processes[pi].cgroup.clone(),
                    elapsed_s: secs(p.exit_ns.unwrap_or(end) as f64),
                    user_s: secs(tasks.iter().map(|&t| k.tasks[t].user_ns).sum()),
                    sys_s: secs(tasks.iter().map(|&t| k.tasks[t].sys_ns).sum()),
                    pages_by_node: mm.map_or_else(|| vec![0; nn], |m| m.rss_by_node(nn)),
                }
            })
            .collect();
        let th_us = k
            .knobs
            .get(crate::kernel::sysctl::knob::ACCESS_LATENCY_THRESHOLD_US);
        let tasks = k
            .tasks
            .iter_enumerated()
            .filter(|(_, t)| !t.kthread)
            .map(|(id, t)| TaskFigures {
                pid: t.pid,
                tgid: t.tgid,
                name: t.name.clone(),
                cgroup: k.cgroups.all[t.cgroup].path.clone(),
                start_s: secs(t.start_ns as f64),
                exit_s: secs(t.exit_ns.unwrap_or(end) as f64),
                user_s: secs(t.user_ns),
                sys_s: secs(t.sys_ns),
                wait_s: secs(t.wait_ns as f64),
                last_cpu: t.cpu.index(),
                last_node: k.cpu_node(t.cpu).index(),
                nr_migrations: t.nr_migrations,
                bytes_by_node: self.exec[id]
                    .bytes_by_node
                    .iter()
                    .map(|b| b.round() as u64)
                    .collect(),
                numa: self.task_numa_figures(t),
                access_latency: self.exec[id].lat.figures(th_us),
            })
            .collect();
        let nodes = (0..nn)
            .map(|n| NodeFigures {
                node: n,
                mem_total_bytes: k.nodes[NodeId::new(n)].total_pages * 4096,
                mem_used_bytes: (k.nodes[NodeId::new(n)].total_pages
                    - k.nodes[NodeId::new(n)].free_pages)
                    * 4096,
                traffic_bytes: self.fluid.node_traffic[n].round() as u64,
            })
            .collect();
        let b = &k.balance.stats;
        let total_cpu_ns = elapsed_ns * k.m.nr_cpus() as f64;
        let mut lab = BTreeMap::new();
        lab.insert("lb_count".into(), b.lb_count as f64);
        lab.insert("lb_balanced".into(), b.lb_balanced as f64);
        lab.insert("lb_failed".into(), b.lb_failed as f64);
        lab.insert("lb_gained".into(), b.lb_gained as f64);
        lab.insert("lb_redo".into(), b.lb_redo as f64);
        lab.insert("alb_pushed".into(), b.alb_pushed as f64);
        lab.insert("newidle_pulled".into(), b.newidle_pulled as f64);
        // SD_SERIALIZE: the sched_balance_running flag, its cache line and
        // the invariant checker (kernel/sched/serialize.rs).
        let sz = &k.balance.serialize.stats;
        lab.insert("softirqs".into(), b.softirqs as f64);
        lab.insert("serialize_attempts".into(), sz.attempts as f64);
        lab.insert("serialize_contended".into(), sz.contended as f64);
        lab.insert("serialize_releases".into(), sz.releases as f64);
        lab.insert("serialize_bad_releases".into(), sz.bad_releases as f64);
        lab.insert("serialize_overlaps".into(), sz.overlaps as f64);
        lab.insert("serialize_line_transfers".into(), sz.transfers as f64);
        lab.insert(
            "serialize_line_transfers_remote".into(),
            sz.transfers_remote as f64,
        );
        lab.insert(
            "sched_balance_running_contention_ns".into(),
            sz.atomic_ns.round(),
        );
        lab.insert("sched_balance_running_queue_ns".into(), sz.queue_ns.round());
        lab.insert(
            "sched_balance_running_max_cmpxchg_ns".into(),
            sz.max_atomic_ns.round(),
        );
        lab.insert(
            "sched_balance_running_contention_share".into(),
            if total_cpu_ns > 0.0 {
                (sz.atomic_ns / total_cpu_ns * 1e9).round() / 1e9
            } else {
                0.0
            },
        );
        lab.insert("idle_kernel_s".into(), secs(k.idle_kernel_ns));
        lab.insert(
            "cpu_busy_share".into(),
            if total_cpu_ns > 0.0 {
                (k.rq.iter().map(|r| r.busy_ns as f64).sum::<f64>() / total_cpu_ns * 1e6).round()
                    / 1e6
            } else {
                0.0
            },
        );
        self.lab_async_scan(&mut lab, elapsed_ns);
        let score = match self.w.score {
            WScore::Elapsed => None,
            WScore::Throughput => Some(Score::throughput(self.requests, elapsed_ns / 1e9)),
        };
        let mut columns = vec![Column::Time.name()];
        for name in MODEL_VMSTAT_SERIES {
            columns.push(Column::Vmstat(name).name());
        }
        columns.push(Column::LocalBytesShare.name());
        columns.push(Column::RunningTasks.name());
        for n in 0..nn {
            columns.push(Column::NodeUsedGib(n).name());
        }
        // The columns a real run has too (see `Sim::sample`).
        for p in &self.w.processes {
            for r in &p.regions {
                for node in 0..nn {
                    columns.push(
                        Column::RegionBytes {
                            process: &p.name,
                            region: &r.name,
                            node,
                        }
                        .name(),
                    );
                }
            }
        }
        for p in &self.w.processes {
            for t in &p.threads {
                columns.push(
                    Column::Cpu {
                        process: &p.name,
                        thread: &t.name,
                    }
                    .name(),
                );
            }
        }
        let iv = k.knobs.get(crate::kernel::sysctl::knob::SAMPLE_INTERVAL_MS);
        let timeseries = (iv > 0).then(|| TimeSeries {
            interval_s: iv as f64 / 1000.0,
            columns,
            rows: std::mem::take(&mut self.samples)
                .into_iter()
                .map(|r| r.into_iter().map(|x| (x * 1e6).round() / 1e6).collect())
                .collect(),
        });
        RunRecord {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            kind: RunKind::Model,
            numalab_version: env!("CARGO_PKG_VERSION").into(),
            kernel: None,
            machine: serde_json::to_value(&k.m).unwrap_or_default(),
            workload: serde_json::to_value(&self.w).unwrap_or_default(),
            settings: k.knobs.settings(),
            seed: self.opts.seed,
            scale: self.opts.scale,
            elapsed_s: secs(elapsed_ns),
            user_s: secs(user),
            sys_s: secs(sys),
            score,
            vmstat,
            cgroups,
            processes,
            tasks,
            nodes,
            lab,
            timeseries,
        }
    }
}

/// Index in [`VM_NAMES`] of a counter name; a name the model does not
/// count fails the build where it is used in a constant.
const fn vm_index(name: &str) -> usize {
    let mut i = 0;
    while i < NR_VM_ITEMS {
        let (a, b) = (VM_NAMES[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("a counter of numalab_record::counters::MODEL_VMSTAT_SERIES is not in VM_NAMES")
}

/// The model's sampled vmstat counters
/// ([`numalab_record::counters::MODEL_VMSTAT_SERIES`]) as indices into the
/// counter array, in column order, resolved at compile time.
pub(crate) const SERIES_VM: [usize; MODEL_VMSTAT_SERIES.len()] = {
    let mut out = [0; MODEL_VMSTAT_SERIES.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = vm_index(MODEL_VMSTAT_SERIES[i]);
        i += 1;
    }
    out
};

impl Sim {
    /// Proposal 2's lab figures: scan work, the kworkers' share of it and
    /// where they ran (kernel/numa/async_scan.rs), and the access-latency
    /// outliers of the workload's tasks (engine/latency.rs). Only what
    /// happened is added: a run without scans or histograms adds nothing.
    fn lab_async_scan(&self, lab: &mut BTreeMap<String, f64>, elapsed_ns: f64) {
        let k = &self.k;
        let st = &k.numa_async.stats;
        if st.scans > 0 {
            lab.insert("numa_scans".into(), st.scans as f64);
            lab.insert("numa_scan_s".into(), secs(st.scan_ns));
        }
        if k.numa_scan_async() {
            lab.insert("scan_async_queued".into(), st.queued as f64);
            lab.insert("scan_async_run".into(), st.run as f64);
            lab.insert("scan_async_cancelled".into(), st.cancelled as f64);
            lab.insert("scan_async_outside_cpuset".into(), st.outside_cpuset as f64);
            lab.insert(
                "scan_async_outside_cpuset_share".into(),
                if st.run > 0 {
                    (st.outside_cpuset as f64 / st.run as f64 * 1e6).round() / 1e6
                } else {
                    0.0
                },
            );
            lab.insert("scan_async_worker_s".into(), secs(st.worker_ns));
            lab.insert("scan_async_hidden_s".into(), secs(st.hidden_ns));
            lab.insert(
                "scan_async_delay_max_ms".into(),
                (st.delay_max_ns as f64 / 1e3).round() / 1e3,
            );
            lab.insert(
                "scan_async_delay_mean_ms".into(),
                if st.run > 0 {
                    (st.delay_sum_ns / st.run as f64 / 1e3).round() / 1e3
                } else {
                    0.0
                },
            );
        }
        let mut total = 0.0;
        let mut over = 0.0;
        for (id, t) in k.tasks.iter_enumerated() {
            if !t.kthread {
                total += self.exec[id].lat.total();
                over += self.exec[id].lat.over_total();
            }
        }
        if total > 0.0 {
            lab.insert("accesses".into(), total.round());
            lab.insert("access_latency_outliers".into(), over.round());
            if elapsed_ns > 0.0 {
                lab.insert(
                    "accesses_per_s".into(),
                    (total / (elapsed_ns / 1e9)).round(),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::stats::Vm;
    use numalab_record::counters::{is_recorded_memory_stat, is_recorded_vmstat};

    #[test]
    fn every_model_counter_is_one_a_record_holds() {
        for name in VM_NAMES {
            assert!(is_recorded_vmstat(name), "{name}");
        }
        for item in MEMCG_ITEMS {
            assert!(is_recorded_memory_stat(VM_NAMES[item as usize]));
        }
    }

    #[test]
    fn the_sampled_counters_resolve_to_their_items() {
        assert_eq!(
            SERIES_VM,
            [
                Vm::NumaPteUpdates as usize,
                Vm::NumaHintFaults as usize,
                Vm::NumaHintFaultsLocal as usize,
                Vm::NumaPagesMigrated as usize,
            ]
        );
    }
}
