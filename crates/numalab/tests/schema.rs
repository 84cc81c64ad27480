//! `numalab schema run|runset` and real outputs validated against it: a
//! model Run (the binary run on tiny-2n, small scale, with and without a
//! throughput score), a RunSet (`--iterations 2`), and a real-kind Run
//! (`tests/data/real-run.json`, written by `numalab real run`; a live real
//! run needs privileges a test cannot assume). A broken record must be
//! rejected, so the validation can fail.

use std::process::{Command, Output};

fn numalab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .output()
        .expect("run numalab")
}

fn stdout_json(args: &[&str]) -> serde_json::Value {
    let o = numalab(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON: {e}"))
}

/// A compiled schema of `numalab schema WHAT`.
struct Validator {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl Validator {
    fn new(what: &str) -> Validator {
        let o = numalab(&["schema", what]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.ends_with("}\n"), "pretty JSON with a trailing newline");
        let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
        let url = format!("urn:numalab:schema:{what}");
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(&url, schema)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let index = compiler
            .compile(&url, &mut schemas)
            .unwrap_or_else(|e| panic!("{what}: the schema does not compile: {e}"));
        Validator { schemas, index }
    }

    fn check(&self, v: &serde_json::Value) -> Result<(), String> {
        self.schemas
            .validate(v, self.index)
            .map_err(|e| format!("{e:#}"))
    }
}

const TINY: &[&str] = &["run", "-m", "tiny-2n", "--scale", "0.01", "--json", "-"];

fn model_run(workload: &str, extra: &[&str]) -> serde_json::Value {
    let mut a = TINY.to_vec();
    a.extend(["-w", workload]);
    a.extend(extra);
    stdout_json(&a)
}

#[test]
fn model_runs_runsets_and_real_runs_match_the_schema() {
    let run = Validator::new("run");
    let set = Validator::new("runset");
    let numa02 = model_run("numa02", &[]);
    let oltp = model_run("oltp", &[]);
    assert!(oltp["score"].is_object(), "oltp has a throughput score");
    let real: serde_json::Value = serde_json::from_str(include_str!("data/real-run.json")).unwrap();
    assert_eq!(real["kind"], "real");
    for (name, r) in [("numa02", &numa02), ("oltp", &oltp), ("real", &real)] {
        run.check(r).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(set.check(r).is_err(), "{name}: a Run is not a RunSet");
    }
    let runset = model_run("numa02", &["--iterations", "2", "--label", "two"]);
    assert_eq!(runset["runs"].as_array().map(Vec::len), Some(2));
    set.check(&runset).unwrap_or_else(|e| panic!("runset: {e}"));
    assert!(run.check(&runset).is_err(), "a RunSet is not a Run");
}

/// Breaks a record in one way.
type Breaker = fn(&mut serde_json::Value);

#[test]
fn broken_records_are_rejected() {
    let run = Validator::new("run");
    let good = model_run("numa02", &[]);
    run.check(&good).unwrap();
    let broken: [(&str, Breaker); 6] = [
        ("unknown kind", |v| v["kind"] = "simulated".into()),
        ("other format", |v| v["format"] = "numalab-runset".into()),
        ("no tasks", |v| {
            v.as_object_mut().unwrap().remove("tasks");
        }),
        ("elapsed as text", |v| v["elapsed_s"] = "12".into()),
        ("negative counter", |v| {
            v["vmstat"]["numa_hint_faults"] = (-1).into()
        }),
        ("row of text", |v| {
            v["timeseries"]["rows"][0][0] = "t".into()
        }),
    ];
    for (what, f) in broken {
        let mut v = good.clone();
        f(&mut v);
        assert!(run.check(&v).is_err(), "{what}: accepted");
    }
}

#[test]
fn an_unknown_schema_is_one_clear_error() {
    let o = numalab(&["schema", "runs"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.trim_end(),
        "numalab: error: schema runs: expected run or runset"
    );
    assert!(o.stdout.is_empty());
}
