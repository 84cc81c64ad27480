//! Mutation fuzzing of numalab, shared by the test suite and the developers'
//! `cargo run -p xtask -- fuzz N` command.
//!
//! A case is one `u64` seed. From it, [`mutate`] takes a preset machine or
//! workload spec, parses it as TOML and applies the edits a hostile user
//! would try (numbers to 0, negative, huge, tiny, NaN or infinite; strings
//! emptied, garbled or made huge; keys and tables deleted or duplicated;
//! types swapped; workload expressions edited; counts made huge), and
//! [`pipeline`] runs the result through the whole model pipeline (load the
//! machine, parse, resolve, build the `Sim`, run it at a small scale with a
//! short modeled-time cap), catching panics, and classifies what happened
//! ([`Outcome`]). [`cli`] makes hostile `numalab run` command lines for the
//! CLI test, which runs the built binary.
//!
//! Left out: coverage guidance (the mutations are blind, as a user is),
//! minimising a failing input (the seed and the mutated text reproduce it),
//! and every subcommand but `run` on the command line.

pub mod cli;
pub mod mutate;
pub mod pipeline;

pub use pipeline::{run_case, Case, Counts, Limits, Outcome};
