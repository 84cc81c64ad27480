//! Modeled NUMA machines.
//!
//! A [`Machine`] is the resolved, validated description of a box: which CPUs
//! exist, how they group into SMT cores, last-level caches, nodes and packages,
//! the SLIT distance matrix, memory per node, and the physics constants the
//! fluid memory model needs (idle latencies, memory-controller, interconnect
//! and per-core streaming bandwidth). Machines come from TOML specs
//! ([`spec`]), built-in presets ([`presets`]) or an import of a real host's
//! `numactl --hardware` output or `/sys/devices/system/node` ([`import`]).
//!
//! Left out: caches other than the LLC, memory tiers with CPU-less nodes
//! (accepted by the type, but no preset has them), frequency scaling.

#![warn(missing_docs)]

pub mod cpuset;
pub mod import;
pub mod kernel_spec;
pub mod machine;
pub mod presets;
pub mod ranges;
pub mod spec;
mod toml_out;

pub use cpuset::{CpuSet, NodeMask, MAX_NUMNODES};
pub use kernel_spec::{Background, BackgroundPer, KernelParams, VcpuPreemption};
pub use machine::{
    default_links, Bandwidth, Coherence, Cpu, Link, LinkEnds, Machine, Node, Snoop,
    DEFAULT_MESSAGE_BYTES,
};

/// A CPU id, as in `smp_processor_id()`.
pub type CpuId = usize;
/// A NUMA node id.
pub type NodeId = usize;

/// An error in a machine spec or import, naming the offending field.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The TOML did not parse.
    #[error("machine spec {origin}: malformed TOML: {message}")]
    Toml {
        /// File name or preset name.
        origin: String,
        /// Parser message, with line and column.
        message: String,
    },
    /// A field has an impossible or inconsistent value.
    #[error("machine spec {origin}: field `{field}`: {message}")]
    Field {
        /// File name or preset name.
        origin: String,
        /// Dotted path of the field, e.g. `distance.matrix`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// No preset by that name, and no such file.
    #[error(
        "unknown machine '{0}': not a preset (see `numalab list machines`) and not a readable file"
    )]
    Unknown(String),
    /// Import input could not be understood.
    #[error("machine import: {0}")]
    Import(String),
}
