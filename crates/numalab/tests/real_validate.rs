//! End-to-end tests of `real run`, `vm run` and `validate` that need
//! neither QEMU nor privileges: refusals are one line with exit code 2,
//! and `validate --model-only` prints the side-by-side table and writes
//! the model's records.

use std::process::{Command, Output};

fn numalab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .output()
        .expect("run numalab")
}

fn tmp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("numalab-rv-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn fails_with(args: &[&str], needles: &[&str]) {
    let o = numalab(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "args {args:?}: stderr {err}");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    assert!(lines[0].starts_with("numalab: error:"), "{err}");
    for n in needles {
        assert!(err.contains(n), "'{n}' not in: {err}");
    }
}

#[test]
fn refusals_are_one_line_with_exit_code_2() {
    fails_with(
        &["real", "run", "-w", "no-such-workload"],
        &["no-such-workload"],
    );
    fails_with(
        &["real", "run", "-w", "numa02", "--scale", "2"],
        &["--scale"],
    );
    fails_with(
        &["real", "run", "-w", "numa02", "--set", "nonsense"],
        &["KEY=VALUE"],
    );
    fails_with(
        &["vm", "run", "-m", "spr-4n", "-w", "numa02"],
        &["spr-4n", "CPUs", "QEMU guest"],
    );
    fails_with(
        &["validate", "--model-only", "--scenario", "nope"],
        &["nope", "pinned-4k"],
    );
    fails_with(&["validate", "--model-only", "--check"], &["--check"]);
    fails_with(
        &["validate", "--model-only", "--model-seeds", "3"],
        &["--model-seeds", "--boots"],
    );
    fails_with(
        &["validate", "--model-only", "--model-seeds", "0"],
        &["--model-seeds", "1..=64"],
    );
    fails_with(
        &["validate", "--model-only", "--scenario", "oversub"],
        &["oversub", "guest-2n2c", "--machine"],
    );
    fails_with(
        &[
            "validate",
            "--guest-json",
            "/nonexistent",
            "--scenario",
            "pinned-4k",
        ],
        &["/nonexistent/pinned-4k.kernel.json"],
    );
}

#[test]
fn model_only_validate_prints_the_table_and_writes_the_model_json() {
    let d = tmp_dir("val");
    let ds = d.to_string_lossy().to_string();
    let o = numalab(&[
        "validate",
        "--model-only",
        "--scenario",
        "pinned-4k",
        "--scale",
        "0.25",
        "--json-dir",
        &ds,
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for needle in [
        "== pinned-4k:",
        "numa_pte_updates",
        "numa_hint_faults_local",
        "numa_pages_migrated",
        "sched_swap_numa",
        "worker.3",
        "all threads >= 90% local (s)",
    ] {
        assert!(out.contains(needle), "'{needle}' not in:\n{out}");
    }
    let rec = std::fs::read_to_string(d.join("pinned-4k.model.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&rec).unwrap();
    assert_eq!(v["kind"], "model");
    let cols = v["timeseries"]["columns"].as_array().unwrap();
    assert!(cols.iter().any(|c| c == "region:pft/chunk3:node3_bytes"));
    assert!(cols.iter().any(|c| c == "cpu:pft/worker.3"));
    assert!(!d.join("pinned-4k.kernel.json").exists());
    // A saved "guest" record is compared without booting (here the model's
    // own record stands in for it: nothing may differ).
    std::fs::copy(
        d.join("pinned-4k.model.json"),
        d.join("pinned-4k.kernel.json"),
    )
    .unwrap();
    let o = numalab(&[
        "validate",
        "--scenario",
        "pinned-4k",
        "--scale",
        "0.25",
        "--guest-json",
        &ds,
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!out.contains("<--"), "{out}");
    assert!(out.contains("1.00"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_model_trace_of_a_scenario_is_written_beside_the_gate_and_counts_as_the_gate_does() {
    let d = tmp_dir("mtrace");
    let ds = d.to_string_lossy().to_string();
    let run = |events: &str| {
        numa02_gate(&[
            "--model-trace",
            &ds,
            "--trace-events",
            events,
            // The trace is --seed's run; one seed makes the row that run.
            "--model-seeds",
            "1",
        ])
    };
    let o = run("sched_migrate_task,numalab_lb");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(d.join("numa02-like.model.trace")).unwrap();
    let t = numalab_record::ftrace::parse(&text).unwrap();
    let counts = t.counts();
    // The opt-in event named, and the moves the gate counts, whatever
    // else was asked for; nothing else.
    assert!(
        counts.get("numalab_lb").copied().unwrap_or(0) > 0,
        "{counts:?}"
    );
    assert!(counts.get("sched_migrate_task").copied().unwrap_or(0) > 0);
    assert!(!counts.contains_key("sched_switch"), "{counts:?}");
    let moves = counts.get("sched_move_numa").copied().unwrap_or(0);
    let line = row(&out, "numa02-like", "sched_move_numa");
    assert!(
        line.split_whitespace().rev().nth(1) == Some(moves.to_string().as_str()),
        "{moves} in the trace, the gate's row: {line}"
    );
    // An event the model does not have: one line naming it, exit 2.
    let o = run("sched_wakeup");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown event \"sched_wakeup\""), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `numalab validate` of numa02-like against guest-4n's saved boots, with
/// `extra` options.
fn numa02_gate(extra: &[&str]) -> Output {
    let b = boots("guest-4n");
    let mut args = vec![
        "--no-progress",
        "validate",
        "--boots",
        b.as_str(),
        "--scenario",
        "numa02-like",
    ];
    args.extend_from_slice(extra);
    numalab(&args)
}

/// Saved boots of a guest's kernel, 3 or 4 per scenario (6.12 under TCG).
fn boots(dir: &str) -> String {
    format!("{}/validate/kernel/{dir}", env!("CARGO_MANIFEST_DIR"))
}

/// `numalab validate --boots DIR --check` with `extra` options: it must
/// pass, with a band table for each of `scenarios`; returns its stdout.
fn gate(dir: &str, extra: &[&str], scenarios: &[&str]) -> String {
    let dir = boots(dir);
    let mut args = vec![
        "--no-progress",
        "validate",
        "--boots",
        dir.as_str(),
        "--check",
    ];
    args.extend_from_slice(extra);
    let o = numalab(&args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    for s in scenarios {
        let head =
            format!("-- {s}: the model's median over 21 seeds against the kernel's band over ");
        assert!(out.contains(&head), "{out}");
    }
    assert!(out.contains("validate --check:"), "{out}");
    out
}

/// The row of `figure` in scenario `s`'s band table.
fn row<'a>(out: &'a str, s: &str, figure: &str) -> &'a str {
    let part = &out[out
        .find(&format!("-- {s}: "))
        .unwrap_or_else(|| panic!("{out}"))..];
    part.lines()
        .find(|l| l.starts_with(figure))
        .unwrap_or_else(|| panic!("no {figure} row for {s}: {out}"))
}

#[test]
fn the_model_stays_within_the_kernels_band_or_a_declared_miss_over_the_saved_boots() {
    let out = gate(
        "guest-4n",
        &[],
        &[
            "pinned-4k",
            "pinned-thp",
            "unpinned",
            "numa02-like",
            "shared-procs",
        ],
    );
    // Busy threads move: while the coordinator's sample holds a vCPU the
    // balancer takes the thread waiting there, and NUMA balancing moves
    // it back, as often as in the kernel (docs/real.md M3).
    for s in ["numa02-like", "shared-procs"] {
        let line = row(&out, s, "sched_move_numa");
        assert!(line.ends_with("within"), "{line}");
    }
    // The second guest shape, its own scenarios and boots.
    let out = gate(
        "guest-2n2c",
        &["--machine", "guest-2n2c"],
        &[
            "fork-under-load",
            "oversub",
            "sleepy",
            "low-memory",
            "numa01-like",
            "unpinned-thp",
            "barrier-steps",
        ],
    );
    // Threads woken by another at a barrier move between CPUs as often as
    // the kernel's (select_task_rq_fair with a waker, docs/real.md).
    let line = row(&out, "barrier-steps", "nr_migrations per thread");
    assert!(line.ends_with("within"), "{line}");
}

#[test]
fn the_series_scenarios_hold_the_model_to_the_patched_kernels_band() {
    let out = gate(
        "guest-4n-series",
        &["--series"],
        &[
            "p4-cgroup-on-off",
            "p2-scan-async",
            "p1-no-preferred-node",
            "p1-no-migrate-on-select",
            "p1-no-fault-classify",
            "p1-no-scan-adapt",
        ],
    );
    // Proposal 4: the disabled cgroup is neither scanned nor migrated, in
    // the kernel (0 in every boot) and in the model.
    for stat in ["numa_pte_updates /off ", "numa_pages_migrated /off "] {
        let line = row(&out, "p4-cgroup-on-off", stat);
        assert!(
            line.contains("0 [0-0]") && line.ends_with("within"),
            "{line}"
        );
    }
    // Without a preferred node the kernel moves no task for NUMA, and
    // neither does the model.
    let moves = row(&out, "p1-no-preferred-node", "sched_move_numa");
    assert!(
        moves.contains("0 [0-0]") && moves.ends_with("within"),
        "{moves}"
    );
    // Proposal 2's pmbench-like pair on the 2-node guest: the kernel's
    // timed accesses are recorded and judged (a declared miss, with its
    // experiment), not "not recorded".
    let s = ["p2-pmbench-sync", "p2-pmbench-async"];
    let out = gate(
        "guest-2n2c-series",
        &["--series", "--machine", "guest-2n2c"],
        &s,
    );
    for s in s {
        let r = row(&out, s, "access_latency_outliers");
        assert!(!r.contains("not recorded"), "{r}");
    }
}

#[test]
fn the_gate_judges_the_median_of_the_models_seeds() {
    let run = |seed: &str, seeds: &str| {
        let o = numa02_gate(&["--seed", seed, "--model-seeds", seeds]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // The model's column of a row: its value, or "median [min-max]".
    let model = |out: &str, figure: &str| -> String {
        let line = row(out, "numa02-like", figure).to_string();
        let tail = line[..line.rfind("  ").unwrap()].trim_end().to_string();
        let cols: Vec<&str> = tail.split_whitespace().collect();
        if tail.ends_with(']') {
            cols[cols.len() - 2..].join(" ")
        } else {
            cols[cols.len() - 1].to_string()
        }
    };
    let three = run("4", "3");
    assert!(three.contains("-- numa02-like: the model's median over 3 seeds against"));
    for figure in ["numa_pte_updates", "numa_hint_faults", "sched_stick_numa"] {
        let mut single: Vec<f64> = ["4", "5", "6"]
            .iter()
            .map(|s| model(&run(s, "1"), figure).parse().unwrap())
            .collect();
        single.sort_by(f64::total_cmp);
        let want = format!("{} [{}-{}]", single[1], single[0], single[2]);
        assert_eq!(model(&three, figure), want, "{three}");
    }
}

#[test]
fn a_figure_outside_the_band_that_is_not_declared_fails_the_gate() {
    // pinned-4k's boots with the kernel's pages migrated made 1000x
    // larger: the model's count falls below the band.
    let d = tmp_dir("boots");
    for n in 1..=3 {
        let name = format!("pinned-4k.boot{n}.kernel.json");
        let text = std::fs::read_to_string(format!("{}/{name}", boots("guest-4n"))).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let c = &mut v["cgroups"]["/"]["memory_stat"]["numa_pages_migrated"];
        *c = serde_json::json!(c.as_u64().unwrap() * 1000);
        std::fs::write(d.join(name), v.to_string()).unwrap();
    }
    let args = [
        "--no-progress",
        "validate",
        "--boots",
        d.to_str().unwrap(),
        "--scenario",
        "pinned-4k",
        "--check",
    ];
    let o = numalab(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("Outside the kernel's band and not declared in known.toml:\n  pinned-4k: numa_pages_migrated\n"),
        "{out}"
    );
    // Declared with its experiment, the same miss passes the gate.
    std::fs::write(
        d.join("known.toml"),
        "[[miss]]\nscenario = \"pinned-4k\"\nfigure = \"numa_pages_migrated\"\nexperiment = \"this test\"\n",
    )
    .unwrap();
    let o = numalab(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("outside, known (this test)"), "{out}");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn real_and_vm_runs_refuse_a_model_policy_before_anything_runs() {
    for head in [&["real", "run"][..], &["vm", "run", "-m", "tiny-2n"][..]] {
        let tail = ["-w", "numa02", "--set", "numalab.policy=two-touch"];
        fails_with(
            &[head, &tail[..]].concat(),
            &["numalab.policy=two-touch", "only in the model"],
        );
    }
}

/// A vmstat counter of a record (the model's or a guest's).
fn vmstat(v: &serde_json::Value, name: &str) -> f64 {
    v["vmstat"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("no vmstat {name} in the record"))
}

/// The model's record of validation scenario `scenario` on guest-4n,
/// written into `dir`.
fn guest_4n_model_record(dir: &std::path::Path, scenario: &str) -> serde_json::Value {
    let root = env!("CARGO_MANIFEST_DIR");
    let json = dir.join(format!("{scenario}.json"));
    let o = numalab(&[
        "--no-progress",
        "run",
        "-m",
        &format!("{root}/validate/guest-4n.toml"),
        "-w",
        &format!("{root}/validate/{scenario}.toml"),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// The saved guest-4n boot `n` of `scenario`.
fn guest_4n_boot(scenario: &str, n: usize) -> serde_json::Value {
    let f = format!("{}/{scenario}.boot{n}.kernel.json", boots("guest-4n"));
    serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()
}

#[test]
fn the_models_fault_and_allocation_counters_count_what_the_kernel_counts() {
    // pinned-4k on guest-4n: 65536 first touches, then hinting faults and
    // migrations of the pages its threads write. The 6.12 guest counts a
    // `pgfault` for every completed fault (mm_account_fault): the first
    // touches, the hinting faults, and the write-protect fault each
    // migration leaves behind (the new PTE is read-only); and a `numa_hit`
    // per allocation, the migrations' destination folios included
    // (zone_statistics). Its vmstat is system-wide: the guest's own few
    // hundred other faults and allocations count too.
    let d = tmp_dir("counters");
    let model = guest_4n_model_record(&d, "pinned-4k");
    let first_touches = 65536.0;
    // faults beyond first touch, hinting faults and migrations; allocations
    // beyond first touches and migrations.
    let rest = |r: &serde_json::Value| {
        let faults = vmstat(r, "pgfault")
            - first_touches
            - vmstat(r, "numa_hint_faults")
            - vmstat(r, "numa_pages_migrated");
        let allocs = vmstat(r, "numa_hit") - first_touches - vmstat(r, "numa_pages_migrated");
        (faults, allocs)
    };
    assert_eq!(rest(&model), (0.0, 0.0), "{:?}", model["vmstat"]);
    for n in 1..=4 {
        let (faults, allocs) = rest(&guest_4n_boot("pinned-4k", n));
        assert!(
            (0.0..500.0).contains(&faults),
            "boot {n}: {faults} other faults"
        );
        assert!(
            (0.0..500.0).contains(&allocs),
            "boot {n}: {allocs} other allocations"
        );
    }
    // pinned-thp: each of its 128 huge pages is one fault that maps a THP
    // (`thp_fault_alloc`, the winner's only), the kernel's count exactly.
    let model = guest_4n_model_record(&d, "pinned-thp");
    for n in 1..=4 {
        assert_eq!(
            vmstat(&model, "thp_fault_alloc"),
            vmstat(&guest_4n_boot("pinned-thp", n), "thp_fault_alloc"),
            "boot {n}"
        );
    }
    let _ = std::fs::remove_dir_all(d);
}
