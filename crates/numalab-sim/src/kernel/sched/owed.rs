//! Kernel time a task owes the engine: work the kernel charged to it (a
//! scan, a fault, a migration, a lock wait) that the engine has not yet
//! taken out of the task's run time.
//!
//! The kernel writes it ([`Kernel::charge_sys`](crate::kernel::Kernel::charge_sys),
//! [`Kernel::delay_task`](crate::kernel::Kernel::delay_task)); the engine
//! pays it from the task's next spans and closes stalls from it
//! (engine/exec.rs, engine/stall.rs). In Linux the work simply takes the
//! CPU; the split exists because the engine advances tasks in spans. Kept
//! beside the task table rather than in `Task`, which holds only what
//! `struct task_struct` holds.
//!
//! Left out: nothing the kernel has; this is engine plumbing.

/// What one task owes, ns.
#[derive(Clone, Copy, Debug, Default)]
pub struct Owed {
    /// Kernel time charged that the task's run time has not paid yet: it
    /// delays the task's next progress.
    pub debt_ns: f64,
    /// Kernel time charged since the engine last closed a stall (proposal
    /// 2's access latency, engine/latency.rs).
    pub stall_ns: f64,
    /// A wait to sleep off the CPU (`numalab.migration_entry_sleep`): the
    /// engine stops the task for it at its next turn.
    pub sleep_ns: f64,
}
