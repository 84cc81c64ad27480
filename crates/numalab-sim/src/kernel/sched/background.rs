//! Background kernel threads (`kthreadd` children): the tasks a machine
//! runs beside any workload (the machine spec's `[kernel] background`,
//! numalab-topology `kernel_spec.rs`). This file makes them as tasks; the
//! engine (`engine/background.rs`) runs their periodic work.
//!
//! A kernel thread is an ordinary CFS task for the scheduler (it is
//! enqueued, counted in `nr_running`, carries PELT load and is balanced)
//! but has no address space of its own (`PF_KTHREAD`: no NUMA scanning,
//! no hinting faults; an empty mm stands for `mm == NULL`), belongs to the
//! root cgroup and is never in the Run record: what it costs shows only as
//! time the workload's tasks could not run.
//!
//! Left out: kernel threads' own priorities (all are nice-0 CFS here; the
//! stopper `migration/N` is really a stop-class task that preempts at once).

use crate::kernel::mm::Mm;
use crate::kernel::sched::{Task, TaskState};
use crate::kernel::{CgroupId, CpuId, Kernel, TaskId};
use numalab_topology::CpuSet;

/// Pid of the first background kernel thread (below the workload's pids).
pub const FIRST_KTHREAD_PID: u64 = 2;

impl Kernel {
    /// `kthread_create_on_cpu`/`kthread_create`: a sleeping kernel thread
    /// `name` allowed on `affinity`, last on `cpu`. Returns its id.
    pub fn kthread_create(&mut self, pid: u64, name: &str, affinity: CpuSet, cpu: CpuId) -> TaskId {
        let mm = self.mem.mms.next_key();
        self.mem.mms.push(Mm::new(mm, pid, Default::default()));
        let mut task = Task::new(pid, pid, name.to_string(), mm, CgroupId::new(0));
        task.kthread = true;
        task.affinity = affinity;
        task.cpu = cpu;
        task.state = TaskState::Sleeping;
        task.start_ns = self.now;
        self.add_task(task)
    }
}
