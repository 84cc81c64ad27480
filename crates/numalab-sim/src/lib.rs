//! numalab's model: physics, the modeled Linux kernel, and the engine that
//! runs a workload on them.
//!
//! Layers, imports pointing down only:
//! ```text
//! engine    virtual clock, event queue, run loop, Run record
//! kernel    mm, sched, NUMA balancing, cgroups, knobs, counters
//! physics   fluid memory model, costs of kernel work
//! ```
//! `resort` (sorting a list sorted before) and `gallop` (searching a sorted
//! list from the last answer) are helpers any layer uses.

pub mod engine;
mod gallop;
pub mod kernel;
pub mod physics;
mod resort;

pub use engine::{run, RunOptions, Sim, SimError};
pub use kernel::sysctl::Knobs;
