//! Real runs: numalab workloads executed on a real Linux kernel.
//!
//! Two entry points, for the CLI to wire:
//! - [`real_run`] (`numalab real run`) executes a resolved [`Workload`] on
//!   the current host: processes (fork) and threads, cgroup v2 groups under
//!   one dedicated parent that is removed afterwards, cpusets and
//!   affinities, memory policies through the real syscalls, first touch as
//!   the phases do it, streams, random accesses, compute and sleep. With
//!   `allow_sysctl` (and root) it sets the `--set` knobs and restores them,
//!   also on SIGINT/SIGTERM/SIGHUP. It samples the kernel's counters at a
//!   fixed interval and returns the same [`RunRecord`] as the model, with
//!   `kind = Real`. It refuses, changing nothing, what the host cannot do.
//! - [`vm::vm_run`] (`numalab vm run`) boots a QEMU guest (software
//!   emulation) whose NUMA topology follows a [`Machine`], on a Debian
//!   kernel it fetches and caches, runs `numalab real run` inside and
//!   returns the guest's record.
//!
//! [`host_machine`] describes the host as a [`Machine`] so workloads can be
//! resolved against it; [`smoke`] holds the pinned first-touch workload
//! and the deterministic checks the CI's QEMU stage asserts.
//!
//! What a real kernel does not report (per-access node counts, memory
//! bandwidth) is estimated or left at zero; docs/real.md lists each field.

pub mod access;
mod barrier;
pub mod cgroup;
pub mod check;
pub mod coordinator_cpu;
pub mod host;
pub mod journal;
pub mod knob_roots;
pub mod knobs;
pub mod latency;
pub mod mounts;
mod run;
pub mod sample;
pub mod smoke;
pub mod sys;
pub mod tracefs;
pub mod vm;
mod worker;

pub use host::{host_machine, HostFacts};
pub use knobs::parse_set;
pub use numalab_record::RunRecord;
pub use numalab_topology::Machine;
pub use numalab_workload::model::Workload;
pub use run::real_run;

use std::time::Duration;

/// Options of `numalab real run`.
#[derive(Clone, Debug, PartialEq)]
pub struct RealOptions {
    /// `--set KEY=VALUE` pairs, in order (see [`knobs`] for the names);
    /// split them with [`parse_set`].
    pub sets: Vec<(String, String)>,
    /// `--allow-sysctl`: permission to change host-wide kernel knobs.
    pub allow_sysctl: bool,
    /// `--interval`: sampling interval (default 1 s).
    pub interval: Duration,
    /// `--seed`: seeds the random-access streams; recorded.
    pub seed: u64,
    /// `--scale`: recorded only (scaling happens when the workload is
    /// resolved).
    pub scale: f64,
    /// Print progress and notes on stderr.
    pub verbose: bool,
}

impl Default for RealOptions {
    fn default() -> Self {
        RealOptions {
            sets: Vec::new(),
            allow_sysctl: false,
            interval: Duration::from_secs(1),
            seed: 0,
            scale: 1.0,
            verbose: false,
        }
    }
}

/// Why a real or VM run did not produce a record.
#[derive(Debug, thiserror::Error)]
pub enum RealError {
    /// Refused before anything was changed (exit code 2).
    #[error("{0}")]
    Refused(String),
    /// Stopped by a signal after undoing its changes (exit code 130).
    #[error("interrupted by {}: knobs restored, cgroups removed", sys::signal_name(*.0))]
    Interrupted(i32),
    /// Failed while running; changes were undone (exit code 1).
    #[error("{0}")]
    Failed(String),
}

impl RealError {
    /// The process exit code the CLI should use.
    pub fn exit_code(&self) -> i32 {
        match self {
            RealError::Refused(_) => 2,
            RealError::Interrupted(s) => 128 + s,
            RealError::Failed(_) => 1,
        }
    }
}
