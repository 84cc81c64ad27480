//! End-to-end tests of the command line: bad input gets one clear error
//! naming what is wrong and a non-zero exit; output is deterministic;
//! piped output has no progress bar.

use std::process::{Command, Output};

fn numalab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .output()
        .expect("run numalab")
}

fn tmp(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("numalab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().to_string()
}

/// Asserts a failing run: exit 2, one `numalab: error:` line mentioning
/// every word in `needles`, no panic.
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

const TINY_RUN: &[&str] = &["run", "-m", "tiny-2n", "-w", "numa02", "--scale", "0.01"];

#[test]
fn unknown_presets_and_knobs_are_named() {
    fails_with(&["run", "-m", "nosuch", "-w", "numa02"], &["nosuch"]);
    fails_with(&["run", "-m", "tiny-2n", "-w", "nosuch"], &["nosuch"]);
    let mut a = TINY_RUN.to_vec();
    a.extend(["--set", "kernel.bogus=1"]);
    fails_with(&a, &["kernel.bogus", "unknown knob"]);
    let mut a = TINY_RUN.to_vec();
    a.extend(["--set", "kernel.numa_balancing=9"]);
    fails_with(&a, &["kernel.numa_balancing", "range"]);
    let mut a = TINY_RUN.to_vec();
    a.extend(["--set", "numalab.nope=1"]);
    fails_with(&a, &["numalab.nope", "unknown knob"]);
    fails_with(&["reproduce", "nosuch"], &["nosuch"]);
    fails_with(&["list", "things"], &["things"]);
}

#[test]
fn scan_period_min_above_max_is_refused_naming_both() {
    let mut a = TINY_RUN.to_vec();
    a.extend([
        "--set",
        "numa_balancing.scan_period_min_ms=5000",
        "--set",
        "numa_balancing.scan_period_max_ms=1000",
    ]);
    fails_with(
        &a,
        &[
            "numa_balancing.scan_period_min_ms=5000",
            "numa_balancing.scan_period_max_ms=1000",
        ],
    );
}

#[test]
fn list_knobs_shows_each_knobs_declaration() {
    let o = numalab(&["list", "knobs"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "numa_balancing.scan_delay_ms=1000",
        "uint [0, 3600000], unit ms; debugfs /sys/kernel/debug/sched/numa_balancing/scan_delay_ms (before 5.13: /proc/sys/kernel/numa_balancing_scan_delay_ms)",
        "source: kernel/sched/fair.c sysctl_numa_balancing_scan_delay",
        "CONFIG_HZ=250",
        "unit Hz; kernel config CONFIG_HZ",
        "numalab.sched_balance_serialize=fixed+newidle",
        "one of legacy|v3|v4|fixed|fixed+newidle, unit none; numalab lab-only",
        "kernel.numa_balancing=1",
        "sysctl /proc/sys/kernel/numa_balancing",
        "CGROUP:cpuset.mems=VALUE",
    ] {
        assert!(out.contains(needle), "'{needle}' not in:\n{out}");
    }
}

#[test]
fn bad_machine_specs_name_the_field() {
    let base = |distance: &str, cores: u32| {
        format!(
            "name = \"bad\"\n[topology]\npackages = 2\nnodes_per_package = 1\ncores_per_node = {cores}\nthreads_per_core = 1\n[memory]\nper_node_gib = 1\n[distance]\nmatrix = {distance}\n[latency]\nlocal_ns = 80\nremote_ns = 140\n[bandwidth]\nnode_gbps = 100\nlink_gbps = 30\n"
        )
    };
    let not_square = tmp("ns.toml", &base("[[10, 21], [21]]", 2));
    fails_with(
        &["run", "-m", &not_square, "-w", "numa02"],
        &["distance.matrix"],
    );
    let bad_diag = tmp("bd.toml", &base("[[11, 21], [21, 10]]", 2));
    fails_with(
        &["run", "-m", &bad_diag, "-w", "numa02"],
        &["distance.matrix"],
    );
    let zero = tmp("zero.toml", &base("[[10, 21], [21, 10]]", 0));
    fails_with(&["run", "-m", &zero, "-w", "numa02"], &["cores_per_node"]);
    let broken = tmp("broken.toml", "name = \"x\"\n[topology\n");
    fails_with(&["run", "-m", &broken, "-w", "numa02"], &["TOML"]);
}

#[test]
fn bad_workloads_are_refused_before_running() {
    let big = tmp(
        "big.toml",
        "name = \"big\"\n[[process]]\nname = \"p\"\n[[process.region]]\nname = \"r\"\nsize = \"64GiB\"\n[[process.thread]]\nname = \"t\"\nphases = [ { stream = \"r\" } ]\n",
    );
    fails_with(&["run", "-m", "tiny-2n", "-w", &big], &["size", "memory"]);
    let cpu = tmp(
        "cpu.toml",
        "name = \"c\"\n[[cgroup]]\npath = \"/g\"\ncpuset_cpus = \"0-9\"\n[[process]]\nname = \"p\"\ncgroup = \"/g\"\n[[process.thread]]\nname = \"t\"\nphases = [ { compute = \"1ms\" } ]\n",
    );
    fails_with(&["run", "-m", "tiny-2n", "-w", &cpu], &["cpu"]);
    let pol = tmp(
        "pol.toml",
        "name = \"p\"\n[[process]]\nname = \"p\"\n[[process.region]]\nname = \"r\"\nsize = \"4MiB\"\npolicy = { mode = \"preferred\", nodes = \"0\", numa_balancing = true }\n[[process.thread]]\nname = \"t\"\nphases = [ { stream = \"r\" } ]\n",
    );
    fails_with(
        &["run", "-m", "tiny-2n", "-w", &pol],
        &["EINVAL", "MPOL_F_NUMA_BALANCING"],
    );
    let mut a = TINY_RUN.to_vec();
    a[6] = "0";
    fails_with(&a, &["scale"]);
}

#[test]
fn json_is_byte_identical_for_the_same_seed_and_has_the_documented_fields() {
    let run = |f: &str| {
        let mut a = TINY_RUN.to_vec();
        a.extend(["--seed", "3", "--json", f]);
        let o = numalab(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(f).unwrap()
    };
    let a = run(&tmp("a.json", ""));
    let b = run(&tmp("b.json", ""));
    assert_eq!(a, b);
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    for k in [
        "elapsed_s",
        "user_s",
        "sys_s",
        "vmstat",
        "cgroups",
        "tasks",
        "machine",
        "workload",
        "settings",
        "seed",
    ] {
        assert!(v.get(k).is_some(), "field {k} missing");
    }
    assert!(v["cgroups"]["/"]["memory_stat"]["numa_hint_faults"].is_u64());
    assert_eq!(v["settings"]["numa_balancing.scan_delay_ms"], "1000");
}

#[test]
fn piped_output_has_no_progress_bar_and_json_to_stdout_is_pure() {
    let mut a = TINY_RUN.to_vec();
    a.extend(["--json", "-"]);
    let o = numalab(&a);
    assert!(o.status.success());
    // stderr carries only warnings (this run is over before the first
    // scan): no bar, no carriage returns, nothing on stdout but the JSON.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains('\r'), "{err}");
    assert!(
        err.lines().all(|l| l.starts_with("numalab: warning:")),
        "{err}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    assert_eq!(v["format"], "numalab-run");
}

/// `--json FILE` keeps the summary on stdout and says where it wrote.
#[test]
fn json_to_a_file_keeps_the_summary_and_says_where_it_wrote() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("run.json");
    let f = f.to_str().expect("utf-8 path");
    let mut a = TINY_RUN.to_vec();
    a.extend(["--json", f]);
    let o = numalab(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out, {
        let mut b = TINY_RUN.to_vec();
        b.push("--no-progress");
        String::from_utf8(numalab(&b).stdout).unwrap()
    });
    assert!(out.contains("numa_pte_updates"), "{out}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("numalab: wrote {f} (a Run)")),
        "{err}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f).expect("written")).expect("json");
    assert_eq!(v["format"], "numalab-run");
}

/// Balancing on, and the run over before `scan_delay_ms`: said on
/// stderr, with the end time and the delay; not said once the delay is
/// short enough for balancing to act.
#[test]
fn a_run_over_before_the_first_scan_says_so() {
    let o = numalab(TINY_RUN);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("numalab: warning: NUMA balancing was on but no PTE was ever updated in numa02 (numa_pte_updates 0): the run ended at ")
            && err.contains("before scan_delay_ms (1000 ms)"),
        "{err}"
    );
    // Balancing off: nothing to say.
    let mut a = TINY_RUN.to_vec();
    a.extend(["--set", "kernel.numa_balancing=0"]);
    assert_eq!(numalab(&a).stderr, b"");
    // numa02 at scale 0.05 scans once the first scan comes after 50 ms.
    let o = numalab(&[
        "run",
        "-m",
        "tiny-2n",
        "-w",
        "numa02",
        "--scale",
        "0.05",
        "--set",
        "scan_delay_ms=50",
    ]);
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
}

/// A workload of fixed duration shorter than the scan delay is warned
/// about before it runs, with the smallest scale that lasts the delay,
/// and only once.
#[test]
fn a_run_too_short_to_scan_is_warned_about_before_it_starts() {
    let o = numalab(&[
        "run", "-m", "tiny-2n", "-w", "oltp", "--scale", "0.1", "--json", "-",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err,
        "numalab: warning: NUMA balancing will not scan in oltp: it runs 0.30 s at --scale 0.1 (its fixed duration), and no scan starts before scan_delay_ms (1000 ms); --scale 0.334 or more lets it last the delay\n"
    );
}

/// Knobs by their /proc/sys and debugfs paths and bare names; a near
/// miss gets a suggestion.
#[test]
fn knobs_are_taken_in_their_kernel_spellings() {
    let mut a = TINY_RUN.to_vec();
    a.extend([
        "--set",
        "/proc/sys/kernel/numa_balancing=0",
        "--set",
        "/sys/kernel/debug/sched/numa_balancing/scan_size_mb=512",
        "--set",
        "scan_delay_ms=50",
        "--json",
        "-",
    ]);
    let o = numalab(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["settings"]["kernel.numa_balancing"], "0");
    assert_eq!(v["settings"]["numa_balancing.scan_size_mb"], "512");
    assert_eq!(v["settings"]["numa_balancing.scan_delay_ms"], "50");
    let mut a = TINY_RUN.to_vec();
    a.extend(["--set", "numa_balancing.scan_delay=50"]);
    fails_with(
        &a,
        &["unknown knob", "did you mean numa_balancing.scan_delay_ms?"],
    );
}

#[test]
fn iterations_make_a_runset_that_compare_reads() {
    let f = tmp("set.json", "");
    let mut a = TINY_RUN.to_vec();
    a.extend(["--iterations", "2", "--json", &f, "--label", "base"]);
    assert!(numalab(&a).status.success());
    let o = numalab(&["compare", &f, &f]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("elsp-NUMA02") && s.contains("Amean") && s.contains("AutoNUMA cost"),
        "{s}"
    );
}

#[test]
fn machine_import_from_numactl_text_gives_a_spec_that_runs() {
    let hw = "available: 2 nodes (0-1)\nnode 0 cpus: 0 1\nnode 0 size: 2048 MB\nnode 0 free: 1000 MB\nnode 1 cpus: 2 3\nnode 1 size: 2048 MB\nnode 1 free: 1000 MB\nnode distances:\nnode   0   1 \n  0:  10  20 \n  1:  20  10 \n";
    let f = tmp("hw.txt", hw);
    let o = numalab(&["machine", "import", &f]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let spec = tmp("imported.toml", &String::from_utf8_lossy(&o.stdout));
    let o = numalab(&[
        "run", "-m", &spec, "-w", "numa02", "--scale", "0.01", "--json", "-",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A reader that goes away early (`numalab list knobs | head -1`) ends
/// numalab quietly by SIGPIPE, as any Unix filter, instead of a panic.
#[test]
fn closed_stdout_is_not_a_panic() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["list", "knobs"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run numalab");
    // Close our end of the pipe before numalab writes.
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("wait for numalab");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.is_empty(), "nothing on stderr expected: {err}");
}

/// Stdout on a full device (`numalab list workloads > /dev/full`): one
/// clear error and exit 2 from every printing command, never a panic.
#[test]
fn stdout_on_a_full_device_is_one_error_not_a_panic() {
    let full = std::path::Path::new("/dev/full");
    if !full.exists() {
        eprintln!("no /dev/full here: skipped");
        return;
    }
    for args in [
        vec!["list", "workloads"],
        vec!["list", "knobs"],
        vec!["schema", "run"],
        vec!["machine", "show", "tiny-2n"],
        [TINY_RUN, &["--json", "-"]].concat(),
        TINY_RUN.to_vec(),
    ] {
        let f = std::fs::File::options().write(true).open(full).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_numalab"))
            .args(&args)
            .stdout(f)
            .output()
            .expect("run numalab");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(
            err.trim_end(),
            "numalab: error: writing stdout: No space left on device",
            "{args:?}"
        );
    }
}

/// `real restore` with a clean state directory says so and changes
/// nothing; a journal it must not act on is one error line (the SIGKILL
/// test itself is crates/numalab-real/tests/journal_sigkill.rs).
#[test]
fn real_restore_reports_nothing_or_one_error() {
    let dir = std::env::temp_dir().join(format!("numalab-cli-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_numalab"))
            .args(["real", "restore"])
            .env("NUMALAB_STATE_DIR", &dir)
            .output()
            .expect("run numalab")
    };
    let o = run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "nothing to restore\n");
    assert!(!dir.exists(), "a clean restore creates nothing");
    std::fs::create_dir_all(&dir).unwrap();
    let evil = dir.join("elsewhere");
    std::fs::write(&evil, "keep\n").unwrap();
    std::fs::write(
        dir.join("real-run.json"),
        format!(
            r#"{{"format":"numalab-real-journal","version":1,"pid":77,"knobs":[{{"key":"x","path":"{}","old":"1"}}],"cgroup":null}}"#,
            evil.display()
        ),
    )
    .unwrap();
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("numalab: error: restoring what run pid 77 left changed")
            && err.contains("knob 'x'"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&evil).unwrap(), "keep\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A command line clap refuses is one `numalab: error:` line too, not
/// clap's multi-line usage block.
#[test]
fn refused_command_lines_are_one_error_line() {
    fails_with(&["run", "--bogus"], &["--bogus", "numalab --help"]);
    fails_with(&["run", "-m", "tiny-2n"], &["--workload"]);
    fails_with(
        &["run", "-m", "tiny-2n", "-w", "numa02", "--seed", "x"],
        &["--seed", "'x'"],
    );
    let help = numalab(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: numalab"));
}

/// A cheap reproduction: NUMA01_THREADLOCAL scaled down, two seeds per
/// configuration.
const SMALL_REPRODUCTION: &[&str] = &[
    "reproduce",
    "numa-balancing-threadlocal",
    "--scale",
    "0.02",
    "--iterations",
    "2",
];

/// The stdout of [`SMALL_REPRODUCTION`] with `extra` arguments, which
/// must succeed.
fn small_reproduction(extra: &[&str]) -> String {
    let mut a = SMALL_REPRODUCTION.to_vec();
    a.extend(extra);
    let o = numalab(&a);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn reproduce_output_does_not_depend_on_the_number_of_jobs() {
    let run = |j: &str| small_reproduction(&["-j", j]);
    let one = run("1");
    assert!(one.contains("verdict"), "{one}");
    assert!(one.contains("tolerances:"), "{one}");
    assert_eq!(one, run("2"));
    let mut a = SMALL_REPRODUCTION.to_vec();
    a.extend(["-j", "0"]);
    fails_with(&a, &["-j", "at least 1"]);
}

/// `--workload NAME=FILE` runs the reproduction with the file in place of
/// the preset: the same workload as a file gives the same figures, and the
/// header names the replacement; a file of another name, or a NAME the
/// reproduction does not run, is refused with one error.
#[test]
fn reproduce_workload_replaces_a_preset_by_a_file_of_its_name() {
    let preset = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../numalab-workload/presets/numa01-threadlocal.toml"
    );
    let text = std::fs::read_to_string(preset).unwrap();
    let same = tmp("numa01-threadlocal-copy.toml", &text);
    let stdout = small_reproduction;
    let plain = stdout(&[]);
    let arg = format!("numa01-threadlocal={same}");
    let replaced = stdout(&["--workload", &arg]);
    assert!(
        replaced.contains(&format!("with --workload {arg}")),
        "{replaced}"
    );
    let tables = |s: &str| s.lines().skip(3).collect::<Vec<_>>().join("\n");
    assert_eq!(tables(&plain), tables(&replaced));
    // FILE:PARAMS: the file's own parameters, before the reproduction's.
    let arg = format!("numa01-threadlocal={same}:size=3GiB");
    assert_eq!(tables(&plain), tables(&stdout(&["--workload", &arg])));
    let arg = format!("numa01-threadlocal={same}:size=1GiB");
    assert_ne!(tables(&plain), tables(&stdout(&["--workload", &arg])));
    let other = tmp(
        "renamed.toml",
        &text.replacen("name = \"numa01-threadlocal\"", "name = \"renamed\"", 1),
    );
    let mut a = SMALL_REPRODUCTION.to_vec();
    let arg = format!("numa01-threadlocal={other}");
    a.extend(["--workload", &arg]);
    fails_with(&a, &["--workload", "renamed", "not numa01-threadlocal"]);
    let mut a = SMALL_REPRODUCTION.to_vec();
    let arg = format!("specjbb={same}");
    a.extend(["--workload", &arg]);
    fails_with(&a, &["--workload", "no workload preset specjbb"]);
    // With `all`, a NAME that no reproduction runs (refused before any run).
    let arg = format!("nosuch={same}");
    fails_with(
        &["reproduce", "all", "--workload", &arg],
        &["--workload", "no reproduction runs", "nosuch"],
    );
}

/// At a scale where NUMA balancing never acts, the figures that measure
/// it are "not modeled at this scale": neither judged nor failed, the 0/0
/// of a counter ratio included, and counted apart in the summary.
#[test]
fn reproduce_does_not_judge_what_the_runs_could_not_model() {
    let o = numalab(&[
        "reproduce",
        "per-cgroup-numa-balancing",
        "--scale",
        "0.02",
        "--iterations",
        "1",
        "--check",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let row = out
        .lines()
        .find(|l| l.contains("numa_hint_faults / numa_pte_updates"))
        .expect("the counter ratio's row");
    assert!(
        row.contains("NaN") && row.contains("not modeled at this scale [1]"),
        "{row}"
    );
    let ratio = out
        .lines()
        .find(|l| l.contains("elapsed (s) / mytest-disabled's"))
        .expect("the elapsed ratio's row");
    assert!(ratio.ends_with("not modeled at this scale [1]"), "{ratio}");
    assert!(
        out.contains("[1] not modeled at --scale 0.02: 1 of 1 run(s) in mytest-enabled updated no PTE (numa_pte_updates 0)"),
        "{out}"
    );
    assert!(
        !out.contains("(MISS)") && !out.contains("direction"),
        "{out}"
    );
}

/// `reproduce numa-balance-serialize --check` at --scale 0.01, where its
/// figures are judged (shares and a score change; OLTP's serialization
/// counters count at that scale), with `extra` arguments.
fn serialize_check(extra: &[&str]) -> Output {
    let mut a = vec![
        "--no-progress",
        "reproduce",
        "numa-balance-serialize",
        "--scale",
        "0.01",
        "--check",
    ];
    a.extend(extra);
    numalab(&a)
}

/// The row of the fixed configuration's contention share: published as
/// gone from the profile, which is what the fix is for.
fn fixed_share_row(out: &str) -> &str {
    out.lines()
        .find(|l| l.starts_with("fixed") && l.contains("sched_balance_running_contention_share"))
        .unwrap_or_else(|| panic!("no fixed contention-share row in {out}"))
}

#[test]
fn reproduce_check_passes_when_every_judged_figure_holds_or_is_a_declared_miss() {
    let o = serialize_check(&[]);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(fixed_share_row(&out).ends_with("within tolerance"), "{out}");
    // The other two figures are judged too, and miss as declared.
    assert_eq!(out.matches("(known miss [1])").count(), 2, "{out}");
    assert!(!out.contains("(MISS)"), "{out}");
}

/// An ablation that takes the fix out of the fixed configuration (`--set`
/// applies to every configuration) breaks the figure the fix exists for, a
/// figure not declared a known miss: exit 1, naming it; the same through
/// the `--json-dir` path, which writes reproduction.json first.
#[test]
fn reproduce_check_fails_on_an_undeclared_miss_naming_the_figure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json_dir = dir.path().to_str().expect("utf-8 path");
    for extra in [&[][..], &["--json-dir", json_dir][..]] {
        let mut a = vec!["--set", "numalab.sched_balance_serialize=legacy"];
        a.extend(extra);
        let o = serialize_check(&a);
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{out}{err}");
        assert!(fixed_share_row(&out).ends_with("(MISS)"), "{out}");
        assert!(
            err.contains("reproduce --check: numa-balance-serialize: fixed sched_balance_running_contention_share (%): no change")
                && err.contains("not declared a known miss")
                && err.contains("numalab: error: 1 published figure(s) fail --check"),
            "{err}"
        );
    }
    assert!(dir.path().join("reproduction.json").is_file());
}

#[test]
fn run_iterations_in_parallel_give_the_serial_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut outs = Vec::new();
    for j in ["1", "2"] {
        let path = dir.path().join(format!("j{j}.json"));
        let p = path.to_str().expect("utf-8 path");
        let o = numalab(&[
            "run",
            "-m",
            "tiny-2n",
            "-w",
            "numa02",
            "-w",
            "numa01",
            "--iterations",
            "2",
            "--scale",
            "0.05",
            "-j",
            j,
            "--json",
            p,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        outs.push(std::fs::read(&path).expect("written"));
    }
    assert_eq!(outs[0], outs[1], "-j 1 and -j 2 differ");
    let set: serde_json::Value = serde_json::from_slice(&outs[0]).expect("json");
    assert_eq!(set["runs"].as_array().map(Vec::len), Some(4));
}

#[test]
fn bench_rejects_half_a_run_and_unknown_entries() {
    let o = numalab(&["bench", "-m", "tiny-2n"]);
    assert_eq!(o.status.code(), Some(2));
    let o = numalab(&["bench", "--only", "no-such-entry"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no suite entry"));
}

#[test]
fn bench_one_run_reports_its_figures_and_the_same_output_twice() {
    let o = numalab(&[
        "bench", "-m", "tiny-2n", "-w", "numa02", "--scale", "0.05", "--repeat", "2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("numa02"))
        .expect("a row");
    assert!(row.trim_end().ends_with("yes"), "{text}");
}

#[test]
fn bench_reports_the_cost_per_cpu_tick_and_per_step() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("bench.json");
    let o = numalab(&[
        "bench",
        "-m",
        "tiny-2n",
        "-w",
        "numa02",
        "--scale",
        "0.05",
        "--json",
        json.to_str().expect("utf-8 path"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("bench json")).expect("json");
    let best = &rows[0]["best"];
    let modeled = best["modeled_s"].as_f64().expect("modeled_s");
    // tiny-2n has 4 CPUs (2 nodes x 2); CONFIG_HZ is 250 by default.
    let ticks = best["cpu_ticks"].as_f64().expect("cpu_ticks");
    assert!(
        (ticks - 4.0 * 250.0 * modeled).abs() < 1e-6 * ticks,
        "{best}"
    );
    assert!(best["steps"].as_u64().expect("steps") > 0, "{best}");
    let text = String::from_utf8_lossy(&o.stdout);
    let header = text.lines().find(|l| l.starts_with("run")).expect("header");
    assert!(
        header.contains("ns/tick") && header.contains("ns/step"),
        "{text}"
    );
}

/// The README's compare of two RunSets of two workloads each: one row
/// block per workload (test), `n/a` where a column lacks a workload, and
/// still a refusal when the machines differ; `plot` draws a compare chart
/// per workload and names run figures by label, workload and seed.
#[test]
fn compare_and_plot_go_workload_by_workload() {
    let dir = std::env::temp_dir().join(format!("numalab-cli-cmp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |n: &str| dir.join(n).to_string_lossy().to_string();
    let (off, on, on1, other) = (
        path("off.json"),
        path("on.json"),
        path("on1.json"),
        path("other.json"),
    );
    let run = |machine: &str, workloads: &[&str], label: &str, nb: &str, json: &str| {
        let mut a = vec!["run", "-m", machine, "--iterations", "2", "--scale", "0.02"];
        for w in workloads {
            a.extend(["-w", w]);
        }
        let set = format!("kernel.numa_balancing={nb}");
        a.extend(["--label", label, "--set", &set, "--json", json]);
        let o = numalab(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run("tiny-2n", &["numa01", "numa02"], "off", "0", &off);
    run("tiny-2n", &["numa01", "numa02"], "on", "1", &on);
    run("tiny-2n", &["numa01"], "on", "1", &on1);
    run("4s-48", &["numa01", "numa02"], "on", "1", &other);

    // A row per workload in each statistic block, both columns filled.
    let o = numalab(&["compare", &off, &on]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let t = String::from_utf8_lossy(&o.stdout);
    for test in ["NUMA01", "NUMA02"] {
        for stat in ["Min", "Amean", "Max"] {
            let l = t
                .lines()
                .find(|l| l.starts_with(stat) && l.contains(&format!("elsp-{test} ")))
                .unwrap_or_else(|| panic!("no {stat} elsp-{test} row in:\n{t}"));
            assert_eq!(l.matches('%').count(), 2, "{l}");
            assert!(!l.contains("n/a"), "{l}");
        }
    }
    // A workload one column lacks: n/a in its rows, not an error.
    let o = numalab(&["compare", &off, &on1]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let t = String::from_utf8_lossy(&o.stdout);
    let l = t
        .lines()
        .find(|l| l.starts_with("Amean     elsp-NUMA02"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(l.trim_end().ends_with("n/a"), "{l}");
    assert!(t.contains("Duration and Ops: NUMA01 only"), "{t}");
    // Different machines: refused, unless forced.
    fails_with(
        &["compare", &off, &other],
        &["machine tiny-2n", "4s-48", "--force"],
    );
    let o = numalab(&["compare", "--force", &off, &other]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("warning: compare: machine"));

    let figs = path("figs");
    let o = numalab(&["plot", &off, &on, "-o", &figs, "--format", "svg"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    for f in [
        "compare-numa01.svg",
        "compare-numa02.svg",
        "compare-numa01-latency.svg",
        "off-numa01-seed1-task-nodes.svg",
        "on-numa02-seed2-latency.svg",
    ] {
        assert!(
            dir.join("figs").join(f).is_file(),
            "{f} missing; stderr {err}"
        );
    }
    assert!(!dir.join("figs").join("compare.svg").exists());
    // Model runs carry latency histograms: nothing skipped for them.
    assert!(!err.contains("skipped latency"), "{err}");
}

#[test]
fn a_real_or_guest_trace_refuses_an_event_it_would_leave_out() {
    // Before any guest boots or the host is touched: an event the model
    // does not know would silently be missing from the kernel's trace.
    let tail = [
        "-w",
        "numa02",
        "--trace",
        "x.trace",
        "--trace-events",
        "sched_wakeup_new,nosuch",
    ];
    for head in [&["real", "run"][..], &["vm", "run", "-m", "tiny-2n"][..]] {
        fails_with(&[head, &tail[..]].concat(), &["--trace-events", "nosuch"]);
    }
}

#[test]
fn a_policy_is_chosen_by_name_from_the_registry() {
    let o = numalab(&["list", "policies"]);
    assert!(o.status.success());
    let list = String::from_utf8_lossy(&o.stdout);
    let names: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names.first(), Some(&"mainline"), "{list}");
    let mut a = TINY_RUN.to_vec();
    a.extend(["--set", "numalab.policy=carrefour"]);
    let mut needles = vec!["numalab.policy=carrefour", "unknown NUMA balancing policy"];
    needles.extend(&names);
    fails_with(&a, &needles);
    // Every listed policy runs.
    for p in &names {
        let set = format!("numalab.policy={p}");
        let mut a = TINY_RUN.to_vec();
        a.extend(["--no-progress", "--set", &set]);
        let o = numalab(&a);
        assert!(
            o.status.success(),
            "{p}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn a_reproduction_under_an_ablation_names_it_and_refuses_a_bad_knob() {
    let args = [
        "--no-progress",
        "reproduce",
        "numa-balancing-threadlocal",
        "--scale",
        "0.02",
    ];
    let plain = numalab(&args);
    assert!(plain.status.success());
    let mut a = args.to_vec();
    a.extend(["--set", "kernel.numa_balancing=0"]);
    let off = numalab(&a);
    assert!(off.status.success());
    let (plain, off) = (
        String::from_utf8_lossy(&plain.stdout),
        String::from_utf8_lossy(&off.stdout),
    );
    assert!(
        off.contains("from seed 1, with --set kernel.numa_balancing=0\n"),
        "{off}"
    );
    assert!(!plain.contains("with --set"), "{plain}");
    // Balancing off in every configuration: the "on" runs change.
    assert_ne!(
        plain.lines().skip(4).collect::<Vec<_>>(),
        off.lines().skip(4).collect::<Vec<_>>()
    );
    a.extend(["--set", "numalab.nope=1"]);
    fails_with(&a, &["numalab.nope", "unknown knob"]);
}
