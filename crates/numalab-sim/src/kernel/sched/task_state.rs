//! A task's life-cycle state (the model's reading of the `TASK_*` states of
//! include/linux/sched.h and `p->on_rq`): the one scheduler type the NUMA
//! balancing code reads, in a file of its own so that NUMA balancing need
//! not import the scheduler that embeds NUMA state in every task. Left out:
//! the kernel's interruptible/uninterruptible split and stopped states.

/// Life-cycle state of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Not created yet.
    New,
    /// On a runqueue, waiting.
    Runnable,
    /// Running on `cpu`.
    Running,
    /// Blocked (sleeping).
    Sleeping,
    /// Exited.
    Dead,
}
