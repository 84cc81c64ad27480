//! Scheduling domains (kernel/sched/topology.c, arch/x86 topology levels).
//!
//! Builds, for every CPU, the domain hierarchy the kernel would: SMT (core
//! siblings), MC (the LLC), PKG (the package), then one NUMA level per
//! distinct SLIT distance (`sched_init_numa`), dropping levels whose span
//! equals their child's (`sd_degenerate`). As on x86 with nodes inside a
//! package (SNC), the PKG level is dropped and the package is reached by a
//! NUMA level (`x86_has_numa_in_package`). Each level carries the kernel's
//! flags, `imbalance_pct`, `cache_nice_tries`, balance intervals and
//! `imb_numa_nr`.
//!
//! Left out: the CLS (cluster) level, asymmetric capacities, overlapping
//! NUMA groups of non-fully-connected topologies (groups here are the
//! distinct child spans inside the span), root-domain splitting by cpusets.

use crate::kernel::ids::TiVec;
use crate::kernel::CpuId;
use numalab_topology::{CpuSet, Machine};
use std::cell::RefCell;
use std::collections::HashMap;

/// The scheduling topology the kernel derives from the machine at boot and
/// never changes: scheduling domains and the CPU masks of cores and LLCs
/// (`sched_domain`s, `cpu_smt_mask`, `cpu_llc_mask`).
pub struct Topology {
    /// Scheduling domains of each CPU, lowest first.
    pub sd: TiVec<CpuId, Vec<SchedDomain>>,
    /// CPUs of each core (SMT siblings), by the machine's core id.
    pub core_cpus: Vec<Vec<CpuId>>,
    /// CPUs of each LLC, by the machine's LLC id.
    pub llc_cpus: Vec<Vec<CpuId>>,
}

impl Topology {
    /// The topology of machine `m`.
    pub fn new(m: &Machine) -> Topology {
        let mut core_cpus = vec![Vec::new(); m.nr_cores()];
        let nllc = m.cpus.iter().map(|c| c.llc).max().map_or(0, |x| x + 1);
        let mut llc_cpus = vec![Vec::new(); nllc];
        for c in &m.cpus {
            core_cpus[c.core].push(CpuId::new(c.id));
            llc_cpus[c.llc].push(CpuId::new(c.id));
        }
        Topology {
            sd: build_sched_domains(m).into(),
            core_cpus,
            llc_cpus,
        }
    }
}

/// Domain flags (`SD_*`), as a small bitset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SdFlags(pub u32);

impl SdFlags {
    /// SD_BALANCE_NEWIDLE.
    pub const BALANCE_NEWIDLE: u32 = 1 << 0;
    /// SD_BALANCE_EXEC.
    pub const BALANCE_EXEC: u32 = 1 << 1;
    /// SD_BALANCE_FORK.
    pub const BALANCE_FORK: u32 = 1 << 2;
    /// SD_WAKE_AFFINE.
    pub const WAKE_AFFINE: u32 = 1 << 3;
    /// SD_SHARE_CPUCAPACITY (SMT).
    pub const SHARE_CPUCAPACITY: u32 = 1 << 4;
    /// SD_SHARE_LLC.
    pub const SHARE_LLC: u32 = 1 << 5;
    /// SD_SERIALIZE: one balance of such domains at a time, system-wide.
    pub const SERIALIZE: u32 = 1 << 6;
    /// SD_PREFER_SIBLING.
    pub const PREFER_SIBLING: u32 = 1 << 7;
    /// SD_NUMA.
    pub const NUMA: u32 = 1 << 8;

    /// True when `flag` is set.
    pub fn has(self, flag: u32) -> bool {
        self.0 & flag != 0
    }
}

/// `RECLAIM_DISTANCE`: NUMA levels beyond it lose fork/exec balancing and
/// wake-affine.
pub const RECLAIM_DISTANCE: u32 = 30;

/// The kind of a domain level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// Hardware threads of a core.
    Smt,
    /// CPUs sharing a last-level cache.
    Mc,
    /// A package.
    Pkg,
    /// CPUs within a NUMA distance.
    Numa(u32),
}

impl Level {
    /// Name as in /proc/schedstat and debugfs (`SMT`, `MC`, `PKG`, `NUMA`).
    pub fn name(self) -> String {
        match self {
            Level::Smt => "SMT".into(),
            Level::Mc => "MC".into(),
            Level::Pkg => "PKG".into(),
            Level::Numa(d) => format!("NUMA(d{d})"),
        }
    }
}

/// One domain of one CPU (`struct sched_domain`, the static part).
#[derive(Clone, Debug)]
pub struct SchedDomain {
    /// Level kind.
    pub level: Level,
    /// CPUs spanned.
    pub span: CpuSet,
    /// Groups: the child domains' spans inside `span`; the first group is
    /// the one holding this CPU.
    pub groups: Vec<CpuSet>,
    /// Flags.
    pub flags: SdFlags,
    /// `imbalance_pct`.
    pub imbalance_pct: u32,
    /// `cache_nice_tries`.
    pub cache_nice_tries: u32,
    /// `min_interval` in ms (= span weight).
    pub min_interval_ms: u64,
    /// `max_interval` in ms (= 2 x span weight).
    pub max_interval_ms: u64,
    /// `busy_factor`.
    pub busy_factor: u64,
    /// `imb_numa_nr`: tasks a NUMA domain may leave imbalanced.
    pub imb_numa_nr: u32,
}

impl SchedDomain {
    /// Number of CPUs spanned (`sd->span_weight`).
    pub fn span_weight(&self) -> usize {
        self.span.len()
    }
}

/// Builds every CPU's domains, lowest level first.
pub fn build_sched_domains(m: &Machine) -> Vec<Vec<SchedDomain>> {
    // Distinct NUMA distances, as sched_init_numa() collects them.
    let mut dists: Vec<u32> = m
        .distance
        .iter()
        .flatten()
        .copied()
        .filter(|&d| d > 10)
        .collect();
    dists.sort_unstable();
    dists.dedup();
    let numa_in_package = m.nodes.iter().any(|a| {
        m.nodes
            .iter()
            .any(|b| a.id != b.id && a.package == b.package && !a.cpus.is_empty())
    });

    // A CPU's span at a level depends only on its core, LLC, package or
    // node there, so each distinct span is built once: a pass over every
    // CPU per CPU per level is quadratic, 5 M steps at 1024 CPUs.
    let spans: RefCell<HashMap<(Level, usize), CpuSet>> = RefCell::new(HashMap::new());
    let key_of = |cpu: usize, level: Level| -> usize {
        let c = &m.cpus[cpu];
        match level {
            Level::Smt => c.core,
            Level::Mc => c.llc,
            Level::Pkg => c.package,
            Level::Numa(_) => c.node,
        }
    };
    let span_of = |cpu: usize, level: Level| -> CpuSet {
        let c = &m.cpus[cpu];
        let key = key_of(cpu, level);
        spans
            .borrow_mut()
            .entry((level, key))
            .or_insert_with(|| {
                m.cpus
                    .iter()
                    .filter(|o| match level {
                        Level::Smt => o.core == c.core,
                        Level::Mc => o.llc == c.llc,
                        Level::Pkg => o.package == c.package,
                        Level::Numa(d) => m.distance[c.node][o.node] <= d,
                    })
                    .map(|o| o.id)
                    .collect()
            })
            .clone()
    };
    let mut levels = vec![Level::Smt, Level::Mc];
    if !numa_in_package {
        levels.push(Level::Pkg);
    }
    levels.extend(dists.iter().map(|&d| Level::Numa(d)));
    // A level's groups follow from its span and its child's (the CPU's
    // own group comes first, then the others in span order), so the CPUs
    // that share both get the same list: built once per (level, child
    // level, span, child span) instead of once per CPU, a pass over the
    // span and a search of the groups per CPU in it.
    let mut groups_of: HashMap<(Level, Option<Level>, usize, usize), Vec<CpuSet>> = HashMap::new();

    (0..m.nr_cpus())
        .map(|cpu| {
            let mut out: Vec<SchedDomain> = Vec::new();
            let mut child_span = CpuSet::first_n(0);
            child_span.insert(cpu);
            for &level in &levels {
                let span = span_of(cpu, level);
                // sd_degenerate / sd_parent_degenerate: a level that spans no
                // more than its child adds nothing.
                if span.len() <= child_span.len() {
                    continue;
                }
                let child_level = out.last().map(|d: &SchedDomain| d.level);
                let child_key = child_level.map_or(cpu, |l| key_of(cpu, l));
                let groups = groups_of
                    .entry((level, child_level, key_of(cpu, level), child_key))
                    .or_insert_with(|| build_groups(&out, &span, cpu, level, &span_of))
                    .clone();
                out.push(sd_init(level, span.clone(), groups));
                child_span = span;
            }
            set_imb_numa_nr(&mut out);
            out
        })
        .collect()
}

fn build_groups(
    below: &[SchedDomain],
    span: &CpuSet,
    cpu: usize,
    _level: Level,
    span_of: &dyn Fn(usize, Level) -> CpuSet,
) -> Vec<CpuSet> {
    // Groups are the spans of the child level, taken for each CPU in span.
    let child_level = below.last().map(|d| d.level);
    let mut groups: Vec<CpuSet> = Vec::new();
    let mine = match child_level {
        Some(l) => span_of(cpu, l),
        None => std::iter::once(cpu).collect(),
    };
    groups.push(mine);
    for c in span.iter() {
        if groups.iter().any(|g| g.contains(c)) {
            continue;
        }
        let g = match child_level {
            Some(l) => span_of(c, l).and(span),
            None => std::iter::once(c).collect(),
        };
        groups.push(g);
    }
    groups
}

fn sd_init(level: Level, span: CpuSet, groups: Vec<CpuSet>) -> SchedDomain {
    let w = span.len() as u64;
    let mut flags = SdFlags::BALANCE_NEWIDLE
        | SdFlags::BALANCE_EXEC
        | SdFlags::BALANCE_FORK
        | SdFlags::WAKE_AFFINE;
    let (imbalance_pct, cache_nice_tries) = match level {
        Level::Smt => {
            flags |= SdFlags::SHARE_CPUCAPACITY | SdFlags::SHARE_LLC | SdFlags::PREFER_SIBLING;
            (110, 0)
        }
        Level::Mc => {
            flags |= SdFlags::SHARE_LLC | SdFlags::PREFER_SIBLING;
            (117, 1)
        }
        Level::Pkg => {
            flags |= SdFlags::PREFER_SIBLING;
            (117, 1)
        }
        Level::Numa(d) => {
            flags |= SdFlags::SERIALIZE | SdFlags::NUMA;
            if d > RECLAIM_DISTANCE {
                flags &= !(SdFlags::BALANCE_EXEC | SdFlags::BALANCE_FORK | SdFlags::WAKE_AFFINE);
            }
            (117, 2)
        }
    };
    SchedDomain {
        level,
        span,
        groups,
        flags: SdFlags(flags),
        imbalance_pct,
        cache_nice_tries,
        min_interval_ms: w,
        max_interval_ms: 2 * w,
        busy_factor: 16,
        imb_numa_nr: 0,
    }
}

/// `imb_numa_nr` as build_sched_domains() sets it: at the first domain
/// above the LLC, the number of LLCs it spans (or span/8 with a single
/// LLC), at least 1; higher NUMA levels scale it by how many times the
/// first NUMA span they contain.
fn set_imb_numa_nr(sds: &mut [SchedDomain]) {
    let mut imb = 0u32;
    let mut imb_span = 1usize;
    for i in 0..sds.len() {
        let shares_llc = sds[i].flags.has(SdFlags::SHARE_LLC);
        let child_llc = i > 0 && sds[i - 1].flags.has(SdFlags::SHARE_LLC);
        if !shares_llc && child_llc {
            let nr_llcs = sds[i].span_weight() / sds[i - 1].span_weight();
            imb = if nr_llcs == 1 {
                (sds[i].span_weight() >> 3) as u32
            } else {
                nr_llcs as u32
            };
            imb = imb.max(1);
            sds[i].imb_numa_nr = imb;
            let top = sds[i + 1..].iter().find(|d| d.flags.has(SdFlags::NUMA));
            imb_span = top.map_or(sds[i].span_weight(), |d| d.span_weight());
        } else if imb > 0 {
            let factor = (sds[i].span_weight() / imb_span).max(1) as u32;
            sds[i].imb_numa_nr = imb * factor;
        }
    }
}

/// Lowest domain of `cpu` with SD_NUMA (`sd_numa` for task_numa_migrate).
pub fn lowest_numa_domain(sds: &[SchedDomain]) -> Option<&SchedDomain> {
    sds.iter().find(|d| d.flags.has(SdFlags::NUMA))
}
