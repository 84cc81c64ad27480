//! Proposal 1's reproductions (the 2013 scheduler integration of NUMA
//! balancing; Mel Gorman, "[PATCH 0/8] Basic scheduler support for automatic
//! NUMA balancing", LKML, June 2013):
//! `sched-numa-integration`, the posting's SPECjbb comparison of 3.9 with
//! and without the series on a 4-socket machine, and `mainline-ablation`,
//! each of the series' switches alone turned off from mainline.
//!
//! The series' parts are the lab switches `numalab.numa_preferred_node`,
//! `numalab.numa_migrate_on_select`, `numalab.numa_fault_classify` and
//! `numalab.numa_scan_adapt` (see kernel/numa/series2013.rs); all four off
//! is the 3.9 baseline.
//!
//! Left out: SPECjbb's own score rule (the mean bops from the expected peak
//! warehouse count to twice it, and the posting's mmtests summary of it):
//! the modeled "score" is the mean bops over the sweep's points, "peak" the
//! best of them. The sweep is 5 points, not the posting's 48.

use crate::reproduce_decl::{Config, Metric, Published, Reproduction, ONE_RUN_COUNTER};
use crate::verdict::Tolerance;

/// A published (`Some`) or model-only (`None`) figure, with its
/// tolerance and, where the model misses it, the mechanism.
fn fig(config: &'static str, metric: Metric, value: Option<f64>) -> Published {
    let Some(v) = value else {
        return Published::model_only(config, metric);
    };
    let inner = match &metric {
        Metric::OfWorkload(_, m) => *m,
        m => m,
    };
    let (tol, why) = match inner {
        Metric::ScoreChangePct(_) => (SCORE_NOISE, COMPUTE_BOUND),
        Metric::RatioVs(_, Metric::PeakScore) => (ONE_RUN_COUNTER, COMPUTE_BOUND),
        Metric::RatioVs(..) => (ONE_RUN_COUNTER, SCANS_MORE),
        _ => (ONE_RUN_COUNTER, RUN_LENGTH),
    };
    Published::figure(config, metric, v, tol).known_miss(why)
}

/// A score change of one run each way.
const SCORE_NOISE: Tolerance = Tolerance::Abs(
    2.0,
    "one run of each kernel, no spread published: a change is known to a couple of points",
);

/// Why the score barely moves.
const COMPUTE_BOUND: &str = "the SPECjbb-like preset spends about 20 us computing per transaction against about 2 us of memory latency, so perfect locality is worth under 5 %; the preset's memory intensity is a modelling choice not calibrated against SPECjbb (docs/reproductions.md#sched-numa-integration)";

/// Why the series scans more where the posting's scanned less.
const SCANS_MORE: &str = "'on' is today's mainline, not the 2013 v1 series: mainline speeds scanning up for remote shared faults (the JVM heap), where 3.9's +10 jiffies per unmigrated fault slows it down, so the model's series scans about twice as much (docs/reproductions.md#sched-numa-integration)";

/// Why absolute system time and counters are far below the posting's.
const RUN_LENGTH: &str = "the model runs each sweep point for seconds (the preset's `seconds` parameter), the posting's sweep ran for hours: absolute system time and counters scale with run length, compare the ratios (docs/reproductions.md#sched-numa-integration)";

/// All four switches off: the 3.9 kernel the series was measured against.
const BASELINE_39: &[&str] = &[
    "numalab.numa_preferred_node=0",
    "numalab.numa_migrate_on_select=0",
    "numalab.numa_fault_classify=0",
    "numalab.numa_scan_adapt=0",
];

/// The single-JVM warehouse sweep [choice: 5 points of the posting's 1-48
/// on 48 CPUs, for wall time] and the one-JVM-per-node form (4 JVMs x 12
/// warehouses on 4s-48, its defaults).
const SWEEP: &[&str] = &[
    "specjbb:warehouses=6",
    "specjbb:warehouses=12",
    "specjbb:warehouses=24",
    "specjbb:warehouses=36",
    "specjbb:warehouses=48",
    "specjbb-multi",
];

/// The posting's SPECjbb comparison: 3.9 vanilla vs 3.9 + the series.
pub fn sched_numa_integration() -> Reproduction {
    Reproduction {
        name: "sched-numa-integration",
        description: "SPECjbb-like JVM on 4s-48 (4 sockets x 12 CPUs, THP): 3.9 baseline (all four 2013 switches off) vs the series (all on); one JVM over warehouses 6/12/24/36/48 and one JVM per node (4 x 12 warehouses)",
        source: "LKML: Mel Gorman, \"[PATCH 0/8] Basic scheduler support for automatic NUMA balancing\", June 2013, on 3.9.0: single JVM: SpecJBB bops 8397 -> 9059 (+7.88%), actual peak bops 517906 -> 562987 (+8.70%), system 145.18 s -> 133.87 s, NUMA PTE updates 112474717 -> 106764423, hint faults 692716 -> 543202, hint local faults 272512 -> 154250, pages migrated 14446025 -> 13710610; one JVM per node: SpecJBB bops 487204 -> 500705 (+2.77%), system 1395.40 s -> 1124.93 s, PTE updates 1167722150 -> 961427213, hint faults 9915871 -> 8411075, hint local faults 3660769 -> 3212050, pages migrated 134743458 -> 102408111",
        machine: "4s-48",
        workloads: SWEEP,
        cgroup: None,
        iterations: 1,
        configs: &[
            Config {
                label: "baseline-3.9",
                sets: BASELINE_39,
                needs_scan: true,
            },
            Config {
                label: "series",
                sets: &[],
                needs_scan: true,
            },
        ],
        latency_cgroup: None,
        published: || {
            let (b, s) = ("baseline-3.9", "series");
            let mut v = Vec::new();
            // (workload, score %, peak ratio, sys, pte, hint, local, migrated)
            type Row = (&'static str, f64, Option<f64>, [f64; 2], [[f64; 2]; 4]);
            let rows: [Row; 2] = [
                (
                    "specjbb",
                    7.88,
                    Some(562987.0 / 517906.0),
                    [145.18, 133.87],
                    [
                        [112474717.0, 106764423.0],
                        [692716.0, 543202.0],
                        [272512.0, 154250.0],
                        [14446025.0, 13710610.0],
                    ],
                ),
                (
                    "specjbb-multi",
                    2.77,
                    None,
                    [1395.40, 1124.93],
                    [
                        [1167722150.0, 961427213.0],
                        [9915871.0, 8411075.0],
                        [3660769.0, 3212050.0],
                        [134743458.0, 102408111.0],
                    ],
                ),
            ];
            const STATS: [&Metric; 4] = [
                &Metric::Vmstat("numa_pte_updates"),
                &Metric::Vmstat("numa_hint_faults"),
                &Metric::Vmstat("numa_hint_faults_local"),
                &Metric::Vmstat("numa_pages_migrated"),
            ];
            const RATIOS: [&Metric; 4] = [
                &Metric::RatioVs("baseline-3.9", &Metric::Vmstat("numa_pte_updates")),
                &Metric::RatioVs("baseline-3.9", &Metric::Vmstat("numa_hint_faults")),
                &Metric::RatioVs("baseline-3.9", &Metric::Vmstat("numa_hint_faults_local")),
                &Metric::RatioVs("baseline-3.9", &Metric::Vmstat("numa_pages_migrated")),
            ];
            for (w, score_pct, peak, sys, stats) in rows {
                v.push(fig(b, Metric::OfWorkload(w, &Metric::Score), None));
                v.push(fig(s, Metric::OfWorkload(w, &Metric::Score), None));
                v.push(fig(
                    s,
                    Metric::OfWorkload(w, &Metric::ScoreChangePct("baseline-3.9")),
                    Some(score_pct),
                ));
                if let Some(p) = peak {
                    v.push(fig(b, Metric::OfWorkload(w, &Metric::PeakScore), None));
                    v.push(fig(
                        s,
                        Metric::OfWorkload(w, &Metric::RatioVs("baseline-3.9", &Metric::PeakScore)),
                        Some(p),
                    ));
                }
                v.push(fig(b, Metric::OfWorkload(w, &Metric::Sys), Some(sys[0])));
                v.push(fig(s, Metric::OfWorkload(w, &Metric::Sys), Some(sys[1])));
                v.push(fig(
                    s,
                    Metric::OfWorkload(w, &Metric::RatioVs("baseline-3.9", &Metric::Sys)),
                    Some(sys[1] / sys[0]),
                ));
                for ((m, r), [pb, ps]) in STATS.into_iter().zip(RATIOS).zip(stats) {
                    v.push(fig(b, Metric::OfWorkload(w, m), Some(pb)));
                    v.push(fig(s, Metric::OfWorkload(w, m), Some(ps)));
                    v.push(fig(s, Metric::OfWorkload(w, r), Some(ps / pb)));
                }
            }
            v
        },
    }
}

/// Each 2013 switch alone turned off from mainline, and all four off, on
/// the autonumabench four and the SPECjbb-like JVM; model only.
pub fn mainline_ablation() -> Reproduction {
    Reproduction {
        name: "mainline-ablation",
        description: "spr-4n: mainline vs each 2013 switch alone off (no-preferred-node, no-migrate-on-select, no-fault-classify, no-scan-adapt) and all off (3.9), on numa01, numa01-threadlocal, numa02, numa02-smt and specjbb (one JVM, 48 warehouses, 32 s so that --scale 0.25 leaves the 8 s of the sched-numa-integration runs); model only; full scale is slow, run with --scale 0.25",
        source: "Mel Gorman, \"[PATCH 0/8] Basic scheduler support for automatic NUMA balancing\", LKML, June 2013 (what each part of the series buys); no published figures",
        machine: "spr-4n",
        workloads: &[
            "numa01",
            "numa01-threadlocal",
            "numa02",
            "numa02-smt",
            "specjbb:warehouses=48,seconds=32",
        ],
        cgroup: None,
        iterations: 1,
        configs: &[
            Config {
                label: "mainline",
                sets: &[],
                needs_scan: true,
            },
            Config {
                label: "no-preferred",
                sets: &["numalab.numa_preferred_node=0"],
                needs_scan: true,
            },
            Config {
                label: "no-resched",
                sets: &["numalab.numa_migrate_on_select=0"],
                needs_scan: true,
            },
            Config {
                label: "no-classify",
                sets: &["numalab.numa_fault_classify=0"],
                needs_scan: true,
            },
            Config {
                label: "no-scan-adapt",
                sets: &["numalab.numa_scan_adapt=0"],
                needs_scan: true,
            },
            Config {
                label: "all-off-3.9",
                sets: BASELINE_39,
                needs_scan: true,
            },
        ],
        latency_cgroup: None,
        published: || {
            const BENCH: [&str; 4] = ["numa01", "numa01-threadlocal", "numa02", "numa02-smt"];
            const ELAPSED: &Metric = &Metric::RatioVs("mainline", &Metric::Elapsed);
            const SYS: &Metric = &Metric::RatioVs("mainline", &Metric::Sys);
            let mut v = Vec::new();
            for c in [
                "no-preferred",
                "no-resched",
                "no-classify",
                "no-scan-adapt",
                "all-off-3.9",
            ] {
                for w in BENCH {
                    v.push(fig(c, Metric::OfWorkload(w, ELAPSED), None));
                }
                v.push(fig(
                    c,
                    Metric::OfWorkload("specjbb", &Metric::ScoreChangePct("mainline")),
                    None,
                ));
                v.push(fig(c, Metric::OfWorkload("specjbb", SYS), None));
            }
            v
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_knobs::knob;

    const SWITCHES: [numalab_knobs::BoolKnob; 4] = [
        knob::NUMA_PREFERRED_NODE,
        knob::NUMA_MIGRATE_ON_SELECT,
        knob::NUMA_FAULT_CLASSIFY,
        knob::NUMA_SCAN_ADAPT,
    ];

    #[test]
    fn the_baseline_turns_every_switch_off_and_the_series_none() {
        let r = sched_numa_integration();
        let base = crate::runner::knobs(r.configs[0].sets).expect("baseline knobs");
        let series = crate::runner::knobs(r.configs[1].sets).expect("series knobs");
        for k in SWITCHES {
            assert!(!base.get(k), "{} on in the baseline", k.def().name);
            assert!(series.get(k), "{} off in the series", k.def().name);
        }
    }

    #[test]
    fn each_ablation_config_turns_off_exactly_one_switch_except_the_ends() {
        let r = mainline_ablation();
        let off: Vec<usize> = r
            .configs
            .iter()
            .map(|c| {
                let k = crate::runner::knobs(c.sets).expect("knobs");
                SWITCHES.iter().filter(|&&s| !k.get(s)).count()
            })
            .collect();
        assert_eq!(off, vec![0, 1, 1, 1, 1, 4]);
        for w in r.workloads.iter().chain(sched_numa_integration().workloads) {
            numalab_workload::presets::load(w).unwrap_or_else(|e| panic!("{w}: {e}"));
        }
    }
}
