//! Building the Run record at the end of a run: times, counters, per-cgroup
//! memory.stat (hierarchical), per-process, per-task and per-node figures,
//! the balancer's counts and the sampled time series.

use super::Sim;
use crate::kernel::stats::{MEMCG_ITEMS, NR_VM_ITEMS, VM_NAMES};
use crate::kernel::sysctl::knob;
use crate::kernel::{NodeId, TaskId};
use numalab_knobs::ProfileCycles;
use numalab_record::lab::{self, Lab};
use numalab_record::{
    CgroupFigures, NodeFigures, ProcessFigures, RunKind, RunRecord, Score, TaskFigures, TimeSeries,
    FORMAT_NAME, FORMAT_VERSION,
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
                let mm = k.mem.mms.iter().find(|m| m.tgid == p.pid);
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
                mem_total_bytes: k.mem.nodes()[NodeId::new(n)].total_pages * 4096,
                mem_used_bytes: (k.mem.nodes()[NodeId::new(n)].total_pages
                    - k.mem.nodes()[NodeId::new(n)].free_pages)
                    * 4096,
                traffic_bytes: self.fluid.node_traffic[n].round() as u64,
            })
            .collect();
        let b = &k.sched.balance().stats;
        let total_cpu_ns = elapsed_ns * k.m.nr_cpus() as f64;
        let mut lab = Lab::new();
        lab.set(lab::LB_COUNT, b.lb_count as f64);
        lab.set(lab::LB_BALANCED, b.lb_balanced as f64);
        lab.set(lab::LB_FAILED, b.lb_failed as f64);
        lab.set(lab::LB_GAINED, b.lb_gained as f64);
        lab.set(lab::LB_REDO, b.lb_redo as f64);
        lab.set(lab::ALB_PUSHED, b.alb_pushed as f64);
        lab.set(lab::NEWIDLE_PULLED, b.newidle_pulled as f64);
        // SD_SERIALIZE: the sched_balance_running flag, its cache line and
        // the invariant checker (kernel/sched/serialize.rs).
        let sz = &k.sched.balance().serialize.stats;
        lab.set(lab::SOFTIRQS, b.softirqs as f64);
        lab.set(lab::SERIALIZE_ATTEMPTS, sz.attempts as f64);
        lab.set(lab::SERIALIZE_CONTENDED, sz.contended as f64);
        lab.set(lab::SERIALIZE_RELEASES, sz.releases as f64);
        lab.set(lab::SERIALIZE_BAD_RELEASES, sz.bad_releases as f64);
        lab.set(lab::SERIALIZE_OVERLAPS, sz.overlaps as f64);
        lab.set(lab::SERIALIZE_LINE_TRANSFERS, sz.transfers as f64);
        lab.set(
            lab::SERIALIZE_LINE_TRANSFERS_REMOTE,
            sz.transfers_remote as f64,
        );
        lab.set(
            lab::SCHED_BALANCE_RUNNING_CONTENTION_NS,
            sz.atomic_ns.round(),
        );
        lab.set(lab::SCHED_BALANCE_RUNNING_QUEUE_NS, sz.queue_ns.round());
        lab.set(
            lab::SCHED_BALANCE_RUNNING_MAX_CMPXCHG_NS,
            sz.max_atomic_ns.round(),
        );
        lab.set(lab::SCHED_BALANCE_RUNNING_BUSY_NS, sz.busy_ns.round());
        lab.set(lab::SCHED_BALANCE_RUNNING_IDLE_NS, sz.idle_ns.round());
        lab.set(lab::SCHED_BALANCE_RUNNING_NEWIDLE_NS, sz.newidle_ns.round());
        // What a profile's share is of: perf's cycles event counts a CPU
        // only while it is not halted, so task time plus kernel time on
        // CPUs with no task (numalab.profile_cycles).
        let profiled_ns = match k.knobs.get(knob::PROFILE_CYCLES) {
            ProfileCycles::Unhalted => {
                k.sched.rq.iter().map(|r| r.busy_ns as f64).sum::<f64>() + k.sched.idle_kernel_ns()
            }
            ProfileCycles::Elapsed => total_cpu_ns,
        };
        lab.set(
            lab::SCHED_BALANCE_RUNNING_CONTENTION_SHARE,
            if profiled_ns > 0.0 {
                (sz.atomic_ns / profiled_ns * 1e9).round() / 1e9
            } else {
                0.0
            },
        );
        lab.set(lab::IDLE_KERNEL_S, secs(k.sched.idle_kernel_ns()));
        lab.set(lab::IDLE_KERNEL_WAIT_S, secs(k.sched.idle_kernel_wait_ns()));
        lab.set(
            lab::CPU_BUSY_SHARE,
            if total_cpu_ns > 0.0 {
                (k.sched.rq.iter().map(|r| r.busy_ns as f64).sum::<f64>() / total_cpu_ns * 1e6)
                    .round()
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
        let columns = super::series::columns(&self);
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

impl Sim {
    /// Proposal 2's lab figures: scan work, the kworkers' share of it and
    /// where they ran (kernel/numa/async_scan.rs), and the access-latency
    /// outliers of the workload's tasks (engine/latency.rs). Only what
    /// happened is added: a run without scans or histograms adds nothing.
    fn lab_async_scan(&self, lab: &mut Lab, elapsed_ns: f64) {
        let k = &self.k;
        let st = &k.numa.async_scan.stats;
        if st.scans > 0 {
            lab.set(lab::NUMA_SCANS, st.scans as f64);
            lab.set(lab::NUMA_SCAN_S, secs(st.scan_ns));
        }
        if k.numa_scan_async() {
            lab.set(lab::SCAN_ASYNC_QUEUED, st.queued as f64);
            lab.set(lab::SCAN_ASYNC_RUN, st.run as f64);
            lab.set(lab::SCAN_ASYNC_CANCELLED, st.cancelled as f64);
            lab.set(lab::SCAN_ASYNC_OUTSIDE_CPUSET, st.outside_cpuset as f64);
            lab.set(
                lab::SCAN_ASYNC_OUTSIDE_CPUSET_SHARE,
                if st.run > 0 {
                    (st.outside_cpuset as f64 / st.run as f64 * 1e6).round() / 1e6
                } else {
                    0.0
                },
            );
            lab.set(lab::SCAN_ASYNC_WORKER_S, secs(st.worker_ns));
            lab.set(lab::SCAN_ASYNC_HIDDEN_S, secs(st.hidden_ns));
            lab.set(
                lab::SCAN_ASYNC_DELAY_MAX_MS,
                (st.delay_max_ns as f64 / 1e3).round() / 1e3,
            );
            lab.set(
                lab::SCAN_ASYNC_DELAY_MEAN_MS,
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
            lab.set(lab::ACCESSES, total.round());
            lab.set(lab::ACCESS_LATENCY_OUTLIERS, over.round());
            if elapsed_ns > 0.0 {
                lab.set(lab::ACCESSES_PER_S, (total / (elapsed_ns / 1e9)).round());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
