//! The workload spec language (TOML) and its resolution against a machine.
//!
//! Models what a benchmark's source and build step fix about a run: which
//! processes and threads exist, which memory each allocates and under which
//! policy (and which memory several processes share, `[[shared]]`), where threads may run, and what each does in order (stream over a
//! buffer like `bzero`, random cache-line accesses, compute, sleep,
//! `set_mempolicy`, `sched_setaffinity`, loops). Three stages, one module
//! each, each importing only the one before it:
//!
//! 1. `parse`: the TOML into syntax types, errors with line and column;
//! 2. `check`: the syntax into the checked [`WorkloadSpec`] (names
//!    resolved, values bounded, cgroup writes typed), one error naming the
//!    field; [`parse()`] runs both;
//! 3. `resolve`: a [`WorkloadSpec`] plus a machine, a seed and a scale into
//!    the engine's [`Workload`](crate::model::Workload) ([`resolve()`]).
//!
//! Left out: the kernel's legality rules for policies and affinities (e.g.
//! MPOL_F_NUMA_BALANCING only with bind/preferred-many, an affinity outside
//! the cgroup's cpuset): the kernel model applies them when the workload makes
//! the call, so a spec may ask for what a proposal makes legal. Also left out:
//! `fork` after start, `munmap`, per-thread random seeds (the engine draws
//! random access addresses from its own seeded streams).
//!
//! The language is documented in `docs/workloads.md`.

mod check;
mod checked;
mod error;
mod limits;
mod parse;
mod resolve;

pub use checked::{
    CgroupSpec, PhaseSpec, PolicyValue, ProcessSpec, RangeSpec, RegionSpec, ThreadSpec,
    WorkloadSpec,
};
pub use error::WorkloadError;
pub use limits::{BUILTIN_VARS, HPAGE, MAX_PHASES, MAX_PROCESSES, MAX_THREADS, PAGE};
pub use parse::Num;
pub use resolve::resolve;
pub use resolve::scale::slice_range;

/// Parses workload TOML. `origin` (a preset name or file path) is named in
/// every error. Checks the structure and the syntax of every expression and
/// set; what depends on the machine is checked by [`resolve()`].
pub fn parse(text: &str, origin: &str) -> Result<WorkloadSpec, WorkloadError> {
    check::check(parse::parse_toml(text, origin)?, origin)
}
