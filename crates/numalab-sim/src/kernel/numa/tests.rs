//! A small hand-built kernel for the unit tests of the NUMA balancing files
//! (`fx`). Scenario tests that run whole workloads are in
//! `tests/scenarios/numa_scenarios.rs`.

use crate::kernel::mm::mempolicy::MemPolicy;
use crate::kernel::mm::{Mm, Vma, PAGE_SHIFT};
use crate::kernel::sched::Task;
use crate::kernel::sysctl::Knobs;
use crate::kernel::{CgroupId, CpuId, Kernel, MmId, NodeId, TaskId, VmaId};

/// Fixtures: a kernel on a preset machine, address spaces, running tasks.
pub(crate) mod fx {
    use super::*;

    /// CPU `i`.
    pub fn c(i: usize) -> CpuId {
        CpuId::new(i)
    }

    /// Node `i`.
    pub fn n(i: usize) -> NodeId {
        NodeId::new(i)
    }

    /// The first (only) VMA of a fixture mm.
    pub const V0: VmaId = VmaId::new(0);

    /// Pid of task index `t` in fixtures.
    pub const PID0: u64 = 2000;

    /// A booted kernel on preset `machine` with `--set` knobs.
    pub fn kernel(machine: &str, sets: &[&str]) -> Kernel {
        let m = numalab_topology::presets::load(machine).expect("machine preset");
        let knobs = Knobs::from_sets(sets).expect("knobs");
        Kernel::new(m, knobs).expect("known policy")
    }

    /// A new address space with one VMA of `bytes` (THP or 4 KiB pages)
    /// under `policy` (None: the task policy). Returns the mm index.
    pub fn add_mm(k: &mut Kernel, bytes: u64, thp: bool, policy: Option<MemPolicy>) -> MmId {
        let id = k.mem.mms.next_key();
        let nn = k.m.nr_nodes();
        k.mem.mms.push(Mm::new(
            id,
            PID0 + 100 * id.index() as u64,
            vec![Vma::new("buf", 1 << 30, bytes, thp, policy, nn)].into(),
        ));
        id
    }

    /// Puts pages `[from, to)` of the mm's first VMA on `nid`.
    pub fn populate(k: &mut Kernel, mm: MmId, from: usize, to: usize, nid: NodeId) {
        let nr = k.mem.mms[mm].vmas[V0].nr_base_pages();
        for i in from..to {
            k.mem.mms[mm].vmas[V0].set_page_node(i, nid);
            k.mem.nodes[nid].free_pages -= nr;
        }
    }

    /// A task of `mm` running on `cpu` (or queued if the CPU is busy),
    /// with NUMA state from `init_numa_balancing`.
    pub fn add_task(k: &mut Kernel, mm: MmId, cpu: CpuId) -> TaskId {
        let t = k.tasks.next_key();
        let root = CgroupId::new(0);
        let mut task = Task::new(
            PID0 + t.index() as u64,
            k.mem.mms[mm].tgid,
            format!("t{t}"),
            mm,
            root,
        );
        task.affinity = k.m.all_cpus();
        task.cpu = cpu;
        k.add_task(task);
        k.mem.mms[mm].users += 1;
        k.enqueue_task(t, cpu);
        if k.sched.rq[cpu].curr.is_none() {
            k.pick_next_task(cpu);
        }
        let parent = k.tasks.keys().find(|&o| o != t && k.tasks[o].mm == mm);
        k.init_numa_balancing(t, parent);
        t
    }

    /// Task `t` takes one hinting fault, on its CPU, on a page of node `nid`
    /// that task `by` touched last from its CPU (a shared fault when `by`
    /// is another task).
    pub fn fault_on_page_of(k: &mut Kernel, t: TaskId, by: TaskId, nid: NodeId) {
        let last = crate::kernel::numa::cpu_pid_to_cpupid(k.tasks[by].cpu, k.tasks[by].pid);
        let cpu = k.tasks[t].cpu;
        k.task_numa_fault(t, cpu, last, nid, 1, 0);
    }

    /// Task `t`'s tick on `cpu` as the engine runs it: `task_tick_numa`,
    /// then the task work it queued (task_work.rs).
    pub fn tick_numa(k: &mut Kernel, t: TaskId, cpu: CpuId) {
        k.task_tick_numa(t, cpu);
        k.run_numa_task_work();
    }

    /// Marks page `idx` of the first VMA PROT_NONE, as a scan would.
    pub fn mark(k: &mut Kernel, mm: MmId, idx: usize) {
        k.mem.mms[mm].vmas[V0].set_protnone(idx, true);
    }

    /// Bytes of `n` base pages.
    /// A task on CPU 0 of tiny-2n, 1 s into its run, whose mm has 64 MiB
    /// on node 1 (the placement tests' starting point).
    pub fn remote_task(sets: &[&str]) -> (Kernel, MmId, TaskId) {
        let mut k = kernel("tiny-2n", sets);
        let mm = add_mm(&mut k, 64 << 20, false, None);
        let n = k.mem.mms[mm].vmas[V0].pages.len();
        populate(&mut k, mm, 0, n, self::n(1));
        let t = add_task(&mut k, mm, c(0));
        k.now = 2_000_000_000;
        k.tasks[t].sum_exec_runtime = 1_000_000_000;
        (k, mm, t)
    }

    pub fn pages(n: u64) -> u64 {
        n << PAGE_SHIFT
    }
}
