//! Plausible ranges of every machine constant, declared once.
//!
//! A spec may describe unusual hardware (a 1-socket box, a 32-socket box,
//! CXL memory-only nodes, HBM, a QEMU guest) but not values no hardware has:
//! those make the model meaningless or make a run grind (a node bandwidth of
//! 1e-300 GB/s). [`MACHINE_RANGES`] is the one table of field, bounds, unit
//! and reason; the parser checks every value it reads or derives against it,
//! and `docs/machines.md` carries the same table (a test keeps them equal).
//!
//! Left out: consistency between fields (e.g. remote latency not below
//! local), which the parser checks where it resolves them, and the model's
//! hard limits (64 nodes, 8192 CPUs), which are not about plausibility.

use std::fmt::Write as _;

/// The plausible range of one machine constant, bounds inclusive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlausibleRange {
    /// The field as `docs/machines.md` names it, e.g. `bandwidth.node_gbps`.
    pub field: &'static str,
    /// Smallest plausible value.
    pub min: f64,
    /// Largest plausible value.
    pub max: f64,
    /// Unit of the value, e.g. `GB/s`.
    pub unit: &'static str,
    /// Why these bounds: the hardware at either end.
    pub why: &'static str,
}

impl PlausibleRange {
    /// `Ok` when `v` lies in the range; else the error message, e.g.
    /// `1e-300 is outside the plausible range [0.1, 10000] GB/s`. NaN is
    /// outside every range.
    pub fn check(&self, v: f64) -> Result<(), String> {
        if v >= self.min && v <= self.max {
            Ok(())
        } else {
            Err(format!(
                "{} is outside the plausible range [{}, {}] {}",
                short(v),
                short(self.min),
                short(self.max),
                self.unit
            ))
        }
    }
}

/// `v` as written by a person: plain for ordinary magnitudes, else in
/// exponent form (`1e-300`, not 300 zeros).
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || !a.is_finite() || (1e-4..1e9).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// A row of a range table (the tables call it `r` to keep one line a row).
pub const fn row(
    field: &'static str,
    min: f64,
    max: f64,
    unit: &'static str,
    why: &'static str,
) -> PlausibleRange {
    PlausibleRange {
        field,
        min,
        max,
        unit,
        why,
    }
}

use row as r;

/// Every machine constant's plausible range. Fields given per node or per
/// pair (`nodes[i].mem_gib`, `distance.matrix[a][b]`) have one row.
pub const MACHINE_RANGES: &[PlausibleRange] = &[
    r("topology.packages", 1.0, 64.0, "packages",
      "1-socket boxes up to 32-socket ones (HPE Superdome Flex), within the model's 64 nodes"),
    r("topology.nodes_per_package", 1.0, 16.0, "nodes",
      "no sub-NUMA clustering up to SNC4 / NPS4, with room for CXL nodes per socket"),
    r("topology.cores_per_node", 1.0, 1024.0, "cores",
      "a 1-core guest node up to a whole 192-core AMD Turin socket (NPS1) and beyond"),
    r("topology.threads_per_core", 1.0, 8.0, "threads",
      "no SMT up to SMT8 (IBM POWER)"),
    r("nodes[i].threads_per_core", 1.0, 8.0, "threads",
      "as `topology.threads_per_core`"),
    r("topology.llcs_per_node", 1.0, 64.0, "LLCs",
      "one shared L3 up to one L3 per CCX (16 per AMD socket)"),
    r("memory.per_node_gib", 1.0 / 64.0, 65536.0, "GiB",
      "16 MiB (a small guest node) up to 64 TiB (a CXL memory-only node, a big socket)"),
    r("nodes[i].mem_gib", 1.0 / 64.0, 65536.0, "GiB",
      "as `memory.per_node_gib`"),
    r("distance.matrix[a][b]", 11.0, 254.0, "SLIT",
      "off the diagonal, as Linux's slit_valid(): above LOCAL_DISTANCE 10, below 255 (unreachable)"),
    r("latency.local_ns", 20.0, 10000.0, "ns",
      "on-package HBM and DRAM (60-150 ns) up to an emulated node under QEMU TCG (4740 ns, validate/guest-4n.toml)"),
    r("latency.same_package_ns", 20.0, 10000.0, "ns",
      "as `latency.local_ns`: a same-package node costs a few percent more (Cluster-on-Die: up to 2x)"),
    r("latency.remote_ns", 20.0, 20000.0, "ns",
      "as `latency.local_ns`, with room for CXL behind a switch and multi-hop sockets"),
    r("latency.matrix[a][b]", 20.0, 20000.0, "ns",
      "every entry, given or derived by SLIT scaling: the bounds of `latency.local_ns` and `latency.remote_ns`"),
    r("bandwidth.node_gbps", 0.1, 10000.0, "GB/s",
      "one DDR channel of an old or emulated node up to HBM3 (5.3 TB/s on an MI300 socket)"),
    r("bandwidth.link_gbps", 0.1, 10000.0, "GB/s",
      "a slow emulated or CXL link up to the fastest node bandwidth"),
    r("bandwidth.same_package_link_gbps", 0.1, 20000.0, "GB/s",
      "as `bandwidth.link_gbps`; the default, twice the node bandwidth, reaches 20000"),
    r("bandwidth.core_gbps", 0.001, 2000.0, "GB/s",
      "given or derived: a thread under QEMU TCG (0.135 GB/s, validate/guest-4n.toml; derived from 1 fill buffer at 10000 ns: 0.0064) up to 256 fill buffers at 20 ns"),
    r("bandwidth.line_fill_buffers", 1.0, 256.0, "misses",
      "outstanding L1D misses per core: 10-16 on x86 cores, more on wide designs"),
    r("bandwidth.smt_throughput", 0.5, 8.0, "x one thread",
      "siblings that thrash each other (below 1) up to SMT8 scaling"),
    r("links[k].count", 1.0, 64.0, "links",
      "one link up to a bundle far wider than any socket pair has (Granite Rapids: 6 UPI links per socket)"),
    r("links[k].gbps", 0.1, 10000.0, "GB/s",
      "as `bandwidth.link_gbps`, per link of the bundle"),
    r("coherence.message_bytes", 0.5, 64.0, "bytes",
      "a message packed several to a flit up to one as large as a data line; QPI's one header flit is 64/9 = 7.1"),
];

/// The row for `field` (a name as in [`MACHINE_RANGES`]).
///
/// # Panics
/// If no row has that name: the parser only asks for rows the table has,
/// and a test checks every name it uses.
pub fn range(field: &str) -> &'static PlausibleRange {
    MACHINE_RANGES
        .iter()
        .find(|r| r.field == field)
        .unwrap_or_else(|| panic!("no plausible range declared for `{field}`"))
}

/// Renders ranges as the Markdown table `docs/machines.md` and
/// `docs/workloads.md` carry: field, min, max, unit, why.
pub fn markdown_table(ranges: &[PlausibleRange]) -> String {
    let mut s = String::from("| field | min | max | unit | why |\n|---|---|---|---|---|\n");
    for r in ranges {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} |",
            r.field,
            short(r.min),
            short(r.max),
            r.unit,
            r.why
        );
    }
    s
}

/// Checks that the doc at `path` carries `ranges` as the table between its
/// `<!-- MARKER:begin (generated from SOURCE; a test checks it) -->` and
/// `<!-- MARKER:end -->` lines; with `bless`, rewrites the table in place
/// instead. Used by the machine and workload crates' doc tests, so a range
/// table and its documentation cannot drift apart.
pub fn check_doc_table(
    path: &std::path::Path,
    marker: &str,
    source: &str,
    ranges: &[PlausibleRange],
    bless: bool,
) -> Result<(), String> {
    let shown = path.display();
    let doc = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    let begin = format!("<!-- {marker}:begin (generated from {source}; a test checks it) -->\n");
    let end = format!("<!-- {marker}:end -->");
    let (head, rest) = doc
        .split_once(&begin)
        .ok_or_else(|| format!("{shown}: no line {begin:?}"))?;
    let (table, tail) = rest
        .split_once(&end)
        .ok_or_else(|| format!("{shown}: no line {end:?}"))?;
    let want = markdown_table(ranges);
    if bless {
        return std::fs::write(path, format!("{head}{begin}{want}{end}{tail}"))
            .map_err(|e| format!("{shown}: {e}"));
    }
    if table == want {
        Ok(())
    } else {
        Err(format!(
            "{shown} is out of date: run the test with NUMALAB_BLESS=1\n--- doc\n{table}\n--- declared\n{want}"
        ))
    }
}
