//! Built-in workloads: specs shipped inside the binary.
//!
//! Models the autonumabench tests as mmtests runs them (numa01,
//! numa01_THREAD_ALLOC = NUMA01_THREADLOCAL, numa02, numa02_SMT) and the
//! HARD_BIND / INVERSE_BIND builds of each, written from the
//! pholasek/autonuma-benchmark sources (`numa01.c`, `numa02.c`,
//! `preproc.awk`, `Makefile`); an OLTP-like service (docs/workloads.md);
//! `mixed-cgroups`, a gaining and a losing workload in two cgroups for
//! proposal 4's `per-cgroup-mixed`; `specjbb`, `specjbb-stw` and `specjbb-multi`,
//! SPECjbb2005-like JVMs for proposal 1 (with `[params]`); `pmbench` and
//! `pmbench-busy` for proposal 2; and the interleave presets of proposal 3.
//! Each preset is a TOML file in `crates/numalab-workload/presets/`,
//! embedded at build time; its comments say where every number comes from.
//!
//! Left out: autonumabench's `-DKVM` and `NO_BIND_FORCE_SAME_NODE`-less
//! numa01 builds, and perf-bench-numa.

use crate::spec::{parse, WorkloadError, WorkloadSpec};
use std::sync::OnceLock;

/// Preset names and their TOML text, in listing order.
const PRESETS: &[(&str, &str)] = &[
    ("numa01", include_str!("../presets/numa01.toml")),
    (
        "numa01-threadlocal",
        include_str!("../presets/numa01-threadlocal.toml"),
    ),
    ("numa02", include_str!("../presets/numa02.toml")),
    ("numa02-smt", include_str!("../presets/numa02-smt.toml")),
    (
        "numa01-hard-bind",
        include_str!("../presets/numa01-hard-bind.toml"),
    ),
    (
        "numa01-inverse-bind",
        include_str!("../presets/numa01-inverse-bind.toml"),
    ),
    (
        "numa01-threadlocal-hard-bind",
        include_str!("../presets/numa01-threadlocal-hard-bind.toml"),
    ),
    (
        "numa01-threadlocal-inverse-bind",
        include_str!("../presets/numa01-threadlocal-inverse-bind.toml"),
    ),
    (
        "numa02-hard-bind",
        include_str!("../presets/numa02-hard-bind.toml"),
    ),
    (
        "numa02-inverse-bind",
        include_str!("../presets/numa02-inverse-bind.toml"),
    ),
    (
        "numa02-smt-hard-bind",
        include_str!("../presets/numa02-smt-hard-bind.toml"),
    ),
    (
        "numa02-smt-inverse-bind",
        include_str!("../presets/numa02-smt-inverse-bind.toml"),
    ),
    ("oltp", include_str!("../presets/oltp.toml")),
    ("specjbb", include_str!("../presets/specjbb.toml")),
    (
        "specjbb-multi",
        include_str!("../presets/specjbb-multi.toml"),
    ),
    ("specjbb-stw", include_str!("../presets/specjbb-stw.toml")),
    (
        "mixed-cgroups",
        include_str!("../presets/mixed-cgroups.toml"),
    ),
    // Proposal 3 (issue 13): flagged interleave and its plain baselines.
    (
        "numa01-threadlocal-interleave",
        include_str!("../presets/numa01-threadlocal-interleave.toml"),
    ),
    (
        "numa01-threadlocal-interleave-plain",
        include_str!("../presets/numa01-threadlocal-interleave-plain.toml"),
    ),
    (
        "interleave-swap-example",
        include_str!("../presets/interleave-swap-example.toml"),
    ),
    (
        "interleave-swap-example-plain",
        include_str!("../presets/interleave-swap-example-plain.toml"),
    ),
    (
        "interleave-stride-aligned",
        include_str!("../presets/interleave-stride-aligned.toml"),
    ),
    (
        "interleave-stride-aligned-plain",
        include_str!("../presets/interleave-stride-aligned-plain.toml"),
    ),
    (
        "interleave-uniform",
        include_str!("../presets/interleave-uniform.toml"),
    ),
    (
        "interleave-uniform-plain",
        include_str!("../presets/interleave-uniform-plain.toml"),
    ),
    ("pmbench", include_str!("../presets/pmbench.toml")),
    ("pmbench-busy", include_str!("../presets/pmbench-busy.toml")),
];

/// Every preset as `(name, one-line description)`, in listing order.
pub fn list() -> Vec<(&'static str, &'static str)> {
    static DESCRIPTIONS: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();
    DESCRIPTIONS
        .get_or_init(|| {
            PRESETS
                .iter()
                .map(|(name, text)| {
                    let d = parse(text, name)
                        .map_or_else(|e| format!("(broken preset: {e})"), |s| s.description);
                    (*name, d)
                })
                .collect()
        })
        .iter()
        .map(|(n, d)| (*n, d.as_str()))
        .collect()
}

/// The TOML text of preset `name`, if there is one.
pub fn text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Loads a workload by preset name, else from a TOML file at that path.
/// A name that is neither gives [`WorkloadError::Unknown`].
/// `NAME:param=value,...` loads NAME and overrides its `[params]`.
pub fn load(name_or_path: &str) -> Result<WorkloadSpec, WorkloadError> {
    if text(name_or_path).is_none() && !std::path::Path::new(name_or_path).is_file() {
        if let Some((base, list)) = name_or_path.split_once(':') {
            let mut spec = load(base)?;
            spec.override_params(list)?;
            return Ok(spec);
        }
    }
    if let Some(t) = text(name_or_path) {
        return parse(t, name_or_path);
    }
    let path = std::path::Path::new(name_or_path);
    if !path.is_file() {
        return Err(WorkloadError::Unknown(name_or_path.to_string()));
    }
    let t = std::fs::read_to_string(path).map_err(|e| WorkloadError::Io {
        path: name_or_path.to_string(),
        message: e.to_string(),
    })?;
    parse(&t, name_or_path)
}
