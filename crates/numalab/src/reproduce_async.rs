//! Proposal 2's reproductions (asynchronous NUMA scanning, Huang Ying 2020,
//! RFC "autonuma: Support to scan page table asynchronously", LKML,
//! 2020-04-14): the posting's pmbench experiment, and
//! the reviewers' case (every CPU busy) it did not measure. Each compares
//! synchronous scanning (mainline), the posting's asynchronous scanning,
//! and the posting's suggested remedy (`numalab.numa_scan_async_backcharge`:
//! time charged back to the task's cgroup, kworker kept on its cpuset).
//!
//! Published numbers are only printed beside the model's (see
//! [`crate::reproduce`]); figures marked unpublished are the model's alone.
//! After the tables, each configuration's access-latency histogram.

use crate::reproduce_decl::{Config, Metric, Published, Reproduction};
use crate::verdict::Tolerance;
use numalab_record::lab;

/// A published (`Some`) or model-only (`None`) figure.
fn fig(config: &'static str, metric: Metric, value: Option<f64>) -> Published {
    match value {
        // The only published values: "> 20000" accesses over 1 ms with
        // synchronous scanning, and "almost all disappear" with async.
        Some(v) if v > 0.0 => Published::figure(
            config,
            metric,
            v,
            Tolerance::AtLeast("published as \"more than 20000\" in an hour"),
        )
        .known_miss(SCAN_STALL_LENGTH),
        Some(v) => Published::figure(
            config,
            metric,
            v,
            Tolerance::Abs(
                1000.0,
                "published as \"almost all disappear\": under 5 % of the synchronous 20000",
            ),
        ),
        None => Published::model_only(config, metric),
    }
}

/// Why the model's synchronous scan stalls stay under 1 ms.
const SCAN_STALL_LENGTH: &str = "a 256 MiB scan window is 65,536 PTEs at the model's PTE_UPDATE_NS (10 ns, physics/costs.rs): about 0.66 ms, so every scan stall lands just under the 1 ms threshold; the posting's kernel took longer per window, by a cost not identified (docs/reproductions.md#async-numa-scan)";

/// The three configurations, sync first.
const CONFIGS: &[Config] = &[
    Config {
        label: "sync",
        sets: &["kernel.numa_balancing_scan_async=0"],
        needs_scan: true,
    },
    Config {
        label: "async",
        sets: &["kernel.numa_balancing_scan_async=1"],
        needs_scan: true,
    },
    Config {
        label: "async-backcharge",
        sets: &[
            "kernel.numa_balancing_scan_async=1",
            "numalab.numa_scan_async_backcharge=1",
        ],
        needs_scan: true,
    },
];

/// The posting's experiment: 64 pmbench threads on clx-2s-104, 3600 s.
pub fn async_numa_scan() -> Reproduction {
    Reproduction {
        name: "async-numa-scan",
        description: "pmbench, 64 threads, 16 GiB uniform, 3600 s on 2 x 52 CPUs (40 idle): task_numa_work as task work (sync) vs on a kworker (async) vs async charged back to the task's cgroup on its cpuset",
        source: "LKML: Huang Ying, RFC \"autonuma: Support to scan page table asynchronously\", 2020-04-14: pmbench 64 threads, 2-socket 104-CPU 256 GB, 3600 s: more than 20000 accesses slower than 1 ms with synchronous scanning, almost all caused by scanning; almost all disappear with asynchronous scanning",
        machine: "clx-2s-104",
        workloads: &["pmbench"],
        cgroup: None,
        iterations: 1,
        configs: CONFIGS,
        latency_cgroup: Some("/"),
        published: || {
            let out = lab::ACCESS_LATENCY_OUTLIERS;
            vec![
                fig("sync", Metric::Lab(out), Some(20000.0)),
                fig("async", Metric::Lab(out), Some(0.0)),
                fig("async-backcharge", Metric::Lab(out), None),
                fig("sync", Metric::Lab(lab::ACCESSES_PER_S), None),
                fig("async", Metric::RatioVs("sync", &Metric::Lab(lab::ACCESSES_PER_S)), None),
                fig("sync", Metric::Lab(lab::NUMA_SCANS), None),
                fig("sync", Metric::Lab(lab::NUMA_SCAN_S), None),
                fig("async", Metric::Lab(lab::SCAN_ASYNC_WORKER_S), None),
                fig("async", Metric::Lab(lab::SCAN_ASYNC_HIDDEN_S), None),
                fig("async", Metric::Lab(lab::SCAN_ASYNC_DELAY_MAX_MS), None),
                fig("async", Metric::Lab(lab::SCAN_ASYNC_OUTSIDE_CPUSET), None),
            ]
        },
    }
}

/// The reviewers' case: pmbench in a cpuset beside a compute-bound batch
/// on every other CPU.
pub fn async_numa_scan_busy() -> Reproduction {
    Reproduction {
        name: "async-numa-scan-busy",
        description: "pmbench-busy on clx-2s-104: 64 pmbench threads in /pmbench (cpuset CPUs 0-63) beside 40 compute threads in /batch (CPUs 64-103), no idle CPU, 3600 s: sync vs async vs async charged back (not published; the model's answer to the reviewers' objections)",
        source: "the posting's own caveats (Huang Ying, RFC \"autonuma: Support to scan page table asynchronously\", LKML, 2020-04-14: \"on system without enough idle CPU time, the CPU time isn't scheduled fairly because the page table scanning is charged to the workqueue thread\"; \"it may run on a CPU that is not in the cpuset of the target process\"); the RFC was never merged upstream; no published figures",
        machine: "clx-2s-104",
        workloads: &["pmbench-busy"],
        cgroup: None,
        iterations: 1,
        configs: CONFIGS,
        latency_cgroup: Some("/pmbench"),
        published: || {
            let batch_user = &Metric::CgroupUser("/batch");
            let mut v = Vec::new();
            for c in ["sync", "async", "async-backcharge"] {
                v.push(fig(c, Metric::Lab(lab::ACCESS_LATENCY_OUTLIERS), None));
                v.push(fig(c, Metric::CgroupUser("/batch"), None));
                v.push(fig(c, Metric::CgroupSys("/pmbench"), None));
                v.push(fig(c, Metric::Lab(lab::NUMA_SCAN_S), None));
            }
            for c in ["async", "async-backcharge"] {
                v.push(fig(c, Metric::RatioVs("sync", batch_user), None));
                v.push(fig(c, Metric::Lab(lab::SCAN_ASYNC_WORKER_S), None));
                v.push(fig(c, Metric::Lab(lab::SCAN_ASYNC_HIDDEN_S), None));
                v.push(fig(c, Metric::Lab(lab::SCAN_ASYNC_OUTSIDE_CPUSET), None));
                v.push(fig(c, Metric::LabPct(lab::SCAN_ASYNC_OUTSIDE_CPUSET_SHARE), None));
                v.push(fig(c, Metric::Lab(lab::SCAN_ASYNC_DELAY_MAX_MS), None));
            }
            v
        },
    }
}
