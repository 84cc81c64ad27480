//! A small hand-built kernel for the unit tests of the NUMA balancing files
//! (`fx`). Scenario tests that run whole workloads are in
//! `tests/numa_scenarios.rs`.

use crate::kernel::mm::mempolicy::MemPolicy;
use crate::kernel::mm::{Mm, Vma, PAGE_SHIFT};
use crate::kernel::sched::Task;
use crate::kernel::sysctl::Knobs;
use crate::kernel::Kernel;

/// Fixtures: a kernel on a preset machine, address spaces, running tasks.
pub(crate) mod fx {
    use super::*;

    /// Pid of task index `t` in fixtures.
    pub const PID0: u64 = 2000;

    /// A booted kernel on preset `machine` with `--set` knobs.
    pub fn kernel(machine: &str, sets: &[&str]) -> Kernel {
        let m = numalab_topology::presets::load(machine).expect("machine preset");
        let mut knobs = Knobs::default();
        for s in sets {
            knobs.set(s).expect("knob");
        }
        Kernel::new(m, knobs)
    }

    /// A new address space with one VMA of `bytes` (THP or 4 KiB pages)
    /// under `policy` (None: the task policy). Returns the mm index.
    pub fn add_mm(k: &mut Kernel, bytes: u64, thp: bool, policy: Option<MemPolicy>) -> usize {
        let id = k.mms.len();
        let nn = k.m.nr_nodes();
        k.mms.push(Mm {
            id,
            tgid: PID0 + 100 * id as u64,
            vmas: vec![Vma::new("buf", 1 << 30, bytes, thp, policy, nn)],
            users: 0,
            numa: Default::default(),
        });
        id
    }

    /// Puts pages `[from, to)` of the mm's first VMA on `nid`.
    pub fn populate(k: &mut Kernel, mm: usize, from: usize, to: usize, nid: usize) {
        let nr = k.mms[mm].vmas[0].nr_base_pages();
        for i in from..to {
            k.mms[mm].vmas[0].set_page_node(i, nid as u8);
            k.nodes[nid].free_pages -= nr;
        }
    }

    /// A task of `mm` running on `cpu` (or queued if the CPU is busy),
    /// with NUMA state from `init_numa_balancing`.
    pub fn add_task(k: &mut Kernel, mm: usize, cpu: usize) -> usize {
        let t = k.tasks.len();
        let nn = k.m.nr_nodes();
        let mut task = Task::new(PID0 + t as u64, k.mms[mm].tgid, format!("t{t}"), mm, 0, nn);
        task.affinity = k.m.all_cpus();
        task.cpu = cpu;
        k.tasks.push(task);
        k.mms[mm].users += 1;
        k.enqueue_task(t, cpu);
        if k.rq[cpu].curr.is_none() {
            k.pick_next_task(cpu);
        }
        let parent = (0..t).find(|&o| k.tasks[o].mm == mm);
        k.init_numa_balancing(t, parent);
        t
    }

    /// Marks page `idx` of the first VMA PROT_NONE, as a scan would.
    pub fn mark(k: &mut Kernel, mm: usize, idx: usize) {
        k.mms[mm].vmas[0].set_protnone(idx, true);
    }

    /// Bytes of `n` base pages.
    pub fn pages(n: u64) -> u64 {
        n << PAGE_SHIFT
    }
}
