//! Registry tests: defaults, ranges, aliases, rules and the completeness
//! of every declaration.

use crate::cgroup::CGROUP_FILES;
use crate::knob::{self, lookup, ALL};
use crate::{Knobs, Location, SchedBalanceSerialize, Type};
use std::collections::BTreeSet;

#[test]
fn defaults_are_the_kernels() {
    let k = Knobs::default();
    assert_eq!(k.get(knob::NUMA_BALANCING), 1);
    assert_eq!(k.get(knob::SCAN_DELAY_MS), 1000);
    assert_eq!(k.get(knob::SCAN_PERIOD_MIN_MS), 1000);
    assert_eq!(k.get(knob::SCAN_PERIOD_MAX_MS), 60000);
    assert_eq!(k.get(knob::SCAN_SIZE_MB), 256);
    assert_eq!(k.get(knob::CONFIG_HZ), 250);
    assert_eq!(
        k.get(knob::SCHED_BALANCE_SERIALIZE),
        SchedBalanceSerialize::FixedNewidle
    );
    assert_eq!(k.get(knob::SAMPLE_INTERVAL_MS), 1000);
    k.validate().unwrap();
}

#[test]
fn settings_list_every_knob_by_canonical_name() {
    let mut k = Knobs::from_sets(&[
        "kernel.numa_balancing_scan_size_mb=512",
        "numalab.sched_balance_serialize=legacy",
        "/db:cpuset.cpus=0-3",
    ])
    .unwrap();
    let s = k.settings();
    assert_eq!(s.len(), ALL.len() + 1);
    assert_eq!(s["numa_balancing.scan_size_mb"], "512");
    assert_eq!(s["numalab.sched_balance_serialize"], "legacy");
    assert_eq!(s["kernel.numa_balancing"], "1");
    assert_eq!(s["CONFIG_HZ"], "250");
    assert_eq!(s["/db:cpuset.cpus"], "0-3");
    k.set("config.hz=1000").unwrap();
    assert_eq!(k.settings()["CONFIG_HZ"], "1000");
}

#[test]
fn choice_knobs_take_only_their_words() {
    let mut k = Knobs::default();
    for v in ["legacy", "v3", "v4", "fixed", "fixed+newidle"] {
        k.set(&format!("numalab.sched_balance_serialize={v}"))
            .unwrap();
        assert_eq!(k.get(knob::SCHED_BALANCE_SERIALIZE).word(), v);
    }
    let e = k.set("numalab.sched_balance_serialize=v5").unwrap_err();
    assert!(
        e.contains("not one of legacy, v3, v4, fixed, fixed+newidle"),
        "{e}"
    );
    assert!(e.contains("numalab.sched_balance_serialize"), "{e}");
}

#[test]
fn out_of_range_and_bad_values_are_refused_naming_the_knob() {
    let mut k = Knobs::default();
    let e = k.set("kernel.numa_balancing=8").unwrap_err();
    assert!(
        e.contains("kernel.numa_balancing") && e.contains("out of range [0, 4]"),
        "{e}"
    );
    let e = k.set("numa_balancing.scan_size_mb=0").unwrap_err();
    assert!(
        e.contains("scan_size_mb") && e.contains("out of range"),
        "{e}"
    );
    let e = k.set("CONFIG_HZ=99").unwrap_err();
    assert!(e.contains("CONFIG_HZ") && e.contains("[100, 1000]"), "{e}");
    let e = k.set("numa_balancing.scan_delay_ms=-1").unwrap_err();
    assert!(e.contains("not a non-negative integer"), "{e}");
    let e = k.set("numa_balancing.scan_delay_ms=3600001").unwrap_err();
    assert!(e.contains("out of range"), "{e}");
    // A refused value leaves the knob as it was.
    assert_eq!(k, Knobs::default());
}

#[test]
fn unknown_names_and_bad_forms_are_refused() {
    let mut k = Knobs::default();
    assert!(k.set("kernel.nope=1").unwrap_err().contains("unknown knob"));
    assert!(k
        .set("numalab.nope=1")
        .unwrap_err()
        .contains("unknown knob"));
    assert!(k
        .set("kernel.numa_balancing")
        .unwrap_err()
        .contains("KEY=VALUE"));
    assert!(k.set("/a:memory.max=1").unwrap_err().contains(
        "unknown cgroup file 'memory.max' (known: cpuset.cpus, cpuset.mems, cpu.numa_load_balance)"
    ));
}

#[test]
fn memory_tiering_is_refused_by_the_model() {
    let mut k = Knobs::default();
    for v in ["2", "3"] {
        let e = k.set(&format!("kernel.numa_balancing={v}")).unwrap_err();
        assert_eq!(
            e,
            format!("--set kernel.numa_balancing={v}: memory tiering (NUMA_BALANCING_MEMORY_TIERING) is not modeled")
        );
    }
    k.set("kernel.numa_balancing=0").unwrap();
    assert_eq!(k.get(knob::NUMA_BALANCING), 0);
}

#[test]
fn numa_balancing_cgroup_mode_is_accepted_alone_and_refused_combined() {
    let mut k = Knobs::default();
    k.set("kernel.numa_balancing=4").unwrap();
    assert_eq!(k.get(knob::NUMA_BALANCING), 4);
    for v in [5, 6, 7] {
        let e = k.set(&format!("kernel.numa_balancing={v}")).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "--set kernel.numa_balancing={v}: NUMA_BALANCING_CGROUP (4) cannot be combined"
            )),
            "{e}"
        );
        assert_eq!(
            k.get(knob::NUMA_BALANCING),
            4,
            "a refused value changes nothing"
        );
    }
    // The hierarchy rule is a lab switch, on by default.
    assert!(k.get(knob::NUMA_BALANCING_CGROUP_HIERARCHY));
    k.set("numalab.numa_balancing_cgroup_hierarchy=0").unwrap();
    assert!(!k.get(knob::NUMA_BALANCING_CGROUP_HIERARCHY));
}

#[test]
fn cpu_numa_load_balance_is_a_cgroup_flag_a_phase_may_write() {
    let k = Knobs::from_sets(&["/mytest:cpu.numa_load_balance=1"]).unwrap();
    assert_eq!(k.settings()["/mytest:cpu.numa_load_balance"], "1");
    let f = crate::cgroup::cgroup_file("cpu.numa_load_balance").unwrap();
    assert!(f.during_run);
    assert!(
        !crate::cgroup::cgroup_file("cpuset.cpus")
            .unwrap()
            .during_run
    );
    use crate::cgroup::CgroupValue;
    assert_eq!(CgroupValue::check_flag(" 1"), Ok(true));
    assert_eq!(CgroupValue::check_flag("0"), Ok(false));
    assert!(CgroupValue::check_flag("2")
        .unwrap_err()
        .contains("not 0 or 1"));
}

#[test]
fn aliases_resolve_to_the_canonical_knob() {
    for (alias, name) in [
        (
            "numa_balancing/scan_delay_ms",
            "numa_balancing.scan_delay_ms",
        ),
        (
            "sched/numa_balancing/scan_period_min_ms",
            "numa_balancing.scan_period_min_ms",
        ),
        (
            "kernel.numa_balancing_scan_period_max_ms",
            "numa_balancing.scan_period_max_ms",
        ),
        (
            "kernel.numa_balancing_scan_size_mb",
            "numa_balancing.scan_size_mb",
        ),
        ("config.hz", "CONFIG_HZ"),
    ] {
        assert_eq!(lookup(alias).map(|d| d.name), Some(name), "{alias}");
    }
    let mut k = Knobs::default();
    k.set("numa_balancing/scan_size_mb=512").unwrap();
    assert_eq!(k.get(knob::SCAN_SIZE_MB), 512);
    assert!(lookup("numa_balancing.scan_delay").is_none());
}

#[test]
fn min_above_max_is_refused_naming_both() {
    let e = Knobs::from_sets(&[
        "numa_balancing.scan_period_min_ms=5000",
        "numa_balancing.scan_period_max_ms=1000",
    ])
    .unwrap_err();
    assert!(e.contains("numa_balancing.scan_period_min_ms=5000"), "{e}");
    assert!(e.contains("numa_balancing.scan_period_max_ms=1000"), "{e}");
    // Checked once all are set: raising max after min is fine.
    Knobs::from_sets(&[
        "numa_balancing.scan_period_min_ms=90000",
        "numa_balancing.scan_period_max_ms=120000",
    ])
    .unwrap();
    // Equal is allowed, as the kernel allows it.
    Knobs::from_sets(&[
        "numa_balancing.scan_period_min_ms=5000",
        "numa_balancing.scan_period_max_ms=5000",
    ])
    .unwrap();
}

#[test]
fn every_declaration_is_complete() {
    for (i, d) in ALL.iter().enumerate() {
        assert_eq!(d.idx, i, "{}", d.name);
        assert!(!d.unit.as_str().is_empty(), "{}", d.name);
        assert!(!d.source.is_empty(), "{} has no source", d.name);
        assert!(!d.description.is_empty(), "{} has no description", d.name);
        assert!(d.parse(&d.default_text()).is_ok(), "{}", d.name);
        match d.location {
            Location::Sysctl(p) | Location::Config(p) => assert!(!p.is_empty()),
            Location::Debugfs { path, .. } => assert!(!path.is_empty()),
            Location::Lab => assert!(d.name.starts_with("numalab."), "{}", d.name),
        }
        if let Type::Uint { min, max } = d.ty {
            assert!(min <= max, "{}", d.name);
        }
    }
    for f in CGROUP_FILES {
        assert!(
            !f.source.is_empty() && !f.description.is_empty(),
            "{}",
            f.name
        );
    }
}

#[test]
fn names_are_unique_across_names_and_aliases() {
    let mut seen = BTreeSet::new();
    for d in ALL {
        for n in std::iter::once(&d.name).chain(d.aliases) {
            assert!(seen.insert(*n), "{n} declared twice");
            assert!(!n.contains('=') && !n.contains(':'), "{n}");
        }
    }
}

#[test]
fn numa_balancing_scan_async_takes_0_or_1_only() {
    let mut k = Knobs::default();
    assert_eq!(
        k.get(crate::knob::NUMA_BALANCING_SCAN_ASYNC),
        0,
        "mainline by default"
    );
    k.set("kernel.numa_balancing_scan_async=1").unwrap();
    assert_eq!(k.get(crate::knob::NUMA_BALANCING_SCAN_ASYNC), 1);
    let e = k.set("kernel.numa_balancing_scan_async=2").unwrap_err();
    assert!(
        e.contains("kernel.numa_balancing_scan_async") && e.contains("out of range [0, 1]"),
        "{e}"
    );
    assert!(!Knobs::default().get(crate::knob::NUMA_SCAN_ASYNC_BACKCHARGE));
}

#[test]
fn set_takes_proc_sys_debugfs_and_bare_spellings() {
    for (kv, want) in [
        ("/proc/sys/kernel/numa_balancing=0", 0),
        ("numa_balancing=4", 4),
        ("kernel/numa_balancing=0", 0),
    ] {
        let k = Knobs::from_sets(&[kv]).unwrap();
        assert_eq!(k.get(knob::NUMA_BALANCING), want, "{kv}");
        // The record names the knob canonically, however it was spelled.
        assert_eq!(k.settings()["kernel.numa_balancing"], want.to_string());
    }
    for kv in [
        "/sys/kernel/debug/sched/numa_balancing/scan_delay_ms=50",
        "/proc/sys/kernel/numa_balancing_scan_delay_ms=50",
        "scan_delay_ms=50",
    ] {
        let k = Knobs::from_sets(&[kv]).unwrap();
        assert_eq!(k.get(knob::SCAN_DELAY_MS), 50, "{kv}");
    }
}

#[test]
fn near_misses_are_refused_with_a_suggestion() {
    let mut k = Knobs::default();
    assert_eq!(
        k.set("kernel.numa_balacing=0").unwrap_err(),
        "--set kernel.numa_balacing: unknown knob (see `numalab list knobs`); did you mean kernel.numa_balancing?"
    );
    let e = k
        .set("/sys/kernel/debug/sched/numa_balancing/scan_delay=5")
        .unwrap_err();
    assert!(
        e.ends_with("did you mean /sys/kernel/debug/sched/numa_balancing/scan_delay_ms (numa_balancing.scan_delay_ms)?"),
        "{e}"
    );
    let e = k.set("/a:cpu.numa_load_balanc=1").unwrap_err();
    assert!(e.ends_with("did you mean cpu.numa_load_balance?"), "{e}");
    assert_eq!(k, Knobs::default());
}

#[test]
fn a_name_knob_keeps_the_name_given_and_refuses_a_malformed_one() {
    let k = Knobs::default();
    assert_eq!(k.name(knob::POLICY), "mainline");
    assert_eq!(k.settings()["numalab.policy"], "mainline");
    let k = Knobs::from_sets(&["numalab.policy=two-touch"]).unwrap();
    assert_eq!(k.name(knob::POLICY), "two-touch");
    assert_eq!(k.settings()["numalab.policy"], "two-touch");
    // Any well-formed name passes here: the model checks it against its
    // registry, which this crate cannot see.
    let e = Knobs::from_sets(&["numalab.policy=no such"]).unwrap_err();
    assert!(
        e.contains("numalab.policy") && e.contains("not a name"),
        "{e}"
    );
    assert!(Knobs::from_sets(&["numalab.policy="]).is_err());
}
