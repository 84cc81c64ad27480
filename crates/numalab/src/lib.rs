//! `numalab` as a library: the model runs, sweeps and reproductions the
//! command line and the Python package (`python/`, crate `numalab-py`)
//! share.
//!
//! The modules here are the ones both need: loading machines and
//! workloads and running the model ([`runner`]), sweep points and their
//! result tables ([`sweep`]), the published experiments ([`reproduce`])
//! and the comparison check ([`compare`]). What only the command line
//! uses (argument parsing, real and QEMU runs, validation, traces) stays
//! in the binary (`main.rs`). Left out: a stable Rust API; these are the
//! CLI's own functions, public so the two front ends call the same code.

pub mod compare;
pub mod failure;
pub mod out;
pub mod parallel;
pub mod plot;
pub mod progress;
pub mod reproduce;
pub mod reproduce_check;
pub mod reproduce_decl;
#[cfg(test)]
mod reproduce_experiments;
pub mod reproduce_runs;
pub mod reproductions;
pub mod runner;
pub mod sweep;
pub mod verdict;
