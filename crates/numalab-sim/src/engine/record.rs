//! Building the Run record at the end of a run: times, counters, per-cgroup
//! memory.stat (hierarchical), per-process, per-task and per-node figures,
//! the balancer's counts and the sampled time series.

use super::Sim;
use crate::kernel::stats::{Vm, MEMCG_ITEMS, NR_VM_ITEMS, VM_NAMES};
use crate::kernel::{NodeId, TaskId};
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
        let user: f64 = k.tasks.iter().map(|t| t.user_ns).sum();
        let sys: f64 = k.tasks.iter().map(|t| t.sys_ns).sum();
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
        let tasks = k
            .tasks
            .iter()
            .map(|t| TaskFigures {
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
                bytes_by_node: t.bytes_by_node.iter().map(|b| b.round() as u64).collect(),
                numa: self.task_numa_figures(t),
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
        let score = match self.w.score {
            WScore::Elapsed => None,
            WScore::Throughput => Some(Score {
                name: "throughput".into(),
                unit: "requests/s".into(),
                value: if elapsed_ns > 0.0 {
                    (self.requests as f64 / (elapsed_ns / 1e9) * 1e3).round() / 1e3
                } else {
                    0.0
                },
                higher_is_better: true,
            }),
        };
        let mut columns = vec!["t_s".to_string()];
        for item in [
            Vm::NumaPteUpdates,
            Vm::NumaHintFaults,
            Vm::NumaHintFaultsLocal,
            Vm::NumaPagesMigrated,
        ] {
            columns.push(VM_NAMES[item as usize].to_string());
        }
        columns.push("local_bytes_share".into());
        columns.push("running_tasks".into());
        for n in 0..nn {
            columns.push(format!("node{n}_used_gib"));
        }
        // The columns a real run has too (see `Sim::sample`).
        for p in &self.w.processes {
            for r in &p.regions {
                for n in 0..nn {
                    columns.push(format!("region:{}/{}:node{n}_bytes", p.name, r.name));
                }
            }
        }
        for p in &self.w.processes {
            for t in &p.threads {
                columns.push(format!("cpu:{}/{}", p.name, t.name));
            }
        }
        let iv = k.knobs.uint("numalab.sample_interval_ms");
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
