//! Declarative workloads.
//!
//! A workload spec is TOML ([`spec`]) naming processes, threads, cgroups,
//! affinities, memory regions with policies, and phases. Counts and bindings
//! may be integer expressions over the machine (`ncpus`, `nnodes`, ...,
//! [`expr`]), so one spec fits every machine. [`spec::resolve()`] turns a spec
//! plus a [`numalab_topology::Machine`], a seed and a scale into a concrete
//! [`model::Workload`]. Presets ([`presets`]) are specs shipped with numalab:
//! the autonumabench tests with their HARD_BIND / INVERSE_BIND forms, and an
//! OLTP-like service. The language is documented in `docs/workloads.md`.
//!
//! Left out: workloads that change shape while running (fork/exit mid-run,
//! munmap), and inter-thread synchronisation beyond "start after".

#![warn(missing_docs)]

pub mod expr;
pub mod model;
pub mod presets;
pub mod ranges;
pub mod real_run;
pub mod runtime;
pub mod spec;

pub use model::*;
pub use spec::{parse, resolve, WorkloadError, WorkloadSpec};
