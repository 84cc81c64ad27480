//! Declarative workloads.
//!
//! A workload spec is TOML ([`spec`]) naming processes, threads, cgroups,
//! affinities, memory regions with policies, and phases. Counts and bindings
//! may be expressions over the machine (`ncpus`, `nnodes`, ...), so one spec
//! fits every machine. [`spec::resolve`] turns a spec plus a
//! [`numalab_topology::Machine`] into a concrete [`model::Workload`].
//! Presets ([`presets`]) are specs shipped with numalab: the autonumabench
//! tests and their HARD_BIND / INVERSE_BIND forms.

pub mod model;
pub mod presets;
pub mod spec;

pub use model::*;
