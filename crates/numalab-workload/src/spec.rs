//! The workload spec language (TOML) and its resolution against a machine.
//!
//! Models what a benchmark's source and build step fix about a run: which
//! processes and threads exist, which memory each allocates and under which
//! policy, where threads may run, and what each does in order (stream over a
//! buffer like `bzero`, random cache-line accesses, compute, sleep,
//! `set_mempolicy`, `sched_setaffinity`, loops). [`parse`] reads and checks
//! the TOML into a [`WorkloadSpec`]; [`resolve`] evaluates every expression
//! for one machine, seed and scale into the engine's [`Workload`].
//!
//! Left out: the kernel's legality rules for policies and affinities (e.g.
//! MPOL_F_NUMA_BALANCING only with bind/preferred-many, an affinity outside
//! the cgroup's cpuset): the kernel model applies them when the workload makes
//! the call, so a spec may ask for what a proposal makes legal. Also left out:
//! `fork` after start, `munmap`, per-thread random seeds (the engine draws
//! random access addresses from its own seeded streams).
//!
//! The language is documented in `docs/workloads.md`.

use crate::expr::{self, Env, Kind};
use crate::model::{
    Cgroup, Distribution, NumaBalancingCtl, PageSize, Phase, PolicyMode, PolicySpec, Process,
    Region, Score, Thread, Workload,
};
use crate::ranges;
use numalab_knobs::cgroup::CgroupValue;
use numalab_topology::{CpuSet, Machine, NodeMask};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Base page size: regions and slices are counted in these.
pub const PAGE: u64 = 4096;
/// Transparent huge page size, the slice granularity of big `thp` regions.
pub const HPAGE: u64 = 2 << 20;

/// Most process instances a workload may have.
pub const MAX_PROCESSES: u64 = 1 << 16;
/// Most threads a workload may have in total.
pub const MAX_THREADS: u64 = 1 << 16;
/// Most resolved phases plus `for` iterations a workload may expand to.
pub const MAX_PHASES: u64 = 4_000_000;

/// Variables every expression may use, and that loop variables may not shadow.
pub const BUILTIN_VARS: &[&str] = &[
    "ncpus",
    "nnodes",
    "ncores",
    "cpus_per_node",
    "seed",
    "p",
    "np",
    "i",
    "n",
];

/// An error in a workload spec, its resolution, or the choice of workload.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The TOML did not parse, or a key or value type is wrong.
    #[error("workload {origin}: malformed TOML: {message}")]
    Toml {
        /// File name or preset name.
        origin: String,
        /// Parser message, with line and column.
        message: String,
    },
    /// A field has an impossible value.
    #[error("workload {origin}: field `{field}`: {message}")]
    Field {
        /// File name or preset name.
        origin: String,
        /// Dotted path of the field, e.g. `process[0].thread[1].phases[2].passes`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The `--scale` factor is outside (0, 1].
    #[error("--scale {0}: must be a number F with 0 < F <= 1")]
    Scale(f64),
    /// Not a preset and not an existing file.
    #[error("unknown workload '{0}': not a preset (see `numalab list workloads`) and not a file")]
    Unknown(String),
    /// A workload file exists but could not be read.
    #[error("workload {path}: cannot read the file: {message}")]
    Io {
        /// Path given.
        path: String,
        /// OS error.
        message: String,
    },
}

type Result<T> = std::result::Result<T, WorkloadError>;

// ---------------------------------------------------------------------------
// The checked spec (public)
// ---------------------------------------------------------------------------

/// A number field: a TOML integer, or a string holding an integer expression
/// (see `docs/workloads.md`, "Expressions").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Num {
    /// A plain integer (bytes, ns or a count, by field).
    Int(i64),
    /// An expression such as `"ncpus / 2"` or `"3GiB"`.
    Expr(String),
}

impl From<i64> for Num {
    fn from(v: i64) -> Self {
        Num::Int(v)
    }
}

impl From<&str> for Num {
    fn from(s: &str) -> Self {
        Num::Expr(s.to_string())
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Int(v) => write!(f, "{v}"),
            Num::Expr(s) => write!(f, "\"{s}\""),
        }
    }
}

/// A memory policy as written in a spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyValue {
    /// `"default"`: MPOL_DEFAULT without flags.
    Default,
    /// `{ mode = ..., nodes = ..., numa_balancing = ... }` (or `"local"`).
    Policy {
        /// Mode.
        mode: PolicyMode,
        /// Node list string (`"all"`, `"0-1,3"`, `"EXPR"`, `"EXPR..EXPR"`);
        /// `None` for default and local.
        nodes: Option<String>,
        /// MPOL_F_NUMA_BALANCING.
        numa_balancing: bool,
    },
}

/// Which bytes of a region a stream or random phase covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// The whole region.
    Whole,
    /// Slice `index` of `of` equal slices (in pages).
    Slice {
        /// Slice index, `0 <= index < of`.
        index: Num,
        /// Number of slices.
        of: Num,
    },
    /// An explicit byte range.
    Bytes {
        /// Start (default 0).
        offset: Option<Num>,
        /// Length (default: to the end of the region).
        len: Option<Num>,
    },
}

/// One step of a thread, as written.
#[derive(Clone, Debug, PartialEq)]
pub enum PhaseSpec {
    /// `{ stream = "REGION", passes, write, slice | offset/len }`.
    Stream {
        /// Region name.
        region: String,
        /// Number of passes (default 1).
        passes: Num,
        /// Writes (default true, like `bzero`).
        write: bool,
        /// Bytes covered.
        range: RangeSpec,
    },
    /// `{ random = "REGION", accesses, distribution, write_fraction, mlp, slice | offset/len }`.
    Random {
        /// Region name.
        region: String,
        /// Number of accesses.
        accesses: Num,
        /// Distribution (default uniform).
        distribution: Distribution,
        /// Share of writes (default 0).
        write_fraction: f64,
        /// Misses in flight (default 1).
        mlp: f64,
        /// Bytes covered.
        range: RangeSpec,
    },
    /// `{ compute = TIME }`.
    Compute(Num),
    /// `{ sleep = TIME }`.
    Sleep(Num),
    /// `{ set_mempolicy = POLICY }`.
    SetMempolicy(PolicyValue),
    /// `{ set_affinity = SET }`.
    SetAffinity(String),
    /// `{ set_numa_balancing = "default" | "enabled" | "disabled" }`:
    /// numalab's per-task control; also the thread key `numa_balancing`,
    /// which [`parse`] turns into a first phase.
    SetNumaBalancing(NumaBalancingCtl),
    /// `{ cgroup_write = "CGROUP:FILE=VALUE" }`: a write to a cgroup file
    /// during the run.
    CgroupWrite {
        /// Cgroup path.
        cgroup: String,
        /// File name.
        file: String,
        /// Value.
        value: String,
    },
    /// `{ repeat = COUNT, request, body }`.
    Repeat {
        /// Iterations.
        times: Num,
        /// Count each iteration as a request (throughput score).
        request: bool,
        /// Phases of one iteration.
        body: Vec<PhaseSpec>,
    },
    /// `{ for = "k", range = [A, B], body }`: unrolled at resolve time.
    For {
        /// Loop variable.
        var: String,
        /// First value.
        start: Num,
        /// One past the last value.
        end: Num,
        /// Phases, resolved once per value.
        body: Vec<PhaseSpec>,
    },
}

/// A `[[cgroup]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct CgroupSpec {
    /// Path such as `/mytest`.
    pub path: String,
    /// `cpuset.cpus` as a CPU set string.
    pub cpuset_cpus: Option<String>,
    /// `cpuset.mems` as a node list string.
    pub cpuset_mems: Option<String>,
    /// Other files to write: the declared flag files
    /// (`cpu.numa_load_balance`), checked and normalised to `0`/`1`; a
    /// spec's cpuset entries are folded into the keys above.
    pub files: BTreeMap<String, String>,
}

/// A `[[process.region]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionSpec {
    /// Name, unique in the process.
    pub name: String,
    /// Size in bytes.
    pub size: Num,
    /// Back with transparent huge pages.
    pub thp: bool,
    /// VMA policy (`mbind`).
    pub policy: Option<PolicyValue>,
}

/// A `[[process.thread]]` entry: a group of `count` alike threads.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadSpec {
    /// Group name; threads are `NAME.I` when `count > 1`.
    pub name: String,
    /// Number of threads (default 1).
    pub count: Num,
    /// Initial affinity, a CPU set string (default all).
    pub affinity: Option<String>,
    /// Initial task policy (default MPOL_DEFAULT).
    pub policy: Option<PolicyValue>,
    /// Name of an earlier group whose threads must all exit first.
    pub start_after: Option<String>,
    /// Phases.
    pub phases: Vec<PhaseSpec>,
}

/// A `[[process]]` entry: `count` alike process instances.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessSpec {
    /// Name; instances are `NAME.K` when `count > 1`.
    pub name: String,
    /// Number of instances (default 1).
    pub count: Num,
    /// Cgroup path (default `/`).
    pub cgroup: String,
    /// Regions.
    pub regions: Vec<RegionSpec>,
    /// Thread groups, in creation order.
    pub threads: Vec<ThreadSpec>,
}

/// A parsed and checked workload spec, not yet tied to a machine.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// Where the text came from (preset name or path), for error messages.
    pub origin: String,
    /// Name (default: the origin's file stem).
    pub name: String,
    /// One-line description.
    pub description: String,
    /// The benchmark test this workload measures (compare rows), e.g.
    /// `NUMA01` for numa01-hard-bind; default: the name.
    pub test: String,
    /// Score.
    pub score: Score,
    /// Stop after this much virtual time.
    pub duration: Option<Num>,
    /// Cgroups.
    pub cgroups: Vec<CgroupSpec>,
    /// Processes, in fork order.
    pub processes: Vec<ProcessSpec>,
    /// Named parameters (`[params]`, sorted by name) with their values:
    /// integer expressions over the built-in variables, usable in every
    /// other expression; a run may override them (`NAME:param=value`).
    pub params: Vec<(String, Num)>,
}

impl WorkloadSpec {
    /// Overrides parameters from `list` (`name=value[,name=value...]`, the
    /// part after `:` in a workload argument such as
    /// `specjbb:warehouses=24`). A name that is not a declared parameter or
    /// a value that is not an expression is an error naming it.
    pub fn override_params(&mut self, list: &str) -> Result<()> {
        for item in list.split(',').filter(|x| !x.trim().is_empty()) {
            let err = |message: String| WorkloadError::Field {
                origin: self.origin.clone(),
                field: format!("params.{}", item.split('=').next().unwrap_or("").trim()),
                message,
            };
            let Some((k, v)) = item.split_once('=') else {
                return Err(err(format!("'{item}' is not NAME=VALUE")));
            };
            let (k, v) = (k.trim(), v.trim());
            expr::parse(v).map_err(|m| err(format!("in \"{v}\": {m}")))?;
            let declared: Vec<String> = self.params.iter().map(|(n, _)| n.clone()).collect();
            let Some(slot) = self.params.iter_mut().find(|(n, _)| n == k) else {
                return Err(err(format!(
                    "no parameter '{k}' in this workload (it has: {})",
                    if declared.is_empty() {
                        "none".to_string()
                    } else {
                        declared.join(", ")
                    }
                )));
            };
            slot.1 = Num::Expr(v.to_string());
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The raw TOML form (private)
// ---------------------------------------------------------------------------

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or a string expression")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Num, E> {
                Ok(Num::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Num, E> {
                i64::try_from(v)
                    .map(Num::Int)
                    .map_err(|_| E::custom("integer does not fit in 64 bits"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Num, E> {
                Ok(Num::Expr(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A string, or an integer or boolean taken as its text.
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Text, E> {
                Ok(Text(if v { "1" } else { "0" }.to_string()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Text, E> {
                Ok(Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

fn opt_text<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<String>, D::Error> {
    Ok(Some(Text::deserialize(d)?.0))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicyTable {
    mode: String,
    #[serde(default, deserialize_with = "opt_text")]
    nodes: Option<String>,
    #[serde(default)]
    numa_balancing: bool,
}

/// A field written either as a word or as a table, e.g. `policy = "local"`
/// or `policy = { mode = "bind", nodes = "0" }`.
enum NameOr<T> {
    Name(String),
    Table(T),
}

/// What a [`NameOr`] field accepts, for serde's "invalid type" message.
trait Expecting {
    const EXPECTING: &'static str;
}

impl<'de, T: Deserialize<'de> + Expecting> Deserialize<'de> for NameOr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Expecting> Visitor<'de> for V<T> {
            type Value = NameOr<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(T::EXPECTING)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<NameOr<T>, E> {
                Ok(NameOr::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                m: A,
            ) -> std::result::Result<NameOr<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(m)).map(NameOr::Table)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl Expecting for RawPolicyTable {
    const EXPECTING: &'static str =
        "\"default\", \"local\" or a table { mode, nodes, numa_balancing }";
}

type RawPolicy = NameOr<RawPolicyTable>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDistTable {
    zipf: Option<f64>,
    hot: Option<f64>,
    probability: Option<f64>,
}

impl Expecting for RawDistTable {
    const EXPECTING: &'static str = "\"uniform\", { zipf = S } or { hot = F, probability = P }";
}

type RawDist = NameOr<RawDistTable>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Option<String>,
    description: Option<String>,
    test: Option<String>,
    score: Option<String>,
    duration: Option<Num>,
    #[serde(default)]
    cgroup: Vec<RawCgroup>,
    #[serde(default)]
    process: Vec<RawProcess>,
    #[serde(default)]
    params: BTreeMap<String, Num>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCgroup {
    path: String,
    #[serde(default, deserialize_with = "opt_text")]
    cpuset_cpus: Option<String>,
    #[serde(default, deserialize_with = "opt_text")]
    cpuset_mems: Option<String>,
    #[serde(default)]
    files: BTreeMap<String, Text>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProcess {
    name: String,
    count: Option<Num>,
    cgroup: Option<String>,
    #[serde(default)]
    region: Vec<RawRegion>,
    #[serde(default)]
    thread: Vec<RawThread>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegion {
    name: String,
    size: Num,
    #[serde(default)]
    thp: bool,
    policy: Option<RawPolicy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawThread {
    name: String,
    count: Option<Num>,
    #[serde(default, deserialize_with = "opt_text")]
    affinity: Option<String>,
    policy: Option<RawPolicy>,
    start_after: Option<String>,
    numa_balancing: Option<String>,
    #[serde(default)]
    phases: Vec<RawPhase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    // verbs
    stream: Option<String>,
    random: Option<String>,
    compute: Option<Num>,
    sleep: Option<Num>,
    set_mempolicy: Option<RawPolicy>,
    #[serde(default, deserialize_with = "opt_text")]
    set_affinity: Option<String>,
    set_numa_balancing: Option<String>,
    cgroup_write: Option<String>,
    repeat: Option<Num>,
    #[serde(rename = "for")]
    for_: Option<String>,
    // modifiers
    passes: Option<Num>,
    write: Option<bool>,
    slice: Option<Vec<Num>>,
    offset: Option<Num>,
    len: Option<Num>,
    accesses: Option<Num>,
    distribution: Option<RawDist>,
    write_fraction: Option<f64>,
    mlp: Option<f64>,
    request: Option<bool>,
    range: Option<Vec<Num>>,
    body: Option<Vec<RawPhase>>,
}

const VERBS: &[&str] = &[
    "stream",
    "random",
    "compute",
    "sleep",
    "set_mempolicy",
    "set_affinity",
    "set_numa_balancing",
    "cgroup_write",
    "repeat",
    "for",
];

impl RawPhase {
    fn verbs(&self) -> Vec<&'static str> {
        let present = [
            self.stream.is_some(),
            self.random.is_some(),
            self.compute.is_some(),
            self.sleep.is_some(),
            self.set_mempolicy.is_some(),
            self.set_affinity.is_some(),
            self.set_numa_balancing.is_some(),
            self.cgroup_write.is_some(),
            self.repeat.is_some(),
            self.for_.is_some(),
        ];
        VERBS
            .iter()
            .zip(present)
            .filter_map(|(v, p)| p.then_some(*v))
            .collect()
    }

    fn modifiers(&self) -> Vec<&'static str> {
        let present = [
            ("passes", self.passes.is_some()),
            ("write", self.write.is_some()),
            ("slice", self.slice.is_some()),
            ("offset", self.offset.is_some()),
            ("len", self.len.is_some()),
            ("accesses", self.accesses.is_some()),
            ("distribution", self.distribution.is_some()),
            ("write_fraction", self.write_fraction.is_some()),
            ("mlp", self.mlp.is_some()),
            ("request", self.request.is_some()),
            ("range", self.range.is_some()),
            ("body", self.body.is_some()),
        ];
        present
            .iter()
            .filter_map(|(m, p)| p.then_some(*m))
            .collect()
    }
}

// ---------------------------------------------------------------------------
// parse
// ---------------------------------------------------------------------------

/// A cgroup's `cpuset_cpus`, `cpuset_mems` and flag files, as
/// [`Checker::cgroup_files`] folds them.
type CgroupFiles = (Option<String>, Option<String>, BTreeMap<String, String>);

struct Checker<'a> {
    origin: &'a str,
}

impl Checker<'_> {
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> WorkloadError {
        WorkloadError::Field {
            origin: self.origin.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// `v` checked against the plausible range of `key`
    /// ([`ranges::WORKLOAD_RANGES`]), the error naming `field`.
    fn ranged(&self, key: &str, field: &str, v: f64) -> Result<f64> {
        ranges::range(key)
            .check(v)
            .map(|()| v)
            .map_err(|m| self.err(field, m))
    }

    fn num(&self, n: &Num, field: &str) -> Result<()> {
        if let Num::Expr(s) = n {
            expr::parse(s).map_err(|m| self.err(field, format!("in \"{s}\": {m}")))?;
        }
        Ok(())
    }

    fn cpuset(&self, s: &str, field: &str) -> Result<()> {
        expr::check_cpuset(s).map_err(|m| self.err(field, m))
    }

    fn nodes(&self, s: &str, field: &str) -> Result<()> {
        expr::check_nodes(s).map_err(|m| self.err(field, m))
    }

    fn name(&self, s: &str, field: &str) -> Result<()> {
        if s.is_empty()
            || !s
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(self.err(
                field,
                format!("'{s}' is not a name (letters, digits, '_', '-', '.')"),
            ));
        }
        Ok(())
    }

    fn policy(&self, p: RawPolicy, field: &str) -> Result<PolicyValue> {
        let (mode, nodes, numa_balancing, mode_field) = match p {
            NameOr::Name(s) => (s, None, false, field.to_string()),
            NameOr::Table(t) => (t.mode, t.nodes, t.numa_balancing, format!("{field}.mode")),
        };
        let mode = match mode.as_str() {
            "default" => PolicyMode::Default,
            "bind" => PolicyMode::Bind,
            "preferred" => PolicyMode::Preferred,
            "preferred-many" => PolicyMode::PreferredMany,
            "interleave" => PolicyMode::Interleave,
            "local" => PolicyMode::Local,
            other => {
                return Err(self.err(
                    mode_field,
                    format!(
                        "unknown mode '{other}' (default, bind, preferred, preferred-many, interleave, local)"
                    ),
                ))
            }
        };
        match (mode, &nodes) {
            (PolicyMode::Default | PolicyMode::Local, Some(_)) => {
                return Err(self.err(
                    format!("{field}.nodes"),
                    format!("mode '{}' takes no nodes", mode_name(mode)),
                ))
            }
            (PolicyMode::Default | PolicyMode::Local, None) => {}
            (_, None) => {
                return Err(self.err(
                    field,
                    format!(
                        "mode '{}' needs nodes: write {{ mode = \"{}\", nodes = \"...\" }}",
                        mode_name(mode),
                        mode_name(mode)
                    ),
                ))
            }
            (_, Some(s)) => self.nodes(s, &format!("{field}.nodes"))?,
        }
        if mode == PolicyMode::Default && !numa_balancing {
            return Ok(PolicyValue::Default);
        }
        Ok(PolicyValue::Policy {
            mode,
            nodes,
            numa_balancing,
        })
    }

    fn distribution(&self, d: RawDist, field: &str) -> Result<Distribution> {
        match d {
            NameOr::Name(s) if s == "uniform" => Ok(Distribution::Uniform),
            NameOr::Name(s) => Err(self.err(
                field,
                format!("unknown distribution '{s}' (\"uniform\", {{ zipf = S }}, {{ hot = F, probability = P }})"),
            )),
            NameOr::Table(t) => match (t.zipf, t.hot, t.probability) {
                (Some(s), None, None) => {
                    if !(s.is_finite() && s > 0.0) {
                        return Err(self.err(format!("{field}.zipf"), format!("{s}: must be > 0")));
                    }
                    let s = self.ranged("random.distribution.zipf", &format!("{field}.zipf"), s)?;
                    Ok(Distribution::Zipf { s })
                }
                (None, Some(h), Some(p)) => {
                    if !(h > 0.0 && h <= 1.0) {
                        return Err(self.err(format!("{field}.hot"), format!("{h}: must be in (0, 1]")));
                    }
                    if !(0.0..=1.0).contains(&p) {
                        return Err(self.err(
                            format!("{field}.probability"),
                            format!("{p}: must be in [0, 1]"),
                        ));
                    }
                    let h = self.ranged("random.distribution.hot", &format!("{field}.hot"), h)?;
                    let p = self.ranged(
                        "random.distribution.probability",
                        &format!("{field}.probability"),
                        p,
                    )?;
                    Ok(Distribution::Hot {
                        fraction: h,
                        probability: p,
                    })
                }
                _ => Err(self.err(
                    field,
                    "expected { zipf = S } or { hot = F, probability = P }",
                )),
            },
        }
    }

    fn range(&self, ph: &mut RawPhase, field: &str) -> Result<RangeSpec> {
        let slice = ph.slice.take();
        let offset = ph.offset.take();
        let len = ph.len.take();
        match (slice, offset.is_some() || len.is_some()) {
            (Some(_), true) => Err(self.err(
                format!("{field}.slice"),
                "give either slice or offset/len, not both",
            )),
            (Some(v), false) => {
                let [index, of]: [Num; 2] = v.try_into().map_err(|v: Vec<Num>| {
                    self.err(
                        format!("{field}.slice"),
                        format!("expected [INDEX, OF], got {} items", v.len()),
                    )
                })?;
                self.num(&index, &format!("{field}.slice[0]"))?;
                self.num(&of, &format!("{field}.slice[1]"))?;
                Ok(RangeSpec::Slice { index, of })
            }
            (None, true) => {
                if let Some(o) = &offset {
                    self.num(o, &format!("{field}.offset"))?;
                }
                if let Some(l) = &len {
                    self.num(l, &format!("{field}.len"))?;
                }
                Ok(RangeSpec::Bytes { offset, len })
            }
            (None, false) => Ok(RangeSpec::Whole),
        }
    }

    fn phases(
        &self,
        raw: Vec<RawPhase>,
        field: &str,
        regions: &[String],
        loops: &mut Vec<String>,
    ) -> Result<Vec<PhaseSpec>> {
        raw.into_iter()
            .enumerate()
            .map(|(k, ph)| self.phase(ph, &format!("{field}[{k}]"), regions, loops))
            .collect()
    }

    fn region_name(&self, name: &str, regions: &[String], field: &str) -> Result<()> {
        if !regions.iter().any(|r| r == name) {
            return Err(self.err(
                field,
                format!(
                    "no region named '{name}' in this process (regions: {})",
                    if regions.is_empty() {
                        "none".to_string()
                    } else {
                        regions.join(", ")
                    }
                ),
            ));
        }
        Ok(())
    }

    fn phase(
        &self,
        mut ph: RawPhase,
        field: &str,
        regions: &[String],
        loops: &mut Vec<String>,
    ) -> Result<PhaseSpec> {
        let verbs = ph.verbs();
        let verb = match verbs.as_slice() {
            [v] => *v,
            [] => {
                return Err(self.err(
                    field,
                    format!("a phase needs exactly one of: {}", VERBS.join(", ")),
                ))
            }
            many => {
                return Err(self.err(
                    field,
                    format!("a phase takes exactly one verb, found {}", many.join(", ")),
                ))
            }
        };
        let allowed: &[&str] = match verb {
            "stream" => &["passes", "write", "slice", "offset", "len"],
            "random" => &[
                "accesses",
                "distribution",
                "write_fraction",
                "mlp",
                "slice",
                "offset",
                "len",
            ],
            "repeat" => &["request", "body"],
            "for" => &["range", "body"],
            _ => &[],
        };
        if let Some(m) = ph.modifiers().into_iter().find(|m| !allowed.contains(m)) {
            return Err(self.err(
                format!("{field}.{m}"),
                format!("`{m}` does not apply to a `{verb}` phase"),
            ));
        }
        let vf = format!("{field}.{verb}");
        Ok(match verb {
            "stream" => {
                let region = ph.stream.take().unwrap_or_default();
                self.region_name(&region, regions, &vf)?;
                let passes = ph.passes.take().unwrap_or(Num::Int(1));
                self.num(&passes, &format!("{field}.passes"))?;
                PhaseSpec::Stream {
                    region,
                    passes,
                    write: ph.write.unwrap_or(true),
                    range: self.range(&mut ph, field)?,
                }
            }
            "random" => {
                let region = ph.random.take().unwrap_or_default();
                self.region_name(&region, regions, &vf)?;
                let accesses = ph.accesses.take().ok_or_else(|| {
                    self.err(
                        format!("{field}.accesses"),
                        "a random phase needs `accesses`",
                    )
                })?;
                self.num(&accesses, &format!("{field}.accesses"))?;
                let distribution = match ph.distribution.take() {
                    Some(d) => self.distribution(d, &format!("{field}.distribution"))?,
                    None => Distribution::Uniform,
                };
                let write_fraction = ph.write_fraction.unwrap_or(0.0);
                if !(0.0..=1.0).contains(&write_fraction) {
                    return Err(self.err(
                        format!("{field}.write_fraction"),
                        format!("{write_fraction}: must be in [0, 1]"),
                    ));
                }
                let write_fraction = self.ranged(
                    "random.write_fraction",
                    &format!("{field}.write_fraction"),
                    write_fraction,
                )?;
                let mlp = ph.mlp.unwrap_or(1.0);
                if !(mlp.is_finite() && mlp >= 1.0) {
                    return Err(self.err(format!("{field}.mlp"), format!("{mlp}: must be >= 1")));
                }
                let mlp = self.ranged("random.mlp", &format!("{field}.mlp"), mlp)?;
                PhaseSpec::Random {
                    region,
                    accesses,
                    distribution,
                    write_fraction,
                    mlp,
                    range: self.range(&mut ph, field)?,
                }
            }
            "compute" | "sleep" => {
                let t = ph.compute.take().or(ph.sleep.take()).unwrap_or(Num::Int(0));
                self.num(&t, &vf)?;
                if verb == "compute" {
                    PhaseSpec::Compute(t)
                } else {
                    PhaseSpec::Sleep(t)
                }
            }
            "set_mempolicy" => {
                let p = ph.set_mempolicy.take().map(|p| self.policy(p, &vf));
                PhaseSpec::SetMempolicy(p.unwrap_or(Ok(PolicyValue::Default))?)
            }
            "set_affinity" => {
                let s = ph.set_affinity.take().unwrap_or_default();
                self.cpuset(&s, &vf)?;
                PhaseSpec::SetAffinity(s)
            }
            "set_numa_balancing" => {
                let w = ph.set_numa_balancing.take().unwrap_or_default();
                PhaseSpec::SetNumaBalancing(self.numa_ctl(&w, &vf)?)
            }
            "cgroup_write" => {
                let w = ph.cgroup_write.take().unwrap_or_default();
                self.cgroup_write(&w, &vf)?
            }
            "repeat" => {
                let times = ph.repeat.take().unwrap_or(Num::Int(1));
                self.num(&times, &vf)?;
                let body = ph.body.take().ok_or_else(|| {
                    self.err(format!("{field}.body"), "a repeat phase needs `body`")
                })?;
                PhaseSpec::Repeat {
                    times,
                    request: ph.request.unwrap_or(false),
                    body: self.phases(body, &format!("{field}.body"), regions, loops)?,
                }
            }
            _ => {
                let var = ph.for_.take().unwrap_or_default();
                if !expr::is_identifier(&var) {
                    return Err(self.err(&vf, format!("'{var}' is not a variable name")));
                }
                if BUILTIN_VARS.contains(&var.as_str()) || loops.contains(&var) {
                    return Err(self.err(
                        &vf,
                        format!("loop variable '{var}' would shadow a variable already defined"),
                    ));
                }
                if expr::is_unit(&var) {
                    return Err(self.err(&vf, format!("'{var}' is a unit name")));
                }
                let range = ph.range.take().ok_or_else(|| {
                    self.err(
                        format!("{field}.range"),
                        "a for phase needs `range = [START, END]`",
                    )
                })?;
                let [start, end]: [Num; 2] = range.try_into().map_err(|v: Vec<Num>| {
                    self.err(
                        format!("{field}.range"),
                        format!("expected [START, END], got {} items", v.len()),
                    )
                })?;
                self.num(&start, &format!("{field}.range[0]"))?;
                self.num(&end, &format!("{field}.range[1]"))?;
                let body = ph
                    .body
                    .take()
                    .ok_or_else(|| self.err(format!("{field}.body"), "a for phase needs `body`"))?;
                loops.push(var.clone());
                let body = self.phases(body, &format!("{field}.body"), regions, loops);
                loops.pop();
                PhaseSpec::For {
                    var,
                    start,
                    end,
                    body: body?,
                }
            }
        })
    }

    /// A `numa_balancing` word (numalab's per-task control).
    fn numa_ctl(&self, w: &str, field: &str) -> Result<NumaBalancingCtl> {
        NumaBalancingCtl::from_word(w).ok_or_else(|| {
            self.err(
                field,
                format!("'{w}' is not one of default, enabled, disabled"),
            )
        })
    }

    /// A `cgroup_write = "CGROUP:FILE=VALUE"` phase: the file must be one
    /// the registry lets a phase write during a run, the value of its kind.
    /// Whether the cgroup exists is checked once all cgroups are known
    /// ([`Checker::spec`]).
    fn cgroup_write(&self, w: &str, field: &str) -> Result<PhaseSpec> {
        let bad = || self.err(field, format!("'{w}': expected \"CGROUP:FILE=VALUE\""));
        let (key, value) = w.split_once('=').ok_or_else(bad)?;
        let (cgroup, file) = key.trim().split_once(':').ok_or_else(bad)?;
        if cgroup != "/" {
            self.cgroup_path(cgroup, field)?;
        }
        let decl = numalab_knobs::cgroup::cgroup_file(file)
            .ok_or_else(|| self.err(field, format!("unknown cgroup file '{file}'")))?;
        if !decl.during_run {
            let ok: Vec<&str> = numalab_knobs::cgroup::CGROUP_FILES
                .iter()
                .filter(|f| f.during_run)
                .map(|f| f.name)
                .collect();
            return Err(self.err(
                field,
                format!(
                    "{file} is set before the run starts (as a `[[cgroup]]` key or --set), not by a phase; a phase may write {}",
                    ok.join(", ")
                ),
            ));
        }
        let value = match decl.value {
            CgroupValue::Flag => {
                let on = CgroupValue::check_flag(value).map_err(|e| self.err(field, e))?;
                if on { "1" } else { "0" }.to_string()
            }
            CgroupValue::CpuList | CgroupValue::NodeList => value.trim().to_string(),
        };
        Ok(PhaseSpec::CgroupWrite {
            cgroup: cgroup.to_string(),
            file: file.to_string(),
            value,
        })
    }

    fn cgroup_path(&self, path: &str, field: &str) -> Result<()> {
        let Some(rest) = path.strip_prefix('/') else {
            return Err(self.err(field, format!("'{path}' must start with '/'")));
        };
        if rest.is_empty() {
            return Err(self.err(
                field,
                "the root cgroup '/' always exists; declare only cgroups below it",
            ));
        }
        for comp in rest.split('/') {
            if comp.is_empty()
                || comp == "."
                || comp == ".."
                || !comp
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            {
                return Err(self.err(field, format!("'{path}': '{comp}' is not a cgroup name")));
            }
        }
        Ok(())
    }

    /// Checks a cgroup's `files` against the knob registry's declared
    /// cgroup files (`numalab_knobs::cgroup::CGROUP_FILES`): an unknown file,
    /// a value of the wrong kind, or a file also set by its own key is an
    /// error. The cpuset files have their own keys, so their values are
    /// folded into `cpuset_cpus` / `cpuset_mems`; flag files
    /// (`cpu.numa_load_balance`) stay in `files`, normalised to `0`/`1`.
    /// The model and the real runner both apply all three. Returns the two
    /// keys and the flag files.
    fn cgroup_files(&self, c: &RawCgroup, f: &str) -> Result<CgroupFiles> {
        let mut cpus = c.cpuset_cpus.clone();
        let mut mems = c.cpuset_mems.clone();
        let mut flags = BTreeMap::new();
        for (name, Text(value)) in &c.files {
            let ff = format!("{f}.files.\"{name}\"");
            let Some(decl) = numalab_knobs::cgroup::cgroup_file(name) else {
                let known: Vec<String> = numalab_knobs::cgroup::CGROUP_FILES
                    .iter()
                    .map(|d| format!("{} ({})", d.name, d.value.as_str()))
                    .collect();
                return Err(self.err(
                    ff,
                    format!(
                        "unknown cgroup file '{name}': the model knows {}",
                        known.join(", ")
                    ),
                ));
            };
            let (slot, key) = match decl.value {
                CgroupValue::CpuList => {
                    CpuSet::parse_list(value)
                        .map_err(|e| self.err(&ff, format!("'{value}' is not a cpu list: {e}")))?;
                    (&mut cpus, "cpuset_cpus")
                }
                CgroupValue::NodeList => {
                    NodeMask::parse_list(value)
                        .map_err(|e| self.err(&ff, format!("'{value}' is not a node list: {e}")))?;
                    (&mut mems, "cpuset_mems")
                }
                CgroupValue::Flag => {
                    let on = CgroupValue::check_flag(value).map_err(|e| self.err(&ff, e))?;
                    flags.insert(name.clone(), if on { "1" } else { "0" }.to_string());
                    continue;
                }
            };
            if slot.is_some() {
                return Err(self.err(ff, format!("{name} is also given as `{key}`: give it once")));
            }
            *slot = Some(value.clone());
        }
        Ok((cpus, mems, flags))
    }

    /// Checks that every `cgroup_write` in `ph` names `/` or a declared
    /// cgroup.
    fn cgroup_writes_exist(
        &self,
        ph: &PhaseSpec,
        paths: &BTreeSet<String>,
        field: &str,
    ) -> Result<()> {
        match ph {
            PhaseSpec::CgroupWrite { cgroup, .. } => {
                let known = cgroup == "/"
                    || paths
                        .iter()
                        .any(|c| c == cgroup || c.starts_with(&format!("{cgroup}/")));
                if !known {
                    return Err(self.err(
                        format!("{field}.cgroup_write"),
                        format!("cgroup '{cgroup}' is not declared in [[cgroup]]"),
                    ));
                }
                Ok(())
            }
            PhaseSpec::Repeat { body, .. } | PhaseSpec::For { body, .. } => {
                for (k, b) in body.iter().enumerate() {
                    self.cgroup_writes_exist(b, paths, &format!("{field}.body[{k}]"))?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn spec(&self, raw: RawSpec) -> Result<WorkloadSpec> {
        let name = match raw.name {
            Some(n) => {
                if n.trim().is_empty() {
                    return Err(self.err("name", "must not be empty"));
                }
                n
            }
            None => std::path::Path::new(self.origin).file_stem().map_or_else(
                || self.origin.to_string(),
                |s| s.to_string_lossy().into_owned(),
            ),
        };
        let score = match raw.score.as_deref() {
            None | Some("elapsed") => Score::Elapsed,
            Some("throughput") => Score::Throughput,
            Some(other) => {
                return Err(self.err(
                    "score",
                    format!("unknown score '{other}' (elapsed, throughput)"),
                ))
            }
        };
        for (k, v) in &raw.params {
            let field = format!("params.{k}");
            if !expr::is_identifier(k) || expr::is_unit(k) || BUILTIN_VARS.contains(&k.as_str()) {
                return Err(self.err(
                    &field,
                    format!("'{k}' is not a parameter name (an identifier, not a unit or built-in variable)"),
                ));
            }
            self.num(v, &field)?;
        }
        if let Some(d) = &raw.duration {
            self.num(d, "duration")?;
        }
        let mut cgroups = Vec::new();
        let mut paths = BTreeSet::new();
        for (k, c) in raw.cgroup.into_iter().enumerate() {
            let f = format!("cgroup[{k}]");
            self.cgroup_path(&c.path, &format!("{f}.path"))?;
            if !paths.insert(c.path.clone()) {
                return Err(self.err(
                    format!("{f}.path"),
                    format!("cgroup '{}' is declared twice", c.path),
                ));
            }
            let (cpuset_cpus, cpuset_mems, files) = self.cgroup_files(&c, &f)?;
            if let Some(s) = &cpuset_cpus {
                self.cpuset(s, &format!("{f}.cpuset_cpus"))?;
            }
            if let Some(s) = &cpuset_mems {
                self.nodes(s, &format!("{f}.cpuset_mems"))?;
            }
            cgroups.push(CgroupSpec {
                path: c.path,
                cpuset_cpus,
                cpuset_mems,
                files,
            });
        }
        let mut processes = Vec::new();
        let mut pnames = BTreeSet::new();
        for (pi, p) in raw.process.into_iter().enumerate() {
            let f = format!("process[{pi}]");
            self.name(&p.name, &format!("{f}.name"))?;
            if !pnames.insert(p.name.clone()) {
                return Err(self.err(
                    format!("{f}.name"),
                    format!("process name '{}' is used twice", p.name),
                ));
            }
            let count = p.count.unwrap_or(Num::Int(1));
            self.num(&count, &format!("{f}.count"))?;
            let cgroup = p.cgroup.unwrap_or_else(|| "/".to_string());
            let known = cgroup == "/"
                || paths
                    .iter()
                    .any(|c| c == &cgroup || c.starts_with(&format!("{cgroup}/")));
            if !known {
                return Err(self.err(
                    format!("{f}.cgroup"),
                    format!("no cgroup '{cgroup}' is declared (add a [[cgroup]] with that path)"),
                ));
            }
            let mut regions = Vec::new();
            let mut rnames: Vec<String> = Vec::new();
            for (ri, r) in p.region.into_iter().enumerate() {
                let rf = format!("{f}.region[{ri}]");
                self.name(&r.name, &format!("{rf}.name"))?;
                if rnames.contains(&r.name) {
                    return Err(self.err(
                        format!("{rf}.name"),
                        format!("region name '{}' is used twice", r.name),
                    ));
                }
                rnames.push(r.name.clone());
                self.num(&r.size, &format!("{rf}.size"))?;
                let policy = r
                    .policy
                    .map(|pv| self.policy(pv, &format!("{rf}.policy")))
                    .transpose()?;
                regions.push(RegionSpec {
                    name: r.name,
                    size: r.size,
                    thp: r.thp,
                    policy,
                });
            }
            let mut threads = Vec::new();
            let mut gnames: Vec<String> = Vec::new();
            for (ti, t) in p.thread.into_iter().enumerate() {
                let tf = format!("{f}.thread[{ti}]");
                self.name(&t.name, &format!("{tf}.name"))?;
                if gnames.contains(&t.name) {
                    return Err(self.err(
                        format!("{tf}.name"),
                        format!("thread group name '{}' is used twice", t.name),
                    ));
                }
                let count = t.count.unwrap_or(Num::Int(1));
                self.num(&count, &format!("{tf}.count"))?;
                if let Some(a) = &t.affinity {
                    self.cpuset(a, &format!("{tf}.affinity"))?;
                }
                let policy = t
                    .policy
                    .map(|pv| self.policy(pv, &format!("{tf}.policy")))
                    .transpose()?;
                if let Some(g) = &t.start_after {
                    if !gnames.contains(g) {
                        return Err(self.err(
                            format!("{tf}.start_after"),
                            format!("no earlier thread group named '{g}' in this process"),
                        ));
                    }
                }
                let mut phases =
                    self.phases(t.phases, &format!("{tf}.phases"), &rnames, &mut Vec::new())?;
                // The per-task control as the thread's first act (numalab's
                // prctl; the kernel would have it inherited at clone).
                if let Some(w) = &t.numa_balancing {
                    let c = self.numa_ctl(w, &format!("{tf}.numa_balancing"))?;
                    phases.insert(0, PhaseSpec::SetNumaBalancing(c));
                }
                for (k, ph) in phases.iter().enumerate() {
                    self.cgroup_writes_exist(ph, &paths, &format!("{tf}.phases[{k}]"))?;
                }
                gnames.push(t.name.clone());
                threads.push(ThreadSpec {
                    name: t.name,
                    count,
                    affinity: t.affinity,
                    policy,
                    start_after: t.start_after,
                    phases,
                });
            }
            processes.push(ProcessSpec {
                name: p.name,
                count,
                cgroup,
                regions,
                threads,
            });
        }
        Ok(WorkloadSpec {
            origin: self.origin.to_string(),
            test: raw
                .test
                .unwrap_or_else(|| name.to_uppercase().replace('-', "_")),
            name,
            description: raw.description.unwrap_or_default(),
            score,
            duration: raw.duration,
            cgroups,
            processes,
            params: raw.params.into_iter().collect(),
        })
    }
}

fn mode_name(m: PolicyMode) -> &'static str {
    match m {
        PolicyMode::Default => "default",
        PolicyMode::Bind => "bind",
        PolicyMode::Preferred => "preferred",
        PolicyMode::PreferredMany => "preferred-many",
        PolicyMode::Interleave => "interleave",
        PolicyMode::Local => "local",
    }
}

/// Parses workload TOML. `origin` (a preset name or file path) is named in
/// every error. Checks the structure and the syntax of every expression and
/// set; what depends on the machine is checked by [`resolve`].
pub fn parse(text: &str, origin: &str) -> Result<WorkloadSpec> {
    let raw: RawSpec = toml::from_str(text).map_err(|e| WorkloadError::Toml {
        origin: origin.to_string(),
        message: numalab_topology::spec::one_line_toml_error(text, &e),
    })?;
    Checker { origin }.spec(raw)
}

// ---------------------------------------------------------------------------
// resolve
// ---------------------------------------------------------------------------

/// `x * f` rounded up, at least 1 unless `x` is 0. Products within 1e-9 of an
/// integer count as that integer, so `50 * 0.1` is 5, not 6.
fn scale_up(x: u64, f: f64) -> u64 {
    if x == 0 || f == 1.0 {
        return x;
    }
    let v = x as f64 * f;
    let r = v.round();
    let out = if (v - r).abs() <= 1e-9 * r.max(1.0) {
        r
    } else {
        v.ceil()
    };
    (out as u64).max(1)
}

/// `x * f` rounded down, with the same snapping as [`scale_up`].
fn scale_down(x: u64, f: f64) -> u64 {
    if f == 1.0 {
        return x;
    }
    let v = x as f64 * f;
    let r = v.round();
    let out = if (v - r).abs() <= 1e-9 * r.max(1.0) {
        r
    } else {
        v.floor()
    };
    out as u64
}

/// Byte range of slice `index` of `of` of a region of `bytes`: slices are
/// whole pages (2 MiB for a THP region holding at least `of` huge pages,
/// else 4 KiB), split as evenly as integers allow; the last slice also takes
/// any tail smaller than a page. Every byte is in exactly one slice.
pub fn slice_range(bytes: u64, thp: bool, index: u64, of: u64) -> (u64, u64) {
    let g = if thp && bytes / HPAGE >= of {
        HPAGE
    } else {
        PAGE
    };
    let pages = u128::from(bytes / g);
    let at = |k: u64| (u128::from(k) * pages / u128::from(of.max(1))) as u64 * g;
    let start = at(index);
    let end = if index + 1 >= of {
        bytes
    } else {
        at(index + 1)
    };
    (start, end.saturating_sub(start))
}

/// Which bytes of a region a phase uses, before region sizes are scaled.
enum IRange {
    Whole,
    Slice { index: u64, of: u64 },
    Bytes { offset: u64, len: u64 },
}

/// A phase with its region range still symbolic (pass 1 of resolve).
enum IPhase {
    Stream {
        region: usize,
        range: IRange,
        passes: u64,
        write: bool,
    },
    Random {
        region: usize,
        range: IRange,
        accesses: u64,
        distribution: Distribution,
        write_fraction: f64,
        mlp: f64,
    },
    Repeat {
        times: u64,
        request: bool,
        body: Vec<IPhase>,
    },
    Done(Phase),
}

struct RegionSize {
    bytes: u64,
    thp: bool,
    /// Largest `of` of a slice using the region (1 for offset/len uses).
    max_of: u64,
}

struct Resolver<'a> {
    origin: &'a str,
    machine: &'a Machine,
    scale: f64,
    work: u64,
    threads: u64,
    /// Where we are (process instance, thread, loop variables), for messages.
    at: Vec<String>,
}

impl Resolver<'_> {
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> WorkloadError {
        let mut message = message.into();
        if !self.at.is_empty() {
            message = format!("{message} (in {})", self.at.join(", "));
        }
        WorkloadError::Field {
            origin: self.origin.to_string(),
            field: field.into(),
            message,
        }
    }

    fn num(&self, n: &Num, env: &Env, kind: Kind, field: &str) -> Result<i64> {
        match n {
            Num::Int(v) => Ok(*v),
            Num::Expr(s) => {
                expr::eval_str(s, env, kind).map_err(|m| self.err(field, format!("\"{s}\": {m}")))
            }
        }
    }

    /// A non-negative count.
    fn count(&self, n: &Num, env: &Env, kind: Kind, field: &str) -> Result<u64> {
        let v = self.num(n, env, kind, field)?;
        u64::try_from(v).map_err(|_| self.err(field, format!("{n} is {v}: must not be negative")))
    }

    /// A non-negative count (as [`Resolver::count`]) within the plausible
    /// range of `key` ([`ranges::WORKLOAD_RANGES`]), checked before scaling.
    fn count_in(&self, key: &str, n: &Num, env: &Env, kind: Kind, field: &str) -> Result<u64> {
        let v = self.count(n, env, kind, field)?;
        ranges::range(key)
            .check(v as f64)
            .map_err(|m| self.err(field, m))?;
        Ok(v)
    }

    fn charge(&mut self, units: u64, field: &str) -> Result<()> {
        self.work += units;
        if self.work > MAX_PHASES {
            return Err(self.err(
                field,
                format!(
                    "the workload expands to more than {MAX_PHASES} phases and loop iterations"
                ),
            ));
        }
        Ok(())
    }

    fn policy(&self, pv: &PolicyValue, env: &Env, field: &str) -> Result<Option<PolicySpec>> {
        let PolicyValue::Policy {
            mode,
            nodes,
            numa_balancing,
        } = pv
        else {
            return Ok(None);
        };
        let nodes = match nodes {
            Some(s) => expr::eval_nodes(s, env, self.machine.nr_nodes())
                .map_err(|m| self.err(format!("{field}.nodes"), format!("\"{s}\": {m}")))?,
            None => Vec::new(),
        };
        let needs_nodes = !matches!(mode, PolicyMode::Default | PolicyMode::Local);
        if needs_nodes && nodes.is_empty() {
            return Err(self.err(
                format!("{field}.nodes"),
                format!("mode '{}' with an empty node list", mode_name(*mode)),
            ));
        }
        if !needs_nodes && !nodes.is_empty() {
            return Err(self.err(
                format!("{field}.nodes"),
                format!("mode '{}' takes no nodes", mode_name(*mode)),
            ));
        }
        Ok(Some(PolicySpec {
            mode: *mode,
            nodes,
            numa_balancing: *numa_balancing,
        }))
    }

    fn cpuset(&self, s: &str, env: &Env, field: &str) -> Result<Option<CpuSet>> {
        expr::eval_cpuset(s, env, self.machine)
            .map_err(|m| self.err(field, format!("\"{s}\": {m}")))
    }

    fn region(&self, name: &str, regions: &[(String, RegionSize)], field: &str) -> Result<usize> {
        regions
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| self.err(field, format!("no region named '{name}' in this process")))
    }

    fn range(
        &self,
        range: &RangeSpec,
        env: &Env,
        region: &mut RegionSize,
        rname: &str,
        field: &str,
    ) -> Result<IRange> {
        match range {
            RangeSpec::Whole => Ok(IRange::Whole),
            RangeSpec::Slice { index, of } => {
                let f0 = format!("{field}.slice[0]");
                let f1 = format!("{field}.slice[1]");
                let index = self.count(index, env, Kind::Count, &f0)?;
                let of = self.count(of, env, Kind::Count, &f1)?;
                if of == 0 {
                    return Err(self.err(f1, "slice count `of` must be at least 1"));
                }
                if index >= of {
                    return Err(self.err(f0, format!("slice index {index} >= of {of}")));
                }
                let (_, len) = slice_range(region.bytes, region.thp, index, of);
                if len == 0 {
                    return Err(self.err(
                        format!("{field}.slice"),
                        format!(
                            "slice {index} of {of} of region '{rname}' is empty: the region has only {} pages",
                            region.bytes / PAGE
                        ),
                    ));
                }
                region.max_of = region.max_of.max(of);
                Ok(IRange::Slice { index, of })
            }
            RangeSpec::Bytes { offset, len } => {
                let fo = format!("{field}.offset");
                let fl = format!("{field}.len");
                let offset = match offset {
                    Some(o) => self.count(o, env, Kind::Size, &fo)?,
                    None => 0,
                };
                if offset >= region.bytes {
                    return Err(self.err(
                        fo,
                        format!(
                            "offset {offset} is past the end of region '{rname}' ({} bytes)",
                            region.bytes
                        ),
                    ));
                }
                let len = match len {
                    Some(l) => self.count(l, env, Kind::Size, &fl)?,
                    None => region.bytes - offset,
                };
                if len == 0 {
                    return Err(self.err(fl, "length 0"));
                }
                if len > region.bytes - offset {
                    return Err(self.err(
                        fl,
                        format!(
                            "offset {offset} + len {len} is past the end of region '{rname}' ({} bytes)",
                            region.bytes
                        ),
                    ));
                }
                region.max_of = region.max_of.max(1);
                Ok(IRange::Bytes { offset, len })
            }
        }
    }

    fn phases(
        &mut self,
        list: &[PhaseSpec],
        field: &str,
        env: &mut Env,
        regions: &mut [(String, RegionSize)],
    ) -> Result<Vec<IPhase>> {
        let mut out = Vec::new();
        for (k, ph) in list.iter().enumerate() {
            let f = format!("{field}[{k}]");
            self.charge(1, &f)?;
            match ph {
                PhaseSpec::Stream {
                    region,
                    passes,
                    write,
                    range,
                } => {
                    let ri = self.region(region, regions, &format!("{f}.stream"))?;
                    let passes = self.count_in(
                        "stream.passes",
                        passes,
                        env,
                        Kind::Count,
                        &format!("{f}.passes"),
                    )?;
                    let (rname, rsize) = &mut regions[ri];
                    let range = self.range(range, env, rsize, rname, &f)?;
                    out.push(IPhase::Stream {
                        region: ri,
                        range,
                        passes: scale_up(passes, self.scale),
                        write: *write,
                    });
                }
                PhaseSpec::Random {
                    region,
                    accesses,
                    distribution,
                    write_fraction,
                    mlp,
                    range,
                } => {
                    let ri = self.region(region, regions, &format!("{f}.random"))?;
                    let accesses = self.count_in(
                        "random.accesses",
                        accesses,
                        env,
                        Kind::Count,
                        &format!("{f}.accesses"),
                    )?;
                    let (rname, rsize) = &mut regions[ri];
                    let range = self.range(range, env, rsize, rname, &f)?;
                    out.push(IPhase::Random {
                        region: ri,
                        range,
                        accesses: scale_up(accesses, self.scale),
                        distribution: distribution.clone(),
                        write_fraction: *write_fraction,
                        mlp: *mlp,
                    });
                }
                PhaseSpec::Compute(t) => {
                    let ns =
                        self.count_in("compute", t, env, Kind::Time, &format!("{f}.compute"))?;
                    out.push(IPhase::Done(Phase::Compute { ns }));
                }
                PhaseSpec::Sleep(t) => {
                    let ns = self.count_in("sleep", t, env, Kind::Time, &format!("{f}.sleep"))?;
                    out.push(IPhase::Done(Phase::Sleep { ns }));
                }
                PhaseSpec::SetMempolicy(pv) => {
                    let p = self.policy(pv, env, &format!("{f}.set_mempolicy"))?;
                    out.push(IPhase::Done(Phase::SetMempolicy(p)));
                }
                PhaseSpec::SetAffinity(s) => {
                    let c = self.cpuset(s, env, &format!("{f}.set_affinity"))?;
                    out.push(IPhase::Done(Phase::SetAffinity(c)));
                }
                PhaseSpec::SetNumaBalancing(c) => {
                    out.push(IPhase::Done(Phase::SetNumaBalancing(*c)));
                }
                PhaseSpec::CgroupWrite {
                    cgroup,
                    file,
                    value,
                } => {
                    out.push(IPhase::Done(Phase::CgroupWrite {
                        cgroup: cgroup.clone(),
                        file: file.clone(),
                        value: value.clone(),
                    }));
                }
                PhaseSpec::Repeat {
                    times,
                    request,
                    body,
                } => {
                    let times =
                        self.count_in("repeat", times, env, Kind::Count, &format!("{f}.repeat"))?;
                    let body = self.phases(body, &format!("{f}.body"), env, regions)?;
                    out.push(IPhase::Repeat {
                        times: scale_up(times, self.scale),
                        request: *request,
                        body,
                    });
                }
                PhaseSpec::For {
                    var,
                    start,
                    end,
                    body,
                } => {
                    let a = self.num(start, env, Kind::Count, &format!("{f}.range[0]"))?;
                    let b = self.num(end, env, Kind::Count, &format!("{f}.range[1]"))?;
                    let mut v = a;
                    while v < b {
                        self.charge(1, &f)?;
                        env.push(var, v);
                        self.at.push(format!("{var}={v}"));
                        let r = self.phases(body, &format!("{f}.body"), env, regions);
                        self.at.pop();
                        env.pop();
                        out.extend(r?);
                        v += 1;
                    }
                }
            }
        }
        Ok(out)
    }

    fn process(
        &mut self,
        ps: &ProcessSpec,
        pf: &str,
        name: String,
        env: &mut Env,
    ) -> Result<Process> {
        let total_mem = self.machine.total_mem_bytes();
        let mut regions: Vec<(String, RegionSize)> = Vec::new();
        let mut region_policies = Vec::new();
        for (ri, rs) in ps.regions.iter().enumerate() {
            let rf = format!("{pf}.region[{ri}]");
            let size = self.count(&rs.size, env, Kind::Size, &format!("{rf}.size"))?;
            if size == 0 {
                return Err(self.err(format!("{rf}.size"), "a region must not be empty"));
            }
            ranges::range("process.region.size")
                .check(size as f64)
                .map_err(|m| self.err(format!("{rf}.size"), m))?;
            let bytes = size
                .checked_next_multiple_of(PAGE)
                .ok_or_else(|| self.err(format!("{rf}.size"), "size overflows"))?;
            region_policies.push(
                rs.policy
                    .as_ref()
                    .map(|pv| self.policy(pv, env, &format!("{rf}.policy")))
                    .transpose()?
                    .flatten(),
            );
            regions.push((
                rs.name.clone(),
                RegionSize {
                    bytes,
                    thp: rs.thp,
                    max_of: 0,
                },
            ));
        }

        let mut threads: Vec<(Thread, Vec<IPhase>)> = Vec::new();
        let mut groups: Vec<(String, std::ops::Range<usize>)> = Vec::new();
        for (ti, ts) in ps.threads.iter().enumerate() {
            let tf = format!("{pf}.thread[{ti}]");
            let n = self.count_in(
                "process.thread.count",
                &ts.count,
                env,
                Kind::Count,
                &format!("{tf}.count"),
            )?;
            self.threads = self.threads.saturating_add(n);
            if self.threads > MAX_THREADS {
                return Err(self.err(
                    format!("{tf}.count"),
                    format!("more than {MAX_THREADS} threads in total"),
                ));
            }
            self.charge(n, &format!("{tf}.count"))?;
            let start_after = match &ts.start_after {
                None => Vec::new(),
                Some(g) => {
                    let range = groups
                        .iter()
                        .find(|(name, _)| name == g)
                        .map(|(_, r)| r.clone())
                        .ok_or_else(|| {
                            self.err(
                                format!("{tf}.start_after"),
                                format!("no earlier thread group named '{g}' in this process"),
                            )
                        })?;
                    range.collect()
                }
            };
            let first = threads.len();
            env.push("n", n as i64);
            for i in 0..n {
                let tname = if n > 1 {
                    format!("{}.{i}", ts.name)
                } else {
                    ts.name.clone()
                };
                // On error the scope is abandoned with `env` and `self.at`
                // still pushed: errors end the resolution.
                env.push("i", i as i64);
                self.at.push(format!("thread {tname}"));
                let affinity = match &ts.affinity {
                    Some(a) => self.cpuset(a, env, &format!("{tf}.affinity"))?,
                    None => None,
                };
                let policy = match &ts.policy {
                    Some(pv) => self.policy(pv, env, &format!("{tf}.policy"))?,
                    None => None,
                };
                let phases = self.phases(&ts.phases, &format!("{tf}.phases"), env, &mut regions)?;
                self.at.pop();
                env.pop();
                threads.push((
                    Thread {
                        name: tname,
                        affinity,
                        policy,
                        start_after: start_after.clone(),
                        phases: Vec::new(),
                    },
                    phases,
                ));
            }
            env.pop();
            groups.push((ts.name.clone(), first..threads.len()));
        }

        // Pass 2: scale region sizes, then place every range.
        let scaled: Vec<u64> = regions
            .iter()
            .map(|(_, r)| {
                if self.scale == 1.0 {
                    return r.bytes;
                }
                let pages = r.bytes / PAGE;
                let min = r.max_of.max(1).min(pages);
                scale_down(pages, self.scale).clamp(min, pages) * PAGE
            })
            .collect();
        for (ri, &bytes) in scaled.iter().enumerate() {
            if bytes > total_mem {
                return Err(self.err(
                    format!("{pf}.region[{ri}].size"),
                    format!(
                        "region '{}' is {bytes} bytes, more than the machine's {total_mem} bytes of memory",
                        regions[ri].0
                    ),
                ));
            }
        }
        let threads = threads
            .into_iter()
            .map(|(mut t, ip)| {
                t.phases = finish(ip, &regions, &scaled);
                t
            })
            .collect();
        let regions = regions
            .into_iter()
            .zip(scaled.iter())
            .zip(region_policies)
            .map(|(((name, r), &bytes), policy)| Region {
                name,
                bytes,
                page_size: if r.thp {
                    PageSize::Thp2M
                } else {
                    PageSize::Base4K
                },
                policy,
            })
            .collect();
        Ok(Process {
            name,
            cgroup: ps.cgroup.clone(),
            regions,
            threads,
        })
    }

    fn cgroups(&self, spec: &WorkloadSpec, env: &Env) -> Result<Vec<Cgroup>> {
        let mut resolved: BTreeMap<String, Cgroup> = BTreeMap::new();
        for (k, c) in spec.cgroups.iter().enumerate() {
            let f = format!("cgroup[{k}]");
            let cpuset_cpus = match &c.cpuset_cpus {
                Some(s) => Some(
                    self.cpuset(s, env, &format!("{f}.cpuset_cpus"))?
                        .unwrap_or_else(|| self.machine.all_cpus()),
                ),
                None => None,
            };
            let cpuset_mems = match &c.cpuset_mems {
                Some(s) => {
                    let nodes = expr::eval_nodes(s, env, self.machine.nr_nodes()).map_err(|m| {
                        self.err(format!("{f}.cpuset_mems"), format!("\"{s}\": {m}"))
                    })?;
                    if nodes.is_empty() {
                        return Err(self.err(format!("{f}.cpuset_mems"), "empty node list"));
                    }
                    Some(nodes)
                }
                None => None,
            };
            resolved.insert(
                c.path.clone(),
                Cgroup {
                    path: c.path.clone(),
                    cpuset_cpus,
                    cpuset_mems,
                    files: c.files.clone(),
                },
            );
        }
        // Parents first; ancestors that were not declared are created empty.
        let mut out: Vec<Cgroup> = Vec::new();
        fn emit(path: &str, resolved: &BTreeMap<String, Cgroup>, out: &mut Vec<Cgroup>) {
            if path == "/" || out.iter().any(|c| c.path == path) {
                return;
            }
            if let Some((parent, _)) = path.rsplit_once('/') {
                if !parent.is_empty() {
                    emit(parent, resolved, out);
                }
            }
            out.push(resolved.get(path).cloned().unwrap_or_else(|| Cgroup {
                path: path.to_string(),
                cpuset_cpus: None,
                cpuset_mems: None,
                files: BTreeMap::new(),
            }));
        }
        for c in &spec.cgroups {
            emit(&c.path, &resolved, &mut out);
        }
        Ok(out)
    }
}

/// Turns pass-1 phases into engine phases once region sizes are final.
fn finish(phases: Vec<IPhase>, regions: &[(String, RegionSize)], scaled: &[u64]) -> Vec<Phase> {
    let place = |ri: usize, range: &IRange| -> (u64, u64) {
        let orig = regions[ri].1.bytes;
        let now = scaled[ri];
        match *range {
            IRange::Whole => (0, now),
            IRange::Slice { index, of } => slice_range(now, regions[ri].1.thp, index, of),
            IRange::Bytes { offset, len } => {
                if now == orig {
                    return (offset, len);
                }
                let at = |b: u64| {
                    ((u128::from(b) * u128::from(now) / u128::from(orig)) as u64) / PAGE * PAGE
                };
                let len2 = (at(offset + len).saturating_sub(at(offset)))
                    .max(PAGE)
                    .min(now);
                let off2 = at(offset).min(now - len2);
                (off2, len2)
            }
        }
    };
    phases
        .into_iter()
        .map(|p| match p {
            IPhase::Stream {
                region,
                range,
                passes,
                write,
            } => {
                let (offset, len) = place(region, &range);
                Phase::Stream {
                    region,
                    offset,
                    len,
                    passes,
                    write,
                }
            }
            IPhase::Random {
                region,
                range,
                accesses,
                distribution,
                write_fraction,
                mlp,
            } => {
                let (offset, len) = place(region, &range);
                Phase::Random {
                    region,
                    offset,
                    len,
                    accesses,
                    distribution,
                    write_fraction,
                    mlp,
                }
            }
            IPhase::Repeat {
                times,
                request,
                body,
            } => Phase::Repeat {
                times,
                body: finish(body, regions, scaled),
                request,
            },
            IPhase::Done(p) => p,
        })
        .collect()
}

/// Resolves `spec` for `machine`: evaluates every expression, expands
/// process and thread counts and `for` loops, and applies `scale`.
///
/// `seed` is the run's seed; expressions see it (mod 2^63) as `seed`.
/// `scale` (0 < F <= 1) shrinks region sizes (rounded down to whole pages,
/// never below one page per slice that uses the region), passes, accesses,
/// repeat counts (rounded up, at least 1) and `duration`; compute and sleep
/// times stay. The shape (which thread touches which slice, where memory is
/// first touched, every binding) does not change. The result is a pure
/// function of the arguments.
pub fn resolve(spec: &WorkloadSpec, machine: &Machine, seed: u64, scale: f64) -> Result<Workload> {
    if !(scale.is_finite() && scale > 0.0 && scale <= 1.0) {
        return Err(WorkloadError::Scale(scale));
    }
    let mut r = Resolver {
        origin: &spec.origin,
        machine,
        scale,
        work: 0,
        threads: 0,
        at: Vec::new(),
    };
    let ncpus = machine.nr_cpus();
    let nnodes = machine.nr_nodes();
    if ncpus == 0 || nnodes == 0 || machine.nodes.len() != nnodes {
        return Err(r.err("machine", "the machine has no CPUs or no nodes"));
    }
    let mut env = Env::new();
    env.push("ncpus", ncpus as i64);
    env.push("nnodes", nnodes as i64);
    env.push("ncores", machine.nr_cores() as i64);
    env.push("cpus_per_node", (ncpus / nnodes) as i64);
    env.push("seed", (seed & i64::MAX as u64) as i64);
    for (k, v) in &spec.params {
        let value = r.num(v, &env, Kind::Count, &format!("params.{k}"))?;
        env.push(k, value);
    }

    let duration_ns = match &spec.duration {
        Some(d) => {
            let ns = r.num(d, &env, Kind::Time, "duration")?;
            if ns <= 0 {
                return Err(r.err("duration", format!("{d} is {ns} ns: must be positive")));
            }
            ranges::range("duration")
                .check(ns as f64)
                .map_err(|m| r.err("duration", format!("{d} is {ns} ns: {m}")))?;
            Some(scale_down(ns as u64, scale).max(1))
        }
        None => None,
    };
    let cgroups = r.cgroups(spec, &env)?;

    let mut processes = Vec::new();
    let mut names = BTreeSet::new();
    let mut instances = 0u64;
    for (pi, ps) in spec.processes.iter().enumerate() {
        let pf = format!("process[{pi}]");
        if ps.cgroup != "/" && !cgroups.iter().any(|c| c.path == ps.cgroup) {
            return Err(r.err(
                format!("{pf}.cgroup"),
                format!("no cgroup '{}' is declared", ps.cgroup),
            ));
        }
        let np = r.count_in(
            "process.count",
            &ps.count,
            &env,
            Kind::Count,
            &format!("{pf}.count"),
        )?;
        instances = instances.saturating_add(np);
        if instances > MAX_PROCESSES {
            return Err(r.err(
                format!("{pf}.count"),
                format!("more than {MAX_PROCESSES} processes in total"),
            ));
        }
        env.push("np", np as i64);
        for p in 0..np {
            let name = if np > 1 {
                format!("{}.{p}", ps.name)
            } else {
                ps.name.clone()
            };
            if !names.insert(name.clone()) {
                return Err(r.err(
                    format!("{pf}.name"),
                    format!("two processes are named '{name}'"),
                ));
            }
            env.push("p", p as i64);
            r.at.push(format!("process {name}"));
            processes.push(r.process(ps, &pf, name, &mut env)?);
            r.at.pop();
            env.pop();
        }
        env.pop();
    }
    if r.threads == 0 {
        return Err(r.err(
            "process",
            "the workload has no threads (no [[process.thread]], or every count is 0)",
        ));
    }
    Ok(Workload {
        name: spec.name.clone(),
        description: spec.description.clone(),
        test: spec.test.clone(),
        cgroups,
        processes,
        score: spec.score.clone(),
        duration_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_snaps_float_noise() {
        assert_eq!(scale_up(50, 0.1), 5);
        assert_eq!(scale_up(800, 0.01), 8);
        assert_eq!(scale_up(3, 0.1), 1);
        assert_eq!(scale_up(0, 0.1), 0);
        assert_eq!(scale_up(7, 0.5), 4);
        assert_eq!(scale_down(786_432, 0.1), 78_643);
        assert_eq!(scale_down(30, 0.1), 3);
        assert_eq!(scale_down(7, 0.5), 3);
    }

    #[test]
    fn slices_tile_the_region() {
        for &(bytes, thp, of) in &[
            (1u64 << 30, false, 320u64),
            (1 << 30, true, 320),
            (3 << 30, true, 160),
            (3 << 30, false, 7),
            (5 * HPAGE + 3 * PAGE, true, 4),
            (5 * PAGE, false, 5),
        ] {
            let mut next = 0;
            for k in 0..of {
                let (o, l) = slice_range(bytes, thp, k, of);
                assert_eq!(o, next, "{bytes} {thp} {of} {k}");
                assert!(l > 0);
                next = o + l;
            }
            assert_eq!(next, bytes);
        }
        // THP granularity only when the region holds a huge page per slice.
        assert_eq!(slice_range(8 * HPAGE, true, 1, 4), (2 * HPAGE, 2 * HPAGE));
        assert_eq!(slice_range(3 * HPAGE, true, 1, 4).1 % PAGE, 0);
        assert_ne!(slice_range(3 * HPAGE, true, 1, 4).1 % HPAGE, 0);
    }
}
