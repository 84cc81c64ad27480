//! A process's threads come into being one after another: its main thread
//! creates them (`pthread_create`: the stack's `mmap`, `clone`,
//! `wake_up_new_task`), as `numalab real run`'s worker does, and each new
//! thread first sleeps on the creator's `mmap_lock` until the creator has
//! created the last one.
//!
//! Why it matters (docs/real.md M3): a new thread faults on its stack at
//! once and blocks behind the creator's next stack `mmap`, which holds
//! `mmap_lock` for write, so it leaves its CPU idle. The fork placement
//! of the next thread (`sched_balance_find_dst_group`) then sees that CPU
//! as idle and may put it there too: in the 6.12 guest, 7 threads went to
//! CPUs [2,1,3,2,2,1,1] and none to the coordinator's CPU 0. When they all
//! wake, CPUs are unevenly loaded and the balancer moves threads in the
//! middle of their first touch, which splits their memory across nodes
//! and gives NUMA balancing pages and tasks to move.
//!
//! A thread that starts after others have exited (`start_after`) is
//! created by the thread whose exit completed its wait, as the worker
//! does (that OS thread lives on and spawns it), so it inherits that
//! thread's NUMA state, `numa_preferred_nid` included (fair.c
//! `init_numa_balancing`, CLONE_VM). Pinned workers that inherit a
//! preferred node other than their own call `task_numa_migrate`, find no
//! allowed CPU there and emit `sched_stick_numa` until their own placement
//! runs, as two of three guest boots of `pinned-4k` show (23 and 67); in
//! the model `init` gets no preferred node (its pages are not scanned
//! while it is the process's only thread), so its workers inherit none.
//!
//! Lab switch `numalab.serial_clone` (0: every thread that starts at once
//! exists at time 0, and a later thread inherits from the first live
//! thread of its process: the model before). Left out: the per-VMA lock, rwsem
//! reader/writer hand-off between the creator's successive `mmap`s (a new
//! thread sleeps until the creator is done, not until the next unlock),
//! threads created by `start_after` (their creator is the exiting thread;
//! they start at once as before).

use super::Sim;
use crate::kernel::{CpuId, TaskId};
use crate::SimError;

/// Who creates a thread: where it is placed from, whose NUMA state it
/// inherits (`init_numa_balancing` with CLONE_VM), whether it first
/// sleeps on the creator's `mmap_lock`.
#[derive(Clone, Copy, Debug)]
pub struct Creator {
    /// The creator's CPU, where fork placement starts.
    pub cpu: CpuId,
    /// The creating thread; `None`: the model's default parent (the
    /// process's first live thread, or a new mm's state).
    pub task: Option<TaskId>,
    /// The new thread sleeps until its creator is done.
    pub waits: bool,
}

impl Creator {
    /// Created from outside the process's threads (the model before).
    pub fn shell(cpu: CpuId) -> Creator {
        Creator {
            cpu,
            task: None,
            waits: false,
        }
    }

    /// Created by thread `task` on `cpu`.
    pub fn thread(cpu: CpuId, task: TaskId, waits: bool) -> Creator {
        Creator {
            cpu,
            task: Some(task),
            waits,
        }
    }
}

/// What a task does about thread creation between its phases.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CloneStep {
    /// It charged a creation's cost: run on to pay it.
    Charged,
    /// It sleeps on its creator's `mmap_lock`.
    Block,
    /// It creates thread `j` of its process now.
    Create(usize),
}

/// The creation a main thread still has to do.
#[derive(Clone, Debug, Default)]
pub struct Creating {
    /// Thread indices (in its process) still to create, last first.
    pending: Vec<usize>,
    /// The next creation's cost is charged (paid from its run time).
    charged: bool,
    /// Threads created so far, which sleep until the last is created.
    children: Vec<TaskId>,
}

impl Creating {
    /// Creation of `threads`, in this order.
    pub fn new(threads: &[usize]) -> Creating {
        Creating {
            pending: threads.iter().rev().copied().collect(),
            charged: false,
            children: Vec::new(),
        }
    }
}

impl Sim {
    /// What task `t`, between phases, does about thread creation (`None`
    /// when it has nothing to create and waits for no creator).
    pub(crate) fn clone_step(&mut self, t: TaskId) -> Option<CloneStep> {
        let ex = &mut self.exec[t];
        if ex.waits_for_creator {
            return Some(CloneStep::Block);
        }
        let c = ex.creating.as_mut()?;
        let Some(&j) = c.pending.last() else {
            ex.creating = None;
            return None;
        };
        if !c.charged {
            c.charged = true;
            self.k.charge_sys(t, crate::physics::costs::CLONE_THREAD_NS);
            return Some(CloneStep::Charged);
        }
        c.charged = false;
        Some(CloneStep::Create(j))
    }

    /// Task `t` on `cpu` creates thread `j` of its process now; after the
    /// last, every thread it created is released (woken if it slept).
    pub(crate) fn clone_thread(&mut self, t: TaskId, cpu: CpuId, j: usize) -> Result<(), SimError> {
        let pi = self.exec[t].proc;
        let tgid = self.procs[pi].pid;
        let last = self.exec[t]
            .creating
            .as_ref()
            .is_none_or(|c| c.pending.len() <= 1);
        let child = self.spawn_thread(pi, j, tgid, Creator::thread(cpu, t, !last))?;
        let Some(c) = self.exec[t].creating.as_mut() else {
            return Ok(());
        };
        c.pending.pop();
        c.children.push(child);
        if !last {
            return Ok(());
        }
        let children = std::mem::take(&mut c.children);
        self.exec[t].creating = None;
        // The creator's mmap_write_unlock wakes them from its CPU
        // (rwsem_wake -> try_to_wake_up, no WF_SYNC).
        for ch in children {
            self.exec[ch].waits_for_creator = false;
            self.try_to_wake_up(ch, Some((t, cpu)))?;
        }
        Ok(())
    }
}
