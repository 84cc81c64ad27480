//! The resolved workload: concrete processes, threads, regions and phases.
//!
//! A workload spec (TOML, [`crate::spec`]) is resolved against a machine into
//! this form: every count is a number, every thread is listed once, every
//! affinity is a CPU set and every stream names its exact byte range. The
//! engine reads only this type, so it never evaluates expressions.

use numalab_knobs::cgroup::CgroupValue;
use numalab_topology::{CpuSet, NodeId};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use std::collections::BTreeMap;

/// Page size a region is backed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PageSize {
    /// 4 KiB base pages.
    Base4K,
    /// 2 MiB transparent huge pages (THP), where alignment allows.
    Thp2M,
}

/// Memory policy mode, as in `set_mempolicy(2)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PolicyMode {
    /// MPOL_DEFAULT: allocate on the faulting CPU's node.
    Default,
    /// MPOL_BIND: only the given nodes.
    Bind,
    /// MPOL_PREFERRED: the one given node first, then fall back.
    Preferred,
    /// MPOL_PREFERRED_MANY: the given nodes first, then fall back.
    PreferredMany,
    /// MPOL_INTERLEAVE: round-robin over the given nodes, page by page.
    Interleave,
    /// MPOL_LOCAL: the faulting CPU's node (same as default for allocation).
    Local,
}

impl PolicyMode {
    /// Every mode, in the order the language lists them.
    pub const ALL: [PolicyMode; 6] = [
        PolicyMode::Default,
        PolicyMode::Bind,
        PolicyMode::Preferred,
        PolicyMode::PreferredMany,
        PolicyMode::Interleave,
        PolicyMode::Local,
    ];

    /// The word a spec uses.
    pub fn word(self) -> &'static str {
        match self {
            PolicyMode::Default => "default",
            PolicyMode::Bind => "bind",
            PolicyMode::Preferred => "preferred",
            PolicyMode::PreferredMany => "preferred-many",
            PolicyMode::Interleave => "interleave",
            PolicyMode::Local => "local",
        }
    }

    /// The mode a spec word names.
    pub fn from_word(w: &str) -> Option<PolicyMode> {
        PolicyMode::ALL.into_iter().find(|m| m.word() == w)
    }
}

/// A memory policy request, before the kernel model validates it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PolicySpec {
    /// Mode.
    pub mode: PolicyMode,
    /// Node list (empty for Default/Local).
    pub nodes: Vec<NodeId>,
    /// MPOL_F_NUMA_BALANCING: let NUMA balancing act on this memory.
    pub numa_balancing: bool,
}

/// Distribution of random accesses over a range.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Distribution {
    /// Every page equally likely.
    Uniform,
    /// Zipf over pages with exponent `s` (page 0 hottest).
    Zipf {
        /// Exponent.
        s: f64,
    },
    /// A hot subset: the first `fraction` of the range gets `probability` of
    /// the accesses, the rest is uniform.
    Hot {
        /// Share of the range that is hot, in (0, 1].
        fraction: f64,
        /// Share of accesses that go to the hot part, in [0, 1].
        probability: f64,
    },
}

/// numalab's per-task NUMA balancing control: the value of a
/// `PR_SET_NUMA_BALANCING`-like prctl, numalab's model of the per-task
/// control reviewers of proposal 4 asked for (not a mainline interface).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NumaBalancingCtl {
    /// Follow the cgroup (`kernel.numa_balancing=4`) or the system-wide
    /// mode 1.
    Default,
    /// Balance this thread in modes 1 and 4, whatever its cgroup says.
    Enabled,
    /// Never balance this thread.
    Disabled,
}

impl NumaBalancingCtl {
    /// The word a spec uses.
    pub fn word(self) -> &'static str {
        match self {
            NumaBalancingCtl::Default => "default",
            NumaBalancingCtl::Enabled => "enabled",
            NumaBalancingCtl::Disabled => "disabled",
        }
    }

    /// The control a spec word names.
    pub fn from_word(w: &str) -> Option<NumaBalancingCtl> {
        [
            NumaBalancingCtl::Default,
            NumaBalancingCtl::Enabled,
            NumaBalancingCtl::Disabled,
        ]
        .into_iter()
        .find(|c| c.word() == w)
    }
}

/// A write to a cgroup file that a phase may make while tasks run (a file
/// the knob registry, `numalab_knobs::cgroup::CGROUP_FILES`, marks
/// `during_run`), the value typed by the file. The workload check builds it
/// once from `CGROUP:FILE=VALUE`; the engine applies it as is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupFileWrite {
    /// `cpu.numa_load_balance` (proposal 4, not mainline): whether NUMA
    /// balancing may act on the cgroup's tasks in `kernel.numa_balancing=4`.
    NumaLoadBalance(bool),
}

impl CgroupFileWrite {
    /// The typed write of `value` to `file` when `file` is one a phase may
    /// write during a run; `None` for any other file (a cpuset file, an
    /// undeclared one). `Some(Err)` says what is wrong with the value.
    pub fn parse(file: &str, value: &str) -> Option<Result<CgroupFileWrite, String>> {
        match file {
            "cpu.numa_load_balance" => {
                Some(CgroupValue::check_flag(value).map(CgroupFileWrite::NumaLoadBalance))
            }
            _ => None,
        }
    }

    /// The file's kernel name.
    pub fn file(self) -> &'static str {
        match self {
            CgroupFileWrite::NumaLoadBalance(_) => "cpu.numa_load_balance",
        }
    }

    /// The value as the file takes it (`0` or `1` for a flag).
    pub fn value(self) -> &'static str {
        match self {
            CgroupFileWrite::NumaLoadBalance(on) => {
                if on {
                    "1"
                } else {
                    "0"
                }
            }
        }
    }
}

/// Serialized as `{ "file": NAME, "value": TEXT }`, the form a real run's
/// record has always shown.
impl Serialize for CgroupFileWrite {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("file", self.file())?;
        m.serialize_entry("value", self.value())?;
        m.end()
    }
}

/// One step of a thread's life.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Phase {
    /// Sequential pass(es) over `[offset, offset + len)` of a region
    /// (`bzero`-like when `write`). Bandwidth-bound.
    Stream {
        /// Region index in the process.
        region: usize,
        /// Start offset in bytes.
        offset: u64,
        /// Length in bytes.
        len: u64,
        /// Number of passes.
        passes: u64,
        /// Writes (true) or reads.
        write: bool,
    },
    /// Random accesses of one cache line each over `[offset, offset + len)`.
    /// Latency-bound, with `mlp` accesses in flight.
    Random {
        /// Region index in the process.
        region: usize,
        /// Start offset in bytes.
        offset: u64,
        /// Length in bytes.
        len: u64,
        /// Number of accesses.
        accesses: u64,
        /// Where the accesses go.
        distribution: Distribution,
        /// Share of accesses that are writes, in [0, 1].
        write_fraction: f64,
        /// Memory-level parallelism: independent misses in flight (>= 1).
        mlp: f64,
    },
    /// Pure CPU work for this many ns of one uncontended CPU.
    Compute {
        /// Nanoseconds of work.
        ns: u64,
    },
    /// Sleep (voluntary block) for this long, then wake up.
    Sleep {
        /// Nanoseconds asleep.
        ns: u64,
    },
    /// `pthread_barrier_wait` on the process's barrier `name`: its parties
    /// are the process's threads whose phases name it (a thread that exits
    /// stops being one); each waits off its CPU until the last arrives,
    /// which wakes the others from its CPU and goes on with them.
    Barrier {
        /// The barrier's name, shared by its parties.
        name: String,
    },
    /// `set_mempolicy`; `None` is MPOL_DEFAULT.
    SetMempolicy(Option<PolicySpec>),
    /// `sched_setaffinity`; `None` is all CPUs.
    SetAffinity(Option<CpuSet>),
    /// numalab's per-task NUMA balancing control (a
    /// `PR_SET_NUMA_BALANCING`-like prctl, see [`NumaBalancingCtl`]). A
    /// thread's `numa_balancing` key resolves to this as its first phase.
    SetNumaBalancing(NumaBalancingCtl),
    /// A write to a cgroup interface file while tasks run (only files the
    /// knob registry allows during a run: `cpu.numa_load_balance`). It
    /// takes effect where the kernel reads the file (for
    /// `cpu.numa_load_balance`, each task's next scan or hinting fault).
    CgroupWrite {
        /// Cgroup path (`/` or a workload cgroup).
        cgroup: String,
        /// The file and its value, typed when the spec was checked
        /// (serialized as `file` and `value` beside `cgroup`).
        #[serde(flatten)]
        write: CgroupFileWrite,
    },
    /// Repeat `body` `times` times. When `request` is set, each completed
    /// iteration counts as one request toward the workload's throughput score.
    Repeat {
        /// Number of iterations.
        times: u64,
        /// Phases of one iteration.
        body: Vec<Phase>,
        /// Count iterations as requests.
        request: bool,
    },
}

impl Phase {
    /// The region, offset and length a stream or random-access phase
    /// covers; `None` for every other phase.
    pub fn range(&self) -> Option<(usize, u64, u64)> {
        match *self {
            Phase::Stream {
                region,
                offset,
                len,
                ..
            }
            | Phase::Random {
                region,
                offset,
                len,
                ..
            } => Some((region, offset, len)),
            _ => None,
        }
    }

    /// [`Phase::range`], to change in place.
    pub fn range_mut(&mut self) -> Option<(&mut usize, &mut u64, &mut u64)> {
        match self {
            Phase::Stream {
                region,
                offset,
                len,
                ..
            }
            | Phase::Random {
                region,
                offset,
                len,
                ..
            } => Some((region, offset, len)),
            _ => None,
        }
    }

    /// Calls `f` on every phase of `phases` in order, loop bodies included
    /// (a loop before its body).
    pub fn walk<'a>(phases: &'a [Phase], f: &mut dyn FnMut(&'a Phase)) {
        for p in phases {
            f(p);
            if let Phase::Repeat { body, .. } = p {
                Phase::walk(body, f);
            }
        }
    }

    /// The names of the barriers `phases` wait on, each once, in order of
    /// first mention.
    pub fn barriers(phases: &[Phase]) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        Phase::walk(phases, &mut |p| {
            if let Phase::Barrier { name } = p {
                if !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
        });
        names
    }

    /// [`Phase::walk`], to change the phases in place.
    pub fn walk_mut(phases: &mut [Phase], f: &mut dyn FnMut(&mut Phase)) {
        for p in phases {
            f(p);
            if let Phase::Repeat { body, .. } = p {
                Phase::walk_mut(body, f);
            }
        }
    }
}

/// A memory region (one `mmap`/`malloc` of the process).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Region {
    /// Name, unique in the process.
    pub name: String,
    /// Size in bytes (a multiple of 4 KiB).
    pub bytes: u64,
    /// Page size.
    pub page_size: PageSize,
    /// VMA policy (`mbind`), if any.
    pub policy: Option<PolicySpec>,
    /// A mapping of the program's runtime (a thread stack, the heap, a
    /// library's data), added by `numalab.process_mappings`
    /// ([`crate::runtime`]), not declared by the workload: left out of
    /// per-region reports.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub runtime: bool,
    /// A `[[shared]]` region: one memory object (`MAP_SHARED |
    /// MAP_ANONYMOUS`, mapped before the processes fork) that every
    /// process with a shared region of this name maps; size, page size and
    /// policy are the same in each. Its pages are allocated once, by the
    /// first process to touch them.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    /// The region stands for separate, equal VMAs of this many bytes each
    /// (thread stacks split by guard pages; `vma_size` in the spec), where
    /// a scanner looks at a VMA's size (3.9's `task_numa_work` skips VMAs
    /// under 2 MiB). `None`: one VMA.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vma_bytes: Option<u64>,
}

/// One thread of a process.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Thread {
    /// Name, e.g. `worker.17`.
    pub name: String,
    /// Initial CPU affinity; `None` means all CPUs (within the cgroup cpuset).
    pub affinity: Option<CpuSet>,
    /// Initial task memory policy; `None` means MPOL_DEFAULT.
    pub policy: Option<PolicySpec>,
    /// Indices of threads of the same process that must all exit before this
    /// one is created (e.g. numa02's workers wait for the main thread, which
    /// zeroes the buffer first). Empty: created at start.
    pub start_after: Vec<usize>,
    /// What the thread does, in order; it exits after the last phase.
    pub phases: Vec<Phase>,
}

/// The barriers `threads` wait on, each with its parties: the threads
/// whose phases name it, in order of first mention (the model's
/// engine/barrier.rs and numalab real run's barrier.rs count them alike).
pub fn barrier_parties(threads: &[Thread]) -> Vec<(&str, usize)> {
    let mut out: Vec<(&str, usize)> = Vec::new();
    for th in threads {
        for name in Phase::barriers(&th.phases) {
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, parties)) => *parties += 1,
                None => out.push((name, 1)),
            }
        }
    }
    out
}

/// One process (one address space).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Process {
    /// Name.
    pub name: String,
    /// Path of the cgroup the process lives in ("/" for the root).
    pub cgroup: String,
    /// Memory regions.
    pub regions: Vec<Region>,
    /// Threads, in creation order.
    pub threads: Vec<Thread>,
}

/// A cgroup to create before the workload starts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cgroup {
    /// Path, e.g. `/mytest` or `/a/b`; parents are listed before children.
    pub path: String,
    /// `cpuset.cpus`, if set.
    pub cpuset_cpus: Option<CpuSet>,
    /// `cpuset.mems`, if set (node list).
    pub cpuset_mems: Option<Vec<NodeId>>,
    /// Other cgroup files to write, by kernel name. Empty for a parsed spec
    /// (its declared files become `cpuset_cpus`/`cpuset_mems`); a workload
    /// built in code may set files the model does not declare, which the
    /// model keeps without effect and a real run writes.
    pub files: BTreeMap<String, String>,
}

/// How a workload is scored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Score {
    /// Wall-clock seconds until every thread has exited (lower is better).
    Elapsed,
    /// Completed requests (see [`Phase::Repeat`]) per second of elapsed time
    /// (higher is better).
    Throughput,
}

/// A resolved workload, ready for the engine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Workload {
    /// Preset or file name.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// The benchmark test it measures, as compare tables name it (e.g.
    /// `NUMA01_THREADLOCAL` for every bind form of numa01-threadlocal).
    pub test: String,
    /// Cgroups to create, parents first.
    pub cgroups: Vec<Cgroup>,
    /// Processes, in fork order.
    pub processes: Vec<Process>,
    /// Score.
    pub score: Score,
    /// Stop the run after this many ns of virtual time even if threads are
    /// still running (for throughput workloads); `None` runs to completion.
    pub duration_ns: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::CgroupFileWrite;
    use numalab_knobs::cgroup::CGROUP_FILES;

    /// Every file the registry lets a phase write has a typed write, named
    /// as the registry names it; no other file has one.
    #[test]
    fn typed_cgroup_writes_cover_the_registrys_run_time_files() {
        for f in CGROUP_FILES {
            let sample = if f.during_run { "1" } else { "0-1" };
            match CgroupFileWrite::parse(f.name, sample) {
                Some(Ok(w)) => {
                    assert!(f.during_run, "{} is set up front", f.name);
                    assert_eq!(w.file(), f.name);
                    assert_eq!(w.value(), "1");
                }
                Some(Err(e)) => panic!("{}: {e}", f.name),
                None => assert!(!f.during_run, "{} has no typed write", f.name),
            }
        }
        assert!(matches!(
            CgroupFileWrite::parse("cpu.numa_load_balance", "2"),
            Some(Err(_))
        ));
    }
}
