//! Plausible ranges of workload constants and the check of cgroup `files`:
//! every workload spec in the repository still resolves on every preset
//! machine, a value outside its range is one error naming the field, the
//! value and the range, and `docs/workloads.md` carries the declared table.

use numalab_topology::presets as machines;
use numalab_workload::ranges::{range, WORKLOAD_RANGES};
use numalab_workload::spec::{parse, resolve};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn workload_files(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if name != "target" && !name.starts_with('.') {
                workload_files(&p, out);
            }
        } else if name.ends_with(".toml") {
            if let Ok(t) = std::fs::read_to_string(&p) {
                if t.lines().any(|l| l.trim() == "[[process]]") {
                    out.push((p, t));
                }
            }
        }
    }
}

#[test]
fn every_workload_spec_in_the_repository_resolves_on_every_preset() {
    let mut specs = Vec::new();
    workload_files(&repo().join("crates"), &mut specs);
    // 13 presets and the validate scenarios at least.
    assert!(specs.len() >= 18, "{}", specs.len());
    let ms: Vec<_> = machines::list()
        .iter()
        .map(|(n, _)| machines::load(n).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    for (p, t) in &specs {
        let origin = p.display().to_string();
        let s = parse(t, &origin).unwrap_or_else(|e| panic!("{e}"));
        // The validate scenarios are written for the 4-node guest: they must
        // parse everywhere, and resolve where they fit.
        let mut resolved = 0;
        for m in &ms {
            if resolve(&s, m, 1, 1.0).is_ok() {
                resolved += 1;
            }
        }
        assert!(resolved > 0, "{origin} resolves on no preset machine");
    }
}

const HEAD: &str = "[[process]]\nname = \"a\"\n[[process.region]]\nname = \"buf\"\nsize = \"1MiB\"\n[[process.thread]]\nname = \"t\"\n";

fn small() -> numalab_topology::Machine {
    machines::load("tiny-2n").unwrap()
}

/// The one-line error of parsing, then resolving, `text`.
fn error(text: &str) -> String {
    let e = match parse(text, "w.toml") {
        Err(e) => e,
        Ok(s) => match resolve(&s, &small(), 1, 1.0) {
            Err(e) => e,
            Ok(_) => panic!("accepted:\n{text}"),
        },
    }
    .to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    e
}

#[test]
fn a_value_outside_its_range_is_one_clear_error() {
    let phase = |p: &str| error(&format!("{HEAD}phases = [{p}]\n"));
    let f = "process[0].thread[0].phases[0]";
    let cases = [
        (phase("{ stream = \"buf\", passes = 10000000000 }"), format!("field `{f}.passes`: 1e10 is outside the plausible range [0, 1e9] passes")),
        (phase("{ random = \"buf\", accesses = 2000000000000 }"), format!("field `{f}.accesses`: 2e12 is outside the plausible range [0, 1e12] accesses")),
        (phase("{ random = \"buf\", accesses = 1, mlp = 1000 }"), format!("field `{f}.mlp`: 1000 is outside the plausible range [1, 256]")),
        (phase("{ random = \"buf\", accesses = 1, distribution = { zipf = 50 } }"), format!("field `{f}.distribution.zipf`: 50 is outside")),
        (phase("{ random = \"buf\", accesses = 1, distribution = { hot = 1e-9, probability = 0.5 } }"), format!("field `{f}.distribution.hot`: 1e-9 is outside")),
        (phase("{ compute = \"2000000s\" }"), format!("field `{f}.compute`: 2e15 is outside the plausible range [0, 8.64e13] ns")),
        (phase("{ sleep = \"100000s\" }"), format!("field `{f}.sleep`: 1e14 is outside")),
        (phase("{ repeat = 1000000000000, body = [{ compute = 1 }] }"), format!("field `{f}.repeat`: 1e12 is outside")),
        (error(&format!("duration = \"100000s\"\n{HEAD}phases = []\n")), "field `duration`".to_string()),
        (error(&HEAD.replace("name = \"t\"\n", "name = \"t\"\ncount = 100000\n")), "field `process[0].thread[0].count`: 100000 is outside the plausible range [0, 65536] threads".to_string()),
        (error(&HEAD.replace("name = \"a\"\n", "name = \"a\"\ncount = 100000\n")), "field `process[0].count`: 100000 is outside".to_string()),
    ];
    for (got, want) in cases {
        assert!(got.contains(&want), "{got}\nwant: {want}");
        assert!(got.starts_with("workload w.toml: "), "{got}");
    }
}

#[test]
fn values_at_the_edges_of_their_ranges_are_accepted() {
    let text = format!(
        "{HEAD}phases = [{{ stream = \"buf\", passes = 0 }}, {{ random = \"buf\", accesses = 1, mlp = 256, write_fraction = 1.0, distribution = {{ zipf = 10 }} }}, {{ sleep = \"86400s\" }}]\n"
    );
    let s = parse(&text, "w.toml").unwrap_or_else(|e| panic!("{e}"));
    resolve(&s, &small(), 1, 1.0).unwrap_or_else(|e| panic!("{e}"));
}

const CG: &str = "[[cgroup]]\npath = \"/g\"\n";
const PROC: &str = "[[process]]\nname = \"a\"\ncgroup = \"/g\"\n[[process.thread]]\nname = \"t\"\nphases = [{ compute = 1 }]\n";

#[test]
fn cgroup_files_are_checked_against_the_registry() {
    let e = error(&format!("{CG}files = {{ \"memory.max\" = \"1\" }}\n{PROC}"));
    assert!(
        e.contains("field `cgroup[0].files.\"memory.max\"`: unknown cgroup file 'memory.max': the model knows cpuset.cpus (cpu list), cpuset.mems (node list), cpu.numa_load_balance (0 or 1)"),
        "{e}"
    );
    let e = error(&format!(
        "{CG}files = {{ \"cpu.numa_load_balance\" = 2 }}\n{PROC}"
    ));
    assert!(
        e.contains("`cgroup[0].files.\"cpu.numa_load_balance\"`: '2' is not 0 or 1"),
        "{e}"
    );
    let e = error(&format!(
        "{CG}files = {{ \"cpuset.cpus\" = \"0-x\" }}\n{PROC}"
    ));
    assert!(
        e.contains("`cgroup[0].files.\"cpuset.cpus\"`: '0-x' is not a cpu list"),
        "{e}"
    );
    let e = error(&format!(
        "{CG}files = {{ \"cpuset.mems\" = \"x\" }}\n{PROC}"
    ));
    assert!(e.contains("`cgroup[0].files.\"cpuset.mems\"`"), "{e}");
    let e = error(&format!(
        "{CG}cpuset_cpus = \"0\"\nfiles = {{ \"cpuset.cpus\" = \"1\" }}\n{PROC}"
    ));
    assert!(e.contains("also given as `cpuset_cpus`"), "{e}");
}

#[test]
fn declared_cgroup_files_act_as_their_keys() {
    // The model and the real runner apply `cpuset_cpus`/`cpuset_mems`, so a
    // declared file in `files` becomes that key.
    let text = format!("{CG}files = {{ \"cpuset.cpus\" = \"1-2\", \"cpuset.mems\" = 1 }}\n{PROC}");
    let s = parse(&text, "w.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.cgroups[0].cpuset_cpus.as_deref(), Some("1-2"));
    assert_eq!(s.cgroups[0].cpuset_mems.as_deref(), Some("1"));
    assert!(s.cgroups[0].files.is_empty());
    let w = resolve(&s, &small(), 1, 1.0).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        w.cgroups[0].cpuset_cpus.as_ref().map(|c| c.to_string()),
        Some("1-2".to_string())
    );
    assert_eq!(w.cgroups[0].cpuset_mems, Some(vec![1]));
}

#[test]
fn ranges_are_sane_and_named_once() {
    for (i, r) in WORKLOAD_RANGES.iter().enumerate() {
        assert!(r.min >= 0.0 && r.min < r.max, "{r:?}");
        assert!(!r.unit.is_empty() && !r.why.is_empty(), "{r:?}");
        assert!(
            WORKLOAD_RANGES[..i].iter().all(|o| o.field != r.field),
            "{}",
            r.field
        );
        assert_eq!(range(r.field), r);
    }
}

#[test]
fn docs_carry_the_declared_table() {
    // NUMALAB_BLESS=1 rewrites the table in place instead of failing.
    let bless = std::env::var_os("NUMALAB_BLESS").is_some();
    let path = repo().join("docs/workloads.md");
    if let Err(e) = numalab_topology::ranges::check_doc_table(
        &path,
        "workload-ranges",
        "ranges::WORKLOAD_RANGES",
        WORKLOAD_RANGES,
        bless,
    ) {
        panic!("{e}");
    }
}
