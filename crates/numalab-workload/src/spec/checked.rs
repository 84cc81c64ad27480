//! The checked spec: what [`super::check`] makes of the syntax tree and
//! what [`mod@super::resolve`] reads. Every name is known to exist, every
//! expression and set parses, every value the language bounds is in range,
//! and one phase type ([`PhaseSpec`]) holds exactly one verb. Left out: what
//! depends on the machine, the seed or the scale (counts, sizes, node and
//! CPU numbers), which stays symbolic ([`Num`], set strings) until resolve.

use super::error::{Result, WorkloadError};
use super::parse::Num;
use crate::expr;
use crate::model::{CgroupFileWrite, Distribution, NumaBalancingCtl, PolicyMode, Score};
use std::collections::BTreeMap;

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
    /// `{ barrier = "NAME" }`.
    Barrier(String),
    /// `{ set_mempolicy = POLICY }`.
    SetMempolicy(PolicyValue),
    /// `{ set_affinity = SET }`.
    SetAffinity(String),
    /// `{ set_numa_balancing = "default" | "enabled" | "disabled" }`:
    /// numalab's per-task control; also the thread key `numa_balancing`,
    /// which the check turns into a first phase.
    SetNumaBalancing(NumaBalancingCtl),
    /// `{ cgroup_write = "CGROUP:FILE=VALUE" }`: a write to a cgroup file
    /// during the run.
    CgroupWrite {
        /// Cgroup path.
        cgroup: String,
        /// The file and its typed value.
        write: CgroupFileWrite,
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

/// A `[[process.region]]` or `[[shared]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionSpec {
    /// Name, unique in the process (a `[[shared]]` region's: unique among
    /// them, and apart from the region names of every process that maps it).
    pub name: String,
    /// Size in bytes.
    pub size: Num,
    /// Back with transparent huge pages.
    pub thp: bool,
    /// VMA policy (`mbind`).
    pub policy: Option<PolicyValue>,
    /// Size of each of the separate, equal VMAs the region stands for
    /// (thread stacks split by guard pages); `None`: one VMA.
    pub vma_size: Option<Num>,
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
    /// Names of the [`WorkloadSpec::shared`] regions every instance maps,
    /// each once; phases name them as they name `regions`.
    pub shared: Vec<String>,
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
    /// `[[shared]]` regions: memory several processes map (`MAP_SHARED |
    /// MAP_ANONYMOUS` before the fork), each mapped by at least one process.
    pub shared: Vec<RegionSpec>,
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
