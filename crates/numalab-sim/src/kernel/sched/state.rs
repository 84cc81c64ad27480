//! The scheduler's own state ([`Sched`]): the runqueues, the load
//! balancer's state, task groups' load, the root domain's overload count
//! and the scheduling topology, as kernel/sched keeps them (per-CPU
//! `struct rq`, `struct root_domain`, `struct task_group`, the
//! `sched_domain` hierarchy), apart from the tasks, address spaces and
//! NUMA balancing state other owners keep.
//!
//! Left out: the functions on this state; they are in the files beside
//! this one (pelt.rs, balance.rs, fair.rs, group.rs).

use crate::kernel::ids::TiVec;
use crate::kernel::sched::topology::SchedDomain;
use crate::kernel::sched::{balance::BalanceState, group::TaskGroups, Rq};
use crate::kernel::CpuId;
use numalab_topology::Machine;

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
            sd: crate::kernel::sched::topology::build_sched_domains(m).into(),
            core_cpus,
            llc_cpus,
        }
    }
}

/// The scheduler's state.
pub struct Sched {
    /// Runqueues, by CPU.
    pub rq: TiVec<CpuId, Rq>,
    /// Load-balancer state (the SD_SERIALIZE flag and counts).
    pub balance: BalanceState,
    /// Task groups' load (group.rs).
    pub tg: TaskGroups,
    /// Kernel time spent on CPUs with no task to charge (idle balancing), ns.
    pub idle_kernel_ns: f64,
    /// Derived topology, fixed at boot.
    pub(in crate::kernel) topo: Topology,
    /// Runqueues with more than one task (`rd->overloaded` as a count).
    pub(in crate::kernel) nr_overloaded: usize,
}

impl Sched {
    /// The scheduler of machine `m` at boot, with balancer state `balance`.
    pub fn new(m: &Machine, balance: BalanceState) -> Sched {
        let topo = Topology::new(m);
        let rq = topo
            .sd
            .iter_enumerated()
            .map(|(cpu, sds)| Rq::new(cpu, sds))
            .collect();
        Sched {
            rq,
            balance,
            tg: Default::default(),
            idle_kernel_ns: 0.0,
            topo,
            nr_overloaded: 0,
        }
    }
}
