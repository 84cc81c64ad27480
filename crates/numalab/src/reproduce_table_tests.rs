//! Unit tests of reproduce.rs's `modeled_vs_published`: a reproduction of
//! two configurations over hand-made runs, one figure at a time, for each
//! verdict and what `--check` makes of it (the row's text, the tally and
//! the failure lines). Left out: running the model (tests/cli.rs drives
//! `numalab reproduce --check` end to end).

use super::*;
use crate::verdict::Tolerance;
use numalab_record::RunKind;

const TEN: Tolerance = Tolerance::Rel(0.1, "test");

const CONFIGS: [Config; 2] = [
    Config {
        label: "base",
        sets: &[],
        needs_scan: false,
    },
    Config {
        label: "new",
        sets: &[],
        needs_scan: false,
    },
];

/// The new configuration's elapsed time over the base's.
const RATIO: Metric = Metric::RatioVs("base", &Metric::Elapsed);

const WHY: &str = "a mechanism (docs/reproductions.md#x)";

/// A run of workload `w` that took `elapsed_s`, and nothing else.
fn run(w: &str, elapsed_s: f64) -> RunRecord {
    RunRecord {
        machine: serde_json::json!({}),
        workload: serde_json::json!({ "name": w }),
        elapsed_s,
        ..RunRecord::empty(RunKind::Model)
    }
}

/// Judges one figure of configuration `config` (published `published`,
/// declared a known miss or not) at `scale`, the base runs taking `base`
/// seconds and the new ones `new`.
fn judged(
    config: &'static str,
    metric: Metric,
    published: f64,
    declared: bool,
    runs: (f64, f64),
    scale: f64,
) -> Judged {
    judged_full_scale_only(config, metric, published, declared, runs, scale, None)
}

/// [`judged`], the figure declared `full_scale_only` with reason `why`.
fn judged_full_scale_only(
    config: &'static str,
    metric: Metric,
    published: f64,
    declared: bool,
    (base, new): (f64, f64),
    scale: f64,
    why: Option<&'static str>,
) -> Judged {
    let r = Reproduction {
        name: "t",
        description: "",
        source: "",
        machine: "tiny-2n",
        workloads: &["w"],
        cgroup: None,
        iterations: 1,
        configs: &CONFIGS,
        published: vec![Published {
            config,
            metric,
            value: Some(published),
            tolerance: Some(TEN),
            known_miss: declared.then_some(WHY),
            full_scale_only: why,
        }],
        latency_cgroup: None,
    };
    let sets = [
        RunSet::new("base", vec![run("w", base)]),
        RunSet::new("new", vec![run("w", new)]),
    ];
    modeled_vs_published(&r, &sets, scale)
}

/// The new/base ratio figure published as 0.5, at scale 1.
fn ratio(new: f64, declared: bool) -> Judged {
    judged("new", RATIO, 0.5, declared, (100.0, new), 1.0)
}

fn verdict(j: &Judged) -> &str {
    &j.rows[0].verdict
}

#[test]
fn within_tolerance_holds() {
    let j = ratio(52.0, false);
    assert_eq!(verdict(&j), "within tolerance");
    assert_eq!((j.tally.figures, j.tally.within), (1, 1));
    assert_eq!(j.tally.unexpected, 0);
    assert!(j.failures.is_empty() && !j.rows[0].unexpected);
}

#[test]
fn an_undeclared_miss_in_the_right_direction_fails_and_a_declared_one_does_not() {
    let j = ratio(80.0, false);
    assert_eq!(verdict(&j), "right direction, off by 1.60x (MISS)");
    assert_eq!((j.tally.right_direction, j.tally.unexpected), (1, 1));
    assert!(j.rows[0].unexpected);
    assert_eq!(
        j.failures,
        vec!["t: new elapsed (s) / base's: right direction, off by 1.60x, and it is not declared a known miss"]
    );
    let j = ratio(80.0, true);
    assert_eq!(
        verdict(&j),
        "right direction, off by 1.60x (known miss [1])"
    );
    assert!(j.table.contains(&format!("[1] {WHY}\n")), "{}", j.table);
    assert_eq!((j.tally.known, j.tally.unexpected), (1, 0));
    assert!(j.failures.is_empty() && !j.rows[0].unexpected);
}

#[test]
fn a_miss_in_the_wrong_direction_fails() {
    let j = ratio(150.0, false);
    assert_eq!(verdict(&j), "wrong direction (MISS)");
    assert_eq!((j.tally.wrong_direction, j.tally.unexpected), (1, 1));
    assert_eq!(j.failures.len(), 1);
}

#[test]
fn a_base_figure_off_its_tolerance_fails() {
    let j = judged("base", Metric::Elapsed, 200.0, false, (100.0, 50.0), 1.0);
    assert_eq!(verdict(&j), "off by 2.00x (MISS)");
    assert_eq!((j.tally.off, j.tally.unexpected), (1, 1));
    assert!(j.failures[0].starts_with("t: base elapsed (s): off by 2.00x"));
}

#[test]
fn a_missing_figure_fails_even_when_declared_a_known_miss() {
    for declared in [false, true] {
        let j = ratio(f64::NAN, declared);
        assert_eq!(verdict(&j), "no modeled figure (MISS)");
        assert_eq!((j.tally.off, j.tally.known, j.tally.unexpected), (1, 0, 1));
        assert!(
            j.failures[0].contains("no modeled figure"),
            "{:?}",
            j.failures
        );
        // A scaled-down run is no excuse: the ratio is judged there too.
        let j = judged("new", RATIO, 0.5, declared, (100.0, f64::NAN), 0.05);
        assert_eq!(j.tally.unexpected, 1);
    }
}

#[test]
fn a_figure_of_a_workload_no_run_ran_is_missing_not_zero() {
    let absent = Metric::OfWorkload("absent", &RATIO);
    let j = judged("new", absent, 0.5, true, (100.0, 50.0), 1.0);
    assert!(j.rows[0].modeled.is_nan(), "{}", j.rows[0].modeled);
    assert_eq!(verdict(&j), "no modeled figure (MISS)");
    assert_eq!(j.failures.len(), 1);
}

#[test]
fn a_known_miss_that_holds_fails_at_the_scale_it_is_declared_for() {
    let j = ratio(50.0, true);
    assert_eq!(
        verdict(&j),
        "within tolerance (declared a known miss: no longer one, remove the declaration)"
    );
    assert_eq!(
        (j.tally.within, j.tally.known, j.tally.unexpected),
        (1, 0, 1)
    );
    assert!(j.rows[0].unexpected);
    let why = &j.failures[0];
    assert!(
        why.starts_with("t: new elapsed (s) / base's: within tolerance at --scale 1")
            && why.contains("remove its known_miss declaration"),
        "{why}"
    );
}

#[test]
fn a_known_miss_that_holds_at_another_scale_is_reported_not_failed() {
    for scale in [0.05, 2.0] {
        let j = judged("new", RATIO, 0.5, true, (100.0, 50.0), scale);
        assert_eq!(
            verdict(&j),
            "within tolerance (declared a known miss for --scale 1)"
        );
        assert_eq!((j.tally.within, j.tally.unexpected), (1, 0));
        assert!(j.failures.is_empty());
    }
}

#[test]
fn below_scale_one_an_absolute_figure_is_not_judged() {
    let j = judged("base", Metric::Elapsed, 200.0, false, (100.0, 50.0), 0.05);
    assert_eq!(verdict(&j), "not judged at --scale below 1");
    assert_eq!((j.tally.figures, j.tally.unexpected), (0, 0));
    assert!(j.failures.is_empty() && !j.rows[0].judged);
}

#[test]
fn a_sweep_total_is_the_point_count_times_the_mean_and_its_ratio_the_means() {
    // Base: one 100 s point of a 48-point sweep, an estimated 4800 s in all.
    let total = Metric::SweepTotal(48, &Metric::Elapsed);
    let j = judged("base", total.clone(), 4800.0, false, (100.0, 50.0), 1.0);
    assert_eq!(verdict(&j), "within tolerance");
    let j = judged("base", total.clone(), 100.0, false, (100.0, 50.0), 1.0);
    assert!(verdict(&j).contains("off by 48.00x"), "{}", verdict(&j));
    // The ratio of two totals over the same points is the ratio of means.
    let ratio = Metric::RatioVs("base", &Metric::SweepTotal(48, &Metric::Elapsed));
    let j = judged("new", ratio, 0.5, false, (100.0, 50.0), 1.0);
    assert_eq!(verdict(&j), "within tolerance");
    // Absolute: not judged below scale 1.
    let j = judged("base", total.clone(), 4800.0, false, (100.0, 50.0), 0.25);
    assert_eq!(verdict(&j), "not judged at --scale below 1");
}

#[test]
fn a_runs_total_is_the_posting_run_count_times_the_mean_whatever_ran() {
    // A counter read once after 6 runs: base's one run of 100 stands for
    // 600 in all, however many iterations ran.
    let total = Metric::RunsTotal(6, &Metric::Elapsed);
    let j = judged("base", total.clone(), 600.0, false, (100.0, 50.0), 1.0);
    assert_eq!(verdict(&j), "within tolerance");
    // The per-run mean against the 6-run total is off by the run count.
    let j = judged("base", Metric::Elapsed, 600.0, false, (100.0, 50.0), 1.0);
    assert!(verdict(&j).contains("off by 6.00x"), "{}", verdict(&j));
    assert!(!total.is_scale_free());
}

#[test]
fn a_ratio_declared_full_scale_only_is_judged_at_scale_one_only() {
    let why = Some("a 60 s kernel period");
    let j = judged_full_scale_only("new", RATIO, 0.5, false, (100.0, 80.0), 0.25, why);
    assert_eq!(verdict(&j), "not judged at --scale below 1");
    assert!(j.failures.is_empty() && !j.rows[0].judged);
    // The same miss without the declaration fails below scale 1 ...
    let j = judged("new", RATIO, 0.5, false, (100.0, 80.0), 0.25);
    assert!(j.rows[0].unexpected);
    // ... and with it, at scale 1.
    let j = judged_full_scale_only("new", RATIO, 0.5, false, (100.0, 80.0), 1.0, why);
    assert!(j.rows[0].unexpected && !j.failures.is_empty());
}

#[test]
fn a_ratio_of_one_workloads_runs_is_judged_for_direction() {
    // Published 0.5 (the new configuration halves the time); the model's
    // 1.5 went the other way, beyond the tolerance, also when the ratio is
    // read from one workload's runs.
    let of_w = Metric::OfWorkload("w", &RATIO);
    let j = judged("new", of_w, 0.5, false, (100.0, 150.0), 1.0);
    assert_eq!(verdict(&j), "wrong direction (MISS)");
    // And one that did not move is "no change".
    let of_w = Metric::OfWorkload("w", &RATIO);
    let j = judged("new", of_w, 0.5, true, (100.0, 100.0), 1.0);
    assert!(verdict(&j).starts_with("no change"), "{}", verdict(&j));
}

/// A run of workload `w` taking `elapsed_s`, with `per` threads named
/// `warehouse.K` in each of `procs` processes.
fn run_with_threads(elapsed_s: f64, procs: u64, per: u64) -> RunRecord {
    let mut r = run("w", elapsed_s);
    for p in 0..procs {
        let tgid = 1000 + p * 100;
        for k in 0..per {
            r.tasks.push(numalab_record::TaskFigures {
                pid: tgid + 1 + k,
                tgid,
                name: format!("jvm/warehouse.{k}"),
                ..Default::default()
            });
        }
        r.tasks.push(numalab_record::TaskFigures {
            pid: tgid,
            tgid,
            name: "jvm/main".into(),
            ..Default::default()
        });
    }
    r
}

#[test]
fn of_threads_reads_only_the_runs_whose_processes_have_that_many_threads() {
    // Base and new each ran 2 and 4 warehouses per JVM (one JVM), and a
    // run without warehouses; only 4 changed (300 s -> 150 s).
    let points = |name, at4: f64, other: f64| {
        let runs = vec![
            run_with_threads(100.0, 1, 2),
            run_with_threads(at4, 1, 4),
            run("w", other),
        ];
        RunSet::new(name, runs)
    };
    let sets = [points("base", 300.0, 999.0), points("new", 150.0, 1.0)];
    let of = |lo, hi| Metric::OfThreads("warehouse", lo, hi, &RATIO).modeled(&sets[1], &sets);
    assert_eq!(of(4, 8), 0.5);
    assert_eq!(of(2, 2), 1.0);
    assert_eq!(of(2, 4), (100.0 + 150.0) / (100.0 + 300.0));
    assert!(of(5, 8).is_nan(), "no run has 5-8: no figure");
    // Four JVMs of 3 each: counted per process, not summed.
    let four = [
        RunSet::new("base", vec![run_with_threads(100.0, 4, 3)]),
        RunSet::new("new", vec![run_with_threads(50.0, 4, 3)]),
    ];
    let per_jvm = Metric::OfThreads("warehouse", 3, 3, &RATIO);
    assert_eq!(per_jvm.modeled(&four[1], &four), 0.5);
    let summed = Metric::OfThreads("warehouse", 12, 12, &RATIO);
    assert!(summed.modeled(&four[1], &four).is_nan());
    // The metric reads as the posting's figures do.
    let m = Metric::parse("of_threads(warehouse, 48, 96, score_change_pct(base))").unwrap();
    assert_eq!(m.name(), "score change vs base (%) at 48-96 warehouses");
    for bad in [
        "of_threads(warehouse, 9, 8, elapsed)",
        "of_threads(warehouse, x, 8, elapsed)",
        "of_threads(warehouse, 8, elapsed)",
    ] {
        assert!(Metric::parse(bad).is_err(), "{bad}");
    }
}
