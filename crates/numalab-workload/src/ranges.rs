//! Plausible ranges of every workload constant, declared once.
//!
//! A workload may be unusual (a 1-byte region, a million passes, a day of
//! sleep) but not so large that a run means nothing or never ends in
//! practice (a repeat count of 10^18). [`WORKLOAD_RANGES`] is the one table
//! of field, bounds, unit and reason. Plain numbers (MLP, fractions,
//! distribution parameters) are checked when the spec is parsed; counts,
//! sizes and times, which may be expressions over the machine, when it is
//! resolved, on the value the expression gives before `--scale` shrinks it.
//! `docs/workloads.md` carries the same table (a test keeps them equal).
//!
//! Left out: bounds that depend on the machine (a region larger than its
//! memory, a CPU it does not have), checked by `spec::resolve` itself, and
//! the totals (`MAX_PROCESSES`, `MAX_THREADS`, `MAX_PHASES`).

use numalab_topology::ranges::row as r;
pub use numalab_topology::ranges::{markdown_table, short, PlausibleRange};

/// One day in ns: the longest run the model makes (`MAX_VIRTUAL_NS`).
const DAY_NS: f64 = 86_400e9;

/// Every workload constant's plausible range, by the key
/// `docs/workloads.md` names it with (`stream.passes` is the `passes` of a
/// stream phase).
pub const WORKLOAD_RANGES: &[PlausibleRange] = &[
    r(
        "duration",
        1e3,
        DAY_NS,
        "ns",
        "1 us up to one day, the longest run the model makes",
    ),
    r(
        "process.count",
        0.0,
        65536.0,
        "processes",
        "none up to MAX_PROCESSES",
    ),
    r(
        "process.thread.count",
        0.0,
        65536.0,
        "threads",
        "none up to MAX_THREADS",
    ),
    r(
        "process.region.size",
        1.0,
        4_503_599_627_370_496.0,
        "bytes",
        "1 byte up to 4 PiB, the most memory a plausible machine has (64 nodes x 64 TiB)",
    ),
    r(
        "stream.passes",
        0.0,
        1e9,
        "passes",
        "a billion passes over a buffer is already days of streaming",
    ),
    r(
        "random.accesses",
        0.0,
        1e12,
        "accesses",
        "10^12 cache-line misses is hours of one thread's work",
    ),
    r(
        "random.mlp",
        1.0,
        256.0,
        "misses in flight",
        "one dependent miss at a time up to `bandwidth.line_fill_buffers`' bound",
    ),
    r(
        "random.write_fraction",
        0.0,
        1.0,
        "share",
        "no writes up to all writes",
    ),
    r(
        "random.distribution.zipf",
        1e-3,
        10.0,
        "exponent",
        "near-uniform up to all accesses on the first pages (0.99 is YCSB's)",
    ),
    r(
        "random.distribution.hot",
        1e-6,
        1.0,
        "share of the range",
        "a hot spot of a millionth of the range up to all of it",
    ),
    r(
        "random.distribution.probability",
        0.0,
        1.0,
        "share of accesses",
        "none up to all accesses go to the hot part",
    ),
    r(
        "compute",
        0.0,
        DAY_NS,
        "ns",
        "none up to one day of one CPU",
    ),
    r("sleep", 0.0, DAY_NS, "ns", "none up to one day"),
    r(
        "repeat",
        0.0,
        1e9,
        "iterations",
        "a billion iterations; a throughput workload ends by `duration` long before",
    ),
];

/// The row for `field` (a key as in [`WORKLOAD_RANGES`]).
///
/// # Panics
/// If no row has that name: the spec checker only asks for rows the table
/// has, and a test checks every row is found.
pub fn range(field: &str) -> &'static PlausibleRange {
    WORKLOAD_RANGES
        .iter()
        .find(|r| r.field == field)
        .unwrap_or_else(|| panic!("no plausible range declared for `{field}`"))
}
