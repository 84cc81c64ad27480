//! Limits and names shared by the stages: the page sizes regions and slices
//! are counted in, the most processes, threads and phases a workload may
//! expand to, and the built-in expression variables. Left out: per-field
//! plausible ranges, which live in [`crate::ranges`].

/// Base page size: regions and slices are counted in these.
pub const PAGE: u64 = 4096;
/// Transparent huge page size, the slice granularity of big `thp` regions.
pub const HPAGE: u64 = 2 << 20;

/// Most process instances a workload may have.
pub const MAX_PROCESSES: u64 = 1 << 16;
/// Most threads a workload may have in total.
pub const MAX_THREADS: u64 = 1 << 16;
/// Most resolved phases plus `for` iterations a workload may expand to.
pub const MAX_PHASES: u64 = 4_000_000;

/// Variables every expression may use, and that loop variables may not shadow.
pub const BUILTIN_VARS: &[&str] = &[
    "ncpus",
    "nnodes",
    "ncores",
    "cpus_per_node",
    "seed",
    "p",
    "np",
    "i",
    "n",
];
