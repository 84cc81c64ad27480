//! TOML machine specs: parsing and validation into a [`crate::Machine`], and
//! writing a machine back out as a spec.
//!
//! A spec gives the topology in one of two forms: the *uniform shorthand*
//! (`[topology]`: packages x nodes per package x cores per node x threads per
//! core, with a CPU numbering rule) or *explicit nodes* (`[[nodes]]` with a
//! cpulist each, optional `[[smt]]` and `[[llc]]` groups), which is what an
//! import produces. Distances (`[distance]`), idle latencies (`[latency]`) and
//! bandwidths (`[bandwidth]`) complete it. Every value filled from a default is
//! recorded in [`Machine::sources`]. `docs/machines.md` documents every field.
//!
//! Models: SMT siblings, LLC groups, sub-NUMA clustering (several nodes per
//! package), CPU-less memory nodes, the ACPI SLIT, the interconnect's link
//! bundles and coherence overhead (`[[links]]`, `[coherence]`: [`links`]).
//! Leaves out: caches other than the LLC, heterogeneous (hybrid) cores,
//! latency per route (latency comes from the SLIT and `[latency]`), CPU
//! hotplug.

mod links;

use crate::ranges;
use crate::toml_out::{toml_f64, toml_list, toml_matrix, toml_str};
use crate::{Bandwidth, Cpu, CpuSet, Machine, Node, TopologyError, MAX_NUMNODES};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::fmt::{self, Write as _};

/// Most CPUs a model may have (the largest x86 `NR_CPUS`, 8192).
pub const MAX_CPUS: usize = 8192;
/// SLIT distance of a node to itself (`LOCAL_DISTANCE`).
pub const LOCAL_DISTANCE: u32 = 10;
/// Default SLIT distance between two nodes of one package.
pub const DEFAULT_SAME_PACKAGE_DISTANCE: u32 = 12;
/// Default SLIT distance between nodes of different packages
/// (`REMOTE_DISTANCE`).
pub const DEFAULT_REMOTE_DISTANCE: u32 = 21;
/// Largest SLIT distance the model accepts (255 means "unreachable").
pub const MAX_DISTANCE: u32 = 254;
/// Default same-package latency as a multiple of local latency
/// (Intel MLC: a same-socket sub-node costs +5-10% over local on Cascade
/// Lake 8269CY SNC2, plantegg/plantegg.github.io CPU notes, and on EPYC 9224
/// NPS2, public GitHub CXL notes whose repository was not identified).
pub const DEFAULT_SAME_PACKAGE_LATENCY_FACTOR: f64 = 1.08;
/// Default number of outstanding L1D misses per core, used to derive
/// `bandwidth.core_gbps` (Little's law).
pub const DEFAULT_LINE_FILL_BUFFERS: u32 = 10;
/// Bytes per cache line.
pub const CACHE_LINE_BYTES: u32 = 64;
/// Default whole-core throughput with all SMT siblings busy, relative to one
/// thread alone.
pub const DEFAULT_SMT_THROUGHPUT: f64 = 1.25;

const GIB: f64 = (1u64 << 30) as f64;
/// Largest memory per node accepted, in GiB (16 PiB): keeps bytes in `u64`
/// and exact in `f64`.
const MAX_NODE_GIB: f64 = (1u64 << 24) as f64;
/// Smallest memory per node accepted: one 4 KiB page.
const MIN_NODE_BYTES: u64 = 4096;

// ---------------------------------------------------------------------------
// The TOML schema (private; the public surface is `parse_machine`).
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    name: Option<String>,
    description: Option<String>,
    sources: Option<Vec<String>>,
    topology: Option<TopologySpec>,
    memory: Option<MemorySpec>,
    nodes: Option<Vec<NodeSpec>>,
    smt: Option<Vec<SmtSpec>>,
    llc: Option<Vec<LlcSpec>>,
    distance: Option<DistanceSpec>,
    latency: Option<LatencySpec>,
    bandwidth: Option<BandwidthSpec>,
    links: Option<Vec<links::LinkSpec>>,
    coherence: Option<links::CoherenceSpec>,
    kernel: Option<crate::kernel_spec::KernelSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TopologySpec {
    packages: Option<i64>,
    nodes_per_package: Option<i64>,
    cores_per_node: Option<i64>,
    threads_per_core: Option<i64>,
    llcs_per_node: Option<i64>,
    cpu_numbering: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemorySpec {
    per_node_gib: Option<Scalars>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeSpec {
    cpus: Option<String>,
    mem_gib: Option<f64>,
    package: Option<i64>,
    threads_per_core: Option<i64>,
    cpu_numbering: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SmtSpec {
    siblings: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LlcSpec {
    cpus: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DistanceSpec {
    matrix: Option<Vec<Vec<i64>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LatencySpec {
    local_ns: Option<f64>,
    same_package_ns: Option<f64>,
    remote_ns: Option<f64>,
    matrix: Option<Vec<Vec<f64>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BandwidthSpec {
    node_gbps: Option<Scalars>,
    link_gbps: Option<f64>,
    same_package_link_gbps: Option<f64>,
    core_gbps: Option<f64>,
    line_fill_buffers: Option<i64>,
    smt_throughput: Option<f64>,
}

/// A number, or one number per node.
enum Scalars {
    One(f64),
    Many(Vec<f64>),
}

impl<'de> Deserialize<'de> for Scalars {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalars;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or an array of numbers (one per node)")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalars, E> {
                Ok(Scalars::One(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalars, E> {
                Ok(Scalars::One(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalars, E> {
                Ok(Scalars::One(v as f64))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalars, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element::<f64>()? {
                    v.push(x);
                }
                Ok(Scalars::Many(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// How CPU ids are laid over cores and threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Numbering {
    /// First threads of all cores first, then second threads (Linux on Intel).
    SmtLast,
    /// Siblings get consecutive ids (Linux on AMD, most VMs).
    SmtAdjacent,
}

impl Numbering {
    fn parse(ctx: &Ctx, field: &str, s: Option<&str>) -> Result<Numbering, TopologyError> {
        match s {
            None | Some("smt-last") => Ok(Numbering::SmtLast),
            Some("smt-adjacent") => Ok(Numbering::SmtAdjacent),
            Some(other) => Err(ctx.field(
                field,
                format!("'{other}' is not a CPU numbering: use \"smt-last\" or \"smt-adjacent\""),
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Numbering::SmtLast => "smt-last",
            Numbering::SmtAdjacent => "smt-adjacent",
        }
    }
}

// ---------------------------------------------------------------------------
// Intermediate layout shared by the parser, `to_toml` and the importers.
// ---------------------------------------------------------------------------

/// One node of a [`Layout`].
#[derive(Clone, Debug)]
pub(crate) struct LayoutNode {
    pub cpus: CpuSet,
    pub mem_bytes: u64,
    pub package: usize,
}

/// Topology without physics: nodes, SMT cores and LLC groups, each a set of
/// CPU ids. Every CPU is in exactly one core and one LLC.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub nodes: Vec<LayoutNode>,
    pub cores: Vec<CpuSet>,
    pub llcs: Vec<CpuSet>,
}

struct Ctx<'a> {
    origin: &'a str,
    notes: Vec<String>,
}

impl Ctx<'_> {
    fn field(&self, field: impl Into<String>, message: impl Into<String>) -> TopologyError {
        TopologyError::Field {
            origin: self.origin.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }

    fn note(&mut self, s: String) {
        self.notes.push(s);
    }

    /// A finite, strictly positive number.
    fn positive(&self, field: &str, v: f64) -> Result<f64, TopologyError> {
        if v.is_nan() {
            Err(self.field(field, "is NaN"))
        } else if !v.is_finite() {
            Err(self.field(field, format!("must be finite, got {v}")))
        } else if v <= 0.0 {
            Err(self.field(field, format!("must be greater than 0, got {v}")))
        } else {
            Ok(v)
        }
    }

    /// `v` checked against the plausible range declared for `key`
    /// ([`ranges::MACHINE_RANGES`]), the error naming `field`.
    fn ranged(&self, key: &str, field: &str, v: f64) -> Result<f64, TopologyError> {
        ranges::range(key)
            .check(v)
            .map(|()| v)
            .map_err(|m| self.field(field, m))
    }

    /// A finite positive number within the plausible range of `key`.
    fn positive_in(&self, key: &str, field: &str, v: f64) -> Result<f64, TopologyError> {
        let v = self.positive(field, v)?;
        self.ranged(key, field, v)
    }

    /// A count (as [`Ctx::count`]) within the plausible range of `key`.
    fn count_in(
        &self,
        key: &str,
        field: &str,
        v: Option<i64>,
        max: usize,
    ) -> Result<usize, TopologyError> {
        let v = self.count(field, v, max)?;
        self.ranged(key, field, v as f64)?;
        Ok(v)
    }

    /// A value the parser derived (a default or a formula) within the
    /// plausible range of `key`: the error says how it was derived.
    fn derived_in(&self, key: &str, how: &str, v: f64) -> Result<f64, TopologyError> {
        ranges::range(key)
            .check(v)
            .map(|()| v)
            .map_err(|m| self.field(key, format!("{how}: {m}")))
    }

    /// A count of at least 1, at most `max`.
    fn count(&self, field: &str, v: Option<i64>, max: usize) -> Result<usize, TopologyError> {
        let v = v.ok_or_else(|| self.field(field, "missing"))?;
        if v < 1 {
            return Err(self.field(field, format!("must be at least 1, got {v}")));
        }
        if v as u64 > max as u64 {
            return Err(self.field(
                field,
                format!("{v} is more than the model's limit of {max}"),
            ));
        }
        Ok(v as usize)
    }

    fn cpulist(&self, field: &str, s: &str) -> Result<CpuSet, TopologyError> {
        let set = CpuSet::parse_list(s).map_err(|e| self.field(field, e))?;
        if let Some(last) = set.last() {
            if last >= MAX_CPUS {
                return Err(self.field(
                    field,
                    format!("CPU {last} is beyond the model's limit of {MAX_CPUS} CPUs"),
                ));
            }
        }
        Ok(set)
    }
}

/// Parses and validates a TOML machine spec. `origin` (a file or preset name)
/// is used in error messages and as the machine's name when the spec has no
/// `name`.
///
/// Malformed TOML gives [`TopologyError::Toml`] with the parser's line and
/// column. Unknown keys, values of the wrong type, and impossible or
/// inconsistent values give [`TopologyError::Field`] naming the dotted field
/// (e.g. `topology.bogus`, `nodes[1].cpus`, `distance.matrix[0][1]`).
/// Never panics.
pub fn parse_machine(text: &str, origin: &str) -> Result<Machine, TopologyError> {
    let spec: SpecFile = toml::from_str(text).map_err(|e| toml_error(text, origin, &e))?;
    let mut ctx = Ctx {
        origin,
        notes: Vec::new(),
    };
    let layout = match (&spec.topology, &spec.nodes) {
        (Some(_), Some(_)) => {
            return Err(ctx.field("nodes", "give either [topology] or [[nodes]], not both"))
        }
        (None, None) => {
            return Err(ctx.field(
                "topology",
                "missing: give the uniform [topology] table or explicit [[nodes]]",
            ))
        }
        (Some(t), None) => {
            if spec.smt.is_some() {
                return Err(ctx.field("smt", "only with explicit [[nodes]], not with [topology]"));
            }
            if spec.llc.is_some() {
                return Err(ctx.field("llc", "only with explicit [[nodes]], not with [topology]"));
            }
            uniform_layout(&ctx, t, spec.memory.as_ref())?
        }
        (None, Some(nodes)) => explicit_layout(
            &ctx,
            nodes,
            spec.smt.as_deref().unwrap_or(&[]),
            spec.llc.as_deref().unwrap_or(&[]),
            spec.memory.as_ref(),
        )?,
    };
    let nr_nodes = layout.nodes.len();
    let packages: Vec<usize> = layout.nodes.iter().map(|n| n.package).collect();
    let distance = resolve_distance(&mut ctx, spec.distance.as_ref(), &packages)?;
    let has_cpus: Vec<bool> = layout.nodes.iter().map(|n| !n.cpus.is_empty()).collect();
    let (latency_ns, local_ns) = resolve_latency(
        &mut ctx,
        spec.latency.as_ref(),
        &packages,
        &has_cpus,
        &distance,
    )?;
    let given_links = links::parse_links(&ctx, spec.links.as_deref().unwrap_or(&[]), &packages)?;
    let bandwidth = resolve_bandwidth(
        &mut ctx,
        spec.bandwidth.as_ref(),
        nr_nodes,
        &packages,
        local_ns,
        links::widest_package_bundle(&given_links),
    )?;
    let links = links::complete_links(
        &mut ctx,
        given_links,
        &packages,
        bandwidth.link_gbps,
        bandwidth.same_package_link_gbps,
    )?;
    let coherence = links::resolve_coherence(&mut ctx, spec.coherence.as_ref())?;

    let mut sources = spec.sources.unwrap_or_default();
    for n in ctx.notes {
        if !sources.contains(&n) {
            sources.push(n);
        }
    }
    let (cpus, nodes) = resolve_ids(&layout);
    Ok(Machine {
        name: spec.name.unwrap_or_else(|| origin.to_string()),
        description: spec.description.unwrap_or_default(),
        cpus,
        nodes,
        distance,
        latency_ns,
        bandwidth,
        links,
        coherence,
        sources,
        kernel: crate::kernel_spec::resolve_kernel(spec.kernel, origin)?,
    })
}

/// Maps a TOML error. An unknown key, or a value of the wrong type on a
/// `key = value` line, becomes [`TopologyError::Field`] naming the dotted key
/// (its table found from the header above it) with line and column; anything
/// A TOML parser error on one line: `line L, column C: message`.
pub fn one_line_toml_error(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {col}: {msg}")
        }
        None => msg,
    }
}

/// else (a syntax error) is [`TopologyError::Toml`] with the parser's line
/// and column.
fn toml_error(text: &str, origin: &str, e: &toml::de::Error) -> TopologyError {
    let toml = || TopologyError::Toml {
        origin: origin.to_string(),
        message: one_line_toml_error(text, e),
    };
    let msg = e.message();
    let Some(start) = e.span().map(|s| s.start) else {
        return toml();
    };
    let Some(before) = text.get(..start) else {
        return toml();
    };
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_no = before.matches('\n').count() + 1;
    let col = before[line_start..].chars().count() + 1;
    let line = text[line_start..].lines().next().unwrap_or("");
    let unknown = msg
        .strip_prefix("unknown field `")
        .and_then(|r| r.split_once('`'))
        .map(|(k, _)| k);
    let key = match unknown {
        Some(k) => k,
        None if msg.starts_with("invalid type") || msg.starts_with("invalid value") => {
            match line.split_once('=') {
                Some((k, _)) => k.trim(),
                None => return toml(),
            }
        }
        None => return toml(),
    };
    let bare = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    // Only when the key starts its own line is the header above its table.
    if key.is_empty() || !key.chars().all(bare) || !line.trim_start().starts_with(key) {
        return toml();
    }
    let headers: Vec<(bool, &str)> = before[..line_start]
        .lines()
        .filter_map(table_header)
        .collect();
    let table = match headers.last() {
        None => String::new(),
        Some(&(true, name)) => {
            let count = headers.iter().filter(|&&(arr, n)| arr && n == name).count();
            format!("{name}[{}].", count.saturating_sub(1))
        }
        Some(&(false, name)) => format!("{name}."),
    };
    let message = match unknown {
        Some(_) => {
            let expected = msg.split_once(", ").map_or("", |(_, r)| r);
            format!("unknown key (line {line_no}, column {col}); {expected}")
        }
        None => format!("{msg} (line {line_no}, column {col})"),
    };
    TopologyError::Field {
        origin: origin.to_string(),
        field: format!("{table}{key}"),
        message,
    }
}

/// A table header line: `[name]` gives `(false, name)`, `[[name]]` gives
/// `(true, name)`. Array rows such as `[10, 21],` are not headers.
fn table_header(line: &str) -> Option<(bool, &str)> {
    let l = line.trim();
    let (array, rest) = match l.strip_prefix("[[") {
        Some(r) => (true, r),
        None => (false, l.strip_prefix('[')?),
    };
    let close = if array { "]]" } else { "]" };
    let (name, after) = rest.split_once(close)?;
    let after = after.trim();
    let name = name.trim();
    let bare = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    (!name.is_empty() && name.chars().all(bare) && (after.is_empty() || after.starts_with('#')))
        .then_some((array, name))
}

/// Expands the uniform `[topology]` shorthand.
fn uniform_layout(
    ctx: &Ctx,
    t: &TopologySpec,
    memory: Option<&MemorySpec>,
) -> Result<Layout, TopologyError> {
    let c = |field: &str, v: Option<i64>, max: usize| ctx.count_in(field, field, v, max);
    let packages = c("topology.packages", t.packages, MAX_NUMNODES)?;
    let npp = c(
        "topology.nodes_per_package",
        t.nodes_per_package,
        MAX_NUMNODES,
    )?;
    let cpn = c("topology.cores_per_node", t.cores_per_node, MAX_CPUS)?;
    let tpc = c("topology.threads_per_core", t.threads_per_core, MAX_CPUS)?;
    let lpn = c(
        "topology.llcs_per_node",
        t.llcs_per_node.or(Some(1)),
        MAX_CPUS,
    )?;
    let numbering = Numbering::parse(ctx, "topology.cpu_numbering", t.cpu_numbering.as_deref())?;
    let nr_nodes = packages * npp;
    if nr_nodes > MAX_NUMNODES {
        return Err(ctx.field(
            "topology.nodes_per_package",
            format!(
                "packages x nodes_per_package = {nr_nodes} nodes, more than the model's limit of {MAX_NUMNODES}"
            ),
        ));
    }
    let nr_cpus = nr_nodes * cpn * tpc; // each factor is bounded, no overflow
    if nr_cpus > MAX_CPUS {
        return Err(ctx.field(
            "topology.cores_per_node",
            format!("the topology has {nr_cpus} CPUs, more than the model's limit of {MAX_CPUS}"),
        ));
    }
    if cpn % lpn != 0 {
        return Err(ctx.field(
            "topology.llcs_per_node",
            format!("{lpn} LLCs do not divide cores_per_node = {cpn} evenly"),
        ));
    }
    let mem = memory_per_node(ctx, memory, nr_nodes, None)?;
    let nr_cores = nr_nodes * cpn;
    let cores_per_llc = cpn / lpn;
    let mut nodes = Vec::with_capacity(nr_nodes);
    let mut cores = Vec::with_capacity(nr_cores);
    let mut llcs = Vec::with_capacity(nr_nodes * lpn);
    for (n, &mem_bytes) in mem.iter().enumerate() {
        let mut node_cpus = CpuSet::new();
        let mut llc = CpuSet::new();
        for k in 0..cpn {
            let g = n * cpn + k;
            let core: CpuSet = (0..tpc)
                .map(|th| match numbering {
                    Numbering::SmtLast => th * nr_cores + g,
                    Numbering::SmtAdjacent => g * tpc + th,
                })
                .collect();
            node_cpus = node_cpus.or(&core);
            llc = llc.or(&core);
            cores.push(core);
            if (k + 1) % cores_per_llc == 0 {
                llcs.push(std::mem::take(&mut llc));
            }
        }
        nodes.push(LayoutNode {
            cpus: node_cpus,
            mem_bytes,
            package: n / npp,
        });
    }
    Ok(Layout { nodes, cores, llcs })
}

/// Memory per node in bytes, from `nodes[i].mem_gib` (when given) or
/// `memory.per_node_gib`.
fn memory_per_node(
    ctx: &Ctx,
    memory: Option<&MemorySpec>,
    nr_nodes: usize,
    per_node: Option<&[Option<f64>]>,
) -> Result<Vec<u64>, TopologyError> {
    let shared = memory.and_then(|m| m.per_node_gib.as_ref());
    if let Some(Scalars::Many(v)) = shared {
        if v.len() != nr_nodes {
            return Err(ctx.field(
                "memory.per_node_gib",
                format!("has {} entries, the machine has {nr_nodes} nodes", v.len()),
            ));
        }
    }
    let mut out = Vec::with_capacity(nr_nodes);
    for i in 0..nr_nodes {
        let own = per_node.and_then(|p| p[i]);
        let (field, gib) = match (own, shared) {
            (Some(g), _) => (format!("nodes[{i}].mem_gib"), g),
            (None, Some(Scalars::One(g))) => ("memory.per_node_gib".to_string(), *g),
            (None, Some(Scalars::Many(v))) => (format!("memory.per_node_gib[{i}]"), v[i]),
            (None, None) => {
                let field = if per_node.is_some() {
                    format!("nodes[{i}].mem_gib")
                } else {
                    "memory.per_node_gib".to_string()
                };
                return Err(ctx.field(field, "missing: memory per node in GiB"));
            }
        };
        let key = if own.is_some() {
            "nodes[i].mem_gib"
        } else {
            "memory.per_node_gib"
        };
        let gib = ctx.positive_in(key, &field, gib)?;
        if gib > MAX_NODE_GIB {
            return Err(ctx.field(
                &field,
                format!("{gib} GiB is more than the model's limit of {MAX_NODE_GIB} GiB per node"),
            ));
        }
        let bytes = (gib * GIB).round() as u64;
        if bytes < MIN_NODE_BYTES {
            return Err(ctx.field(&field, format!("{gib} GiB is less than one 4 KiB page")));
        }
        out.push(bytes);
    }
    Ok(out)
}

/// Builds the layout of explicit `[[nodes]]`, `[[smt]]` and `[[llc]]`.
fn explicit_layout(
    ctx: &Ctx,
    specs: &[NodeSpec],
    smt: &[SmtSpec],
    llc: &[LlcSpec],
    memory: Option<&MemorySpec>,
) -> Result<Layout, TopologyError> {
    if specs.is_empty() {
        return Err(ctx.field("nodes", "is empty: a machine needs at least one node"));
    }
    if specs.len() > MAX_NUMNODES {
        return Err(ctx.field(
            "nodes",
            format!(
                "{} nodes, more than the model's limit of {MAX_NUMNODES}",
                specs.len()
            ),
        ));
    }
    // CPUs of each node, each CPU in one node only.
    let mut node_cpus = Vec::with_capacity(specs.len());
    let mut owner: Vec<Option<usize>> = Vec::new();
    let mut total = 0usize;
    for (i, n) in specs.iter().enumerate() {
        let field = format!("nodes[{i}].cpus");
        let s = n.cpus.as_deref().ok_or_else(|| {
            ctx.field(&field, "missing (write cpus = \"\" for a memory-only node)")
        })?;
        let set = ctx.cpulist(&field, s)?;
        total += set.len();
        if total > MAX_CPUS {
            return Err(ctx.field(
                &field,
                format!("more than the model's limit of {MAX_CPUS} CPUs"),
            ));
        }
        for c in set.iter() {
            if owner.len() <= c {
                owner.resize(c + 1, None);
            }
            if let Some(j) = owner[c] {
                return Err(ctx.field(&field, format!("CPU {c} is also in nodes[{j}]")));
            }
            owner[c] = Some(i);
        }
        node_cpus.push(set);
    }
    if total == 0 {
        return Err(ctx.field(
            "nodes",
            "no node has CPUs: a machine needs at least one CPU",
        ));
    }
    if let Some(missing) = owner.iter().position(Option::is_none) {
        return Err(ctx.field(
            "nodes",
            format!(
                "CPU ids must run from 0 without gaps: CPU {missing} is in no node (highest is {})",
                owner.len() - 1
            ),
        ));
    }
    let owner: Vec<usize> = owner.into_iter().flatten().collect();

    // Packages: default one per node; ids must run from 0 without gaps.
    let mut packages = Vec::with_capacity(specs.len());
    for (i, n) in specs.iter().enumerate() {
        let p = n.package.unwrap_or(i as i64);
        if p < 0 || p as u64 >= MAX_NUMNODES as u64 {
            return Err(ctx.field(
                format!("nodes[{i}].package"),
                format!("must be between 0 and {}, got {p}", MAX_NUMNODES - 1),
            ));
        }
        packages.push(p as usize);
    }
    let used: BTreeSet<usize> = packages.iter().copied().collect();
    if let Some(gap) = (0..used.len()).find(|p| !used.contains(p)) {
        let i = packages.iter().position(|&p| p >= used.len()).unwrap_or(0);
        return Err(ctx.field(
            format!("nodes[{i}].package"),
            format!("package ids must run from 0 without gaps: no node is in package {gap}"),
        ));
    }

    let own_mem: Vec<Option<f64>> = specs.iter().map(|n| n.mem_gib).collect();
    let mem = memory_per_node(ctx, memory, specs.len(), Some(&own_mem))?;

    // SMT cores: per-node threads_per_core, or explicit [[smt]] groups.
    let mut tpcs = Vec::with_capacity(specs.len());
    for (i, n) in specs.iter().enumerate() {
        let tpc = ctx.count_in(
            "nodes[i].threads_per_core",
            &format!("nodes[{i}].threads_per_core"),
            n.threads_per_core.or(Some(1)),
            MAX_CPUS,
        )?;
        let numbering = Numbering::parse(
            ctx,
            &format!("nodes[{i}].cpu_numbering"),
            n.cpu_numbering.as_deref(),
        )?;
        if node_cpus[i].len() % tpc != 0 {
            return Err(ctx.field(
                format!("nodes[{i}].threads_per_core"),
                format!(
                    "{tpc} threads per core do not divide the node's {} CPUs evenly",
                    node_cpus[i].len()
                ),
            ));
        }
        tpcs.push((tpc, numbering));
    }
    let nr_cpus = owner.len();
    let mut core_of: Vec<Option<usize>> = vec![None; nr_cpus];
    let mut cores: Vec<CpuSet> = Vec::new();
    for (k, g) in smt.iter().enumerate() {
        let field = format!("smt[{k}].siblings");
        let s = g
            .siblings
            .as_deref()
            .ok_or_else(|| ctx.field(&field, "missing"))?;
        let set = group_in_one_node(ctx, &field, s, &owner)?;
        let node = owner[set.first().unwrap_or(0)];
        if tpcs[node].0 > 1 {
            return Err(ctx.field(
                &field,
                format!("node {node} also sets threads_per_core: use one or the other"),
            ));
        }
        for c in set.iter() {
            if let Some(j) = core_of[c] {
                return Err(ctx.field(&field, format!("CPU {c} is also in smt[{j}]")));
            }
            core_of[c] = Some(k);
        }
        cores.push(set);
    }
    for (i, cpus) in node_cpus.iter().enumerate() {
        let (tpc, numbering) = tpcs[i];
        let list: Vec<usize> = cpus.iter().collect();
        if tpc > 1 {
            cores.extend(split_cores(&list, tpc, numbering));
        } else {
            cores.extend(
                list.iter()
                    .filter(|&&c| core_of[c].is_none())
                    .map(|&c| std::iter::once(c).collect::<CpuSet>()),
            );
        }
    }

    // LLCs: explicit [[llc]] groups; CPUs in none share one LLC per node.
    let mut llc_of: Vec<Option<usize>> = vec![None; nr_cpus];
    let mut llcs: Vec<CpuSet> = Vec::new();
    for (k, g) in llc.iter().enumerate() {
        let field = format!("llc[{k}].cpus");
        let s = g
            .cpus
            .as_deref()
            .ok_or_else(|| ctx.field(&field, "missing"))?;
        let set = group_in_one_node(ctx, &field, s, &owner)?;
        for c in set.iter() {
            if let Some(j) = llc_of[c] {
                return Err(ctx.field(&field, format!("CPU {c} is also in llc[{j}]")));
            }
            llc_of[c] = Some(k);
        }
        llcs.push(set);
    }
    for cpus in &node_cpus {
        let rest: CpuSet = cpus.iter().filter(|&c| llc_of[c].is_none()).collect();
        if !rest.is_empty() {
            for c in rest.iter() {
                llc_of[c] = Some(llcs.len());
            }
            llcs.push(rest);
        }
    }
    for core in &cores {
        let first = core.first().unwrap_or(0);
        if let Some(c) = core.iter().find(|&c| llc_of[c] != llc_of[first]) {
            let k = llc_of[c].unwrap_or(0).min(llc_of[first].unwrap_or(0));
            return Err(ctx.field(
                format!("llc[{k}].cpus"),
                format!("separates SMT siblings {first} and {c}: a core shares one LLC"),
            ));
        }
    }

    let nodes = node_cpus
        .into_iter()
        .zip(mem)
        .zip(packages)
        .map(|((cpus, mem_bytes), package)| LayoutNode {
            cpus,
            mem_bytes,
            package,
        })
        .collect();
    Ok(Layout { nodes, cores, llcs })
}

/// Parses a non-empty cpulist whose CPUs exist and lie in one node.
fn group_in_one_node(
    ctx: &Ctx,
    field: &str,
    s: &str,
    owner: &[usize],
) -> Result<CpuSet, TopologyError> {
    let set = ctx.cpulist(field, s)?;
    let Some(first) = set.first() else {
        return Err(ctx.field(field, "is empty"));
    };
    let mut node = None;
    for c in set.iter() {
        let Some(&n) = owner.get(c) else {
            return Err(ctx.field(field, format!("CPU {c} is in no node")));
        };
        match node {
            None => node = Some(n),
            Some(m) if m != n => {
                return Err(ctx.field(
                    field,
                    format!(
                        "spans nodes {m} and {n} (CPUs {first} and {c}): a group lies in one node"
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(set)
}

/// Splits a node's sorted CPU list into cores of `tpc` threads.
fn split_cores(list: &[usize], tpc: usize, numbering: Numbering) -> Vec<CpuSet> {
    let nr = list.len() / tpc;
    (0..nr)
        .map(|k| {
            (0..tpc)
                .map(|t| match numbering {
                    Numbering::SmtLast => list[k + t * nr],
                    Numbering::SmtAdjacent => list[k * tpc + t],
                })
                .collect()
        })
        .collect()
}

/// Assigns machine-wide core and LLC ids (in order of each group's lowest
/// CPU) and SMT indices (position within the sorted sibling set).
fn resolve_ids(layout: &Layout) -> (Vec<Cpu>, Vec<Node>) {
    let nr_cpus: usize = layout.nodes.iter().map(|n| n.cpus.len()).sum();
    let mut cpus: Vec<Cpu> = (0..nr_cpus)
        .map(|id| Cpu {
            id,
            node: 0,
            package: 0,
            core: 0,
            llc: 0,
            smt: 0,
        })
        .collect();
    for (i, n) in layout.nodes.iter().enumerate() {
        for c in n.cpus.iter() {
            cpus[c].node = i;
            cpus[c].package = n.package;
        }
    }
    let mut cores: Vec<&CpuSet> = layout.cores.iter().collect();
    cores.sort_by_key(|s| s.first());
    for (id, core) in cores.iter().enumerate() {
        for (smt, c) in core.iter().enumerate() {
            cpus[c].core = id;
            cpus[c].smt = smt;
        }
    }
    let mut llcs: Vec<&CpuSet> = layout.llcs.iter().collect();
    llcs.sort_by_key(|s| s.first());
    for (id, llc) in llcs.iter().enumerate() {
        for c in llc.iter() {
            cpus[c].llc = id;
        }
    }
    let nodes = layout
        .nodes
        .iter()
        .enumerate()
        .map(|(id, n)| Node {
            id,
            package: n.package,
            cpus: n.cpus.clone(),
            mem_bytes: n.mem_bytes,
        })
        .collect();
    (cpus, nodes)
}

/// The SLIT: given, or 10 local / 12 same package / 21 across packages.
fn resolve_distance(
    ctx: &mut Ctx,
    spec: Option<&DistanceSpec>,
    packages: &[usize],
) -> Result<Vec<Vec<u32>>, TopologyError> {
    let n = packages.len();
    let Some(m) = spec.and_then(|d| d.matrix.as_ref()) else {
        ctx.note(format!(
            "distance.matrix defaulted: {LOCAL_DISTANCE} local, {DEFAULT_SAME_PACKAGE_DISTANCE} between nodes of one package, {DEFAULT_REMOTE_DISTANCE} across packages"
        ));
        return Ok((0..n)
            .map(|a| {
                (0..n)
                    .map(|b| {
                        if a == b {
                            LOCAL_DISTANCE
                        } else if packages[a] == packages[b] {
                            DEFAULT_SAME_PACKAGE_DISTANCE
                        } else {
                            DEFAULT_REMOTE_DISTANCE
                        }
                    })
                    .collect()
            })
            .collect());
    };
    if m.len() != n {
        return Err(ctx.field(
            "distance.matrix",
            format!("has {} rows, the machine has {n} nodes", m.len()),
        ));
    }
    let mut out = Vec::with_capacity(n);
    for (a, row) in m.iter().enumerate() {
        if row.len() != n {
            return Err(ctx.field(
                format!("distance.matrix[{a}]"),
                format!("has {} entries, the machine has {n} nodes", row.len()),
            ));
        }
        let mut r = Vec::with_capacity(n);
        for (b, &d) in row.iter().enumerate() {
            let field = format!("distance.matrix[{a}][{b}]");
            if a == b && d != LOCAL_DISTANCE as i64 {
                return Err(ctx.field(
                    field,
                    format!("a node's distance to itself must be {LOCAL_DISTANCE}, got {d}"),
                ));
            }
            if a != b {
                // The range is LOCAL_DISTANCE + 1 ..= MAX_DISTANCE, as slit_valid().
                ctx.ranged("distance.matrix[a][b]", &field, d as f64)?;
            }
            r.push(d as u32);
        }
        out.push(r);
    }
    Ok(out)
}

/// The nearest distance between nodes of different packages, preferring
/// pairs of nodes that both have CPUs (so a far CXL node does not become the
/// anchor of remote latency). None with one package.
fn remote_anchor(distance: &[Vec<u32>], packages: &[usize], has_cpus: &[bool]) -> Option<u32> {
    let n = packages.len();
    let cross = |cpus_only: bool| {
        (0..n)
            .flat_map(|a| (0..n).map(move |b| (a, b)))
            .filter(|&(a, b)| packages[a] != packages[b])
            .filter(|&(a, b)| !cpus_only || (has_cpus[a] && has_cpus[b]))
            .map(|(a, b)| distance[a][b])
            .min()
    };
    cross(true).or_else(|| cross(false))
}

/// Builds `latency_ns[cpu_node][mem_node]` from the three scalars. Remote
/// latency applies at the anchor distance and below; beyond it, latency grows
/// linearly with SLIT: `local + (d - 10) * (remote - local) / (anchor - 10)`.
fn latency_from_scalars(
    local: f64,
    same: f64,
    remote: f64,
    distance: &[Vec<u32>],
    packages: &[usize],
    has_cpus: &[bool],
) -> Vec<Vec<f64>> {
    let n = packages.len();
    let anchor = remote_anchor(distance, packages, has_cpus).unwrap_or(DEFAULT_REMOTE_DISTANCE);
    (0..n)
        .map(|a| {
            (0..n)
                .map(|b| {
                    let d = distance[a][b];
                    if a == b {
                        local
                    } else if packages[a] == packages[b] {
                        same
                    } else if d <= anchor {
                        remote
                    } else {
                        local
                            + (d - LOCAL_DISTANCE) as f64 * (remote - local)
                                / (anchor - LOCAL_DISTANCE) as f64
                    }
                })
                .collect()
        })
        .collect()
}

/// The latency matrix, and the local latency used to derive `core_gbps`.
fn resolve_latency(
    ctx: &mut Ctx,
    spec: Option<&LatencySpec>,
    packages: &[usize],
    has_cpus: &[bool],
    distance: &[Vec<u32>],
) -> Result<(Vec<Vec<f64>>, f64), TopologyError> {
    let n = packages.len();
    let spec = spec.ok_or_else(|| ctx.field("latency", "missing: give local_ns and remote_ns"))?;
    if let Some(m) = &spec.matrix {
        if spec.local_ns.is_some() || spec.same_package_ns.is_some() || spec.remote_ns.is_some() {
            return Err(ctx.field(
                "latency.matrix",
                "give either the full matrix or local_ns/same_package_ns/remote_ns, not both",
            ));
        }
        if m.len() != n {
            return Err(ctx.field(
                "latency.matrix",
                format!("has {} rows, the machine has {n} nodes", m.len()),
            ));
        }
        for (a, row) in m.iter().enumerate() {
            if row.len() != n {
                return Err(ctx.field(
                    format!("latency.matrix[{a}]"),
                    format!("has {} entries, the machine has {n} nodes", row.len()),
                ));
            }
            for (b, &v) in row.iter().enumerate() {
                ctx.positive_in(
                    "latency.matrix[a][b]",
                    &format!("latency.matrix[{a}][{b}]"),
                    v,
                )?;
            }
        }
        let local = (0..n)
            .filter(|&a| has_cpus[a])
            .map(|a| m[a][a])
            .fold(f64::INFINITY, f64::min);
        return Ok((m.clone(), local));
    }
    let local = ctx.positive_in(
        "latency.local_ns",
        "latency.local_ns",
        spec.local_ns
            .ok_or_else(|| ctx.field("latency.local_ns", "missing"))?,
    )?;
    let same = match spec.same_package_ns {
        Some(v) => ctx.positive_in("latency.same_package_ns", "latency.same_package_ns", v)?,
        None => {
            let v = local * DEFAULT_SAME_PACKAGE_LATENCY_FACTOR;
            // Noted only where it is used: a package with several nodes.
            let used = (0..n).any(|a| (0..n).any(|b| a != b && packages[a] == packages[b]));
            if used {
                ctx.note(format!(
                "latency.same_package_ns defaulted to local_ns*{DEFAULT_SAME_PACKAGE_LATENCY_FACTOR} = {v:.2} ns (Intel MLC: a same-socket sub-node costs +5-10%, Cascade Lake 8269CY SNC2 in plantegg/plantegg.github.io CPU notes)"
                ));
            }
            v
        }
    };
    if same < local {
        return Err(ctx.field(
            "latency.same_package_ns",
            format!("{same} ns is below local_ns = {local} ns"),
        ));
    }
    let multi_package = packages.iter().any(|&p| p != packages[0]);
    let remote = match spec.remote_ns {
        Some(v) => ctx.positive_in("latency.remote_ns", "latency.remote_ns", v)?,
        None if multi_package => {
            return Err(ctx.field(
                "latency.remote_ns",
                "missing (the machine has several packages)",
            ))
        }
        None => local,
    };
    if remote < local {
        return Err(ctx.field(
            "latency.remote_ns",
            format!("{remote} ns is below local_ns = {local} ns"),
        ));
    }
    let anchor = remote_anchor(distance, packages, has_cpus);
    let cross: BTreeSet<u32> = (0..n)
        .flat_map(|a| (0..n).map(move |b| (a, b)))
        .filter(|&(a, b)| packages[a] != packages[b])
        .map(|(a, b)| distance[a][b])
        .collect();
    if let Some(anchor) = anchor {
        if cross.iter().any(|&d| d > anchor) {
            ctx.note(format!(
                "latency beyond SLIT distance {anchor} scaled linearly with distance: local_ns + (d-10)*(remote_ns-local_ns)/({anchor}-10)"
            ));
        }
    }
    let matrix = latency_from_scalars(local, same, remote, distance, packages, has_cpus);
    for (a, row) in matrix.iter().enumerate() {
        for (b, &v) in row.iter().enumerate() {
            ctx.derived_in(
                "latency.matrix[a][b]",
                &format!(
                    "latency[{a}][{b}] scaled with SLIT distance {}",
                    distance[a][b]
                ),
                v,
            )?;
        }
    }
    Ok((matrix, local))
}

fn resolve_bandwidth(
    ctx: &mut Ctx,
    spec: Option<&BandwidthSpec>,
    nr_nodes: usize,
    packages: &[usize],
    local_ns: f64,
    widest_package_bundle: Option<f64>,
) -> Result<Bandwidth, TopologyError> {
    let spec =
        spec.ok_or_else(|| ctx.field("bandwidth", "missing: give node_gbps and link_gbps"))?;
    let node_gbps = match &spec.node_gbps {
        None => return Err(ctx.field("bandwidth.node_gbps", "missing")),
        Some(Scalars::One(v)) => {
            let k = "bandwidth.node_gbps";
            vec![ctx.positive_in(k, k, *v)?; nr_nodes]
        }
        Some(Scalars::Many(v)) => {
            if v.len() != nr_nodes {
                return Err(ctx.field(
                    "bandwidth.node_gbps",
                    format!("has {} entries, the machine has {nr_nodes} nodes", v.len()),
                ));
            }
            v.iter()
                .enumerate()
                .map(|(i, &x)| {
                    ctx.positive_in(
                        "bandwidth.node_gbps",
                        &format!("bandwidth.node_gbps[{i}]"),
                        x,
                    )
                })
                .collect::<Result<_, _>>()?
        }
    };
    let max_node = node_gbps.iter().copied().fold(0.0, f64::max);
    let multi_package = packages.iter().any(|&p| p != packages[0]);
    let link_gbps = match spec.link_gbps {
        Some(v) => ctx.positive_in("bandwidth.link_gbps", "bandwidth.link_gbps", v)?,
        None if multi_package => match widest_package_bundle {
            Some(v) => {
                ctx.note(format!(
                    "bandwidth.link_gbps defaulted to the widest package link bundle = {v} GB/s (used only with numalab.link_routes=0)"
                ));
                ctx.derived_in(
                    "bandwidth.link_gbps",
                    "defaulted to the widest package link bundle",
                    v,
                )?
            }
            None => {
                return Err(ctx.field(
                    "bandwidth.link_gbps",
                    "missing (the machine has several packages): give link_gbps or [[links]] between packages",
                ))
            }
        },
        None => {
            ctx.note(format!(
                "bandwidth.link_gbps defaulted to the largest node_gbps = {max_node} GB/s (unused: one package)"
            ));
            max_node
        }
    };
    let same_package_link_gbps = match spec.same_package_link_gbps {
        Some(v) => ctx.positive_in(
            "bandwidth.same_package_link_gbps",
            "bandwidth.same_package_link_gbps",
            v,
        )?,
        None => {
            let v = ctx.derived_in(
                "bandwidth.same_package_link_gbps",
                "defaulted to 2*node_gbps",
                2.0 * max_node,
            )?;
            ctx.note(format!(
                "bandwidth.same_package_link_gbps defaulted to 2*node_gbps = {v} GB/s"
            ));
            v
        }
    };
    let core_gbps = match (spec.core_gbps, spec.line_fill_buffers) {
        (Some(_), Some(_)) => {
            return Err(ctx.field(
                "bandwidth.line_fill_buffers",
                "only used to derive core_gbps; give one or the other",
            ))
        }
        (Some(v), None) => ctx.positive_in("bandwidth.core_gbps", "bandwidth.core_gbps", v)?,
        (None, lfb) => {
            let lfb = ctx.count_in(
                "bandwidth.line_fill_buffers",
                "bandwidth.line_fill_buffers",
                lfb.or(Some(DEFAULT_LINE_FILL_BUFFERS as i64)),
                1024,
            )?;
            let v = ctx.derived_in(
                "bandwidth.core_gbps",
                &format!(
                    "derived as line_fill_buffers {lfb} x {CACHE_LINE_BYTES} B / local_ns {local_ns} ns"
                ),
                (lfb as f64 * CACHE_LINE_BYTES as f64) / local_ns,
            )?;
            let how = if spec.line_fill_buffers.is_some() {
                ""
            } else {
                " (default)"
            };
            ctx.note(format!(
                "bandwidth.core_gbps derived by Little's law: line_fill_buffers {lfb}{how} x {CACHE_LINE_BYTES} B / local_ns {local_ns} ns = {v:.2} GB/s"
            ));
            v
        }
    };
    let smt_throughput = match spec.smt_throughput {
        Some(v) => ctx.positive_in("bandwidth.smt_throughput", "bandwidth.smt_throughput", v)?,
        None => {
            ctx.note(format!(
                "bandwidth.smt_throughput defaulted to {DEFAULT_SMT_THROUGHPUT} (a busy SMT pair does 1.25x one thread)"
            ));
            DEFAULT_SMT_THROUGHPUT
        }
    };
    Ok(Bandwidth {
        node_gbps,
        link_gbps,
        same_package_link_gbps,
        core_gbps,
        smt_throughput,
    })
}

// ---------------------------------------------------------------------------
// Writing specs.
// ---------------------------------------------------------------------------

/// The header: name, description, sources.
pub(crate) fn render_header(out: &mut String, name: &str, description: &str, sources: &[String]) {
    let _ = writeln!(out, "name = {}", toml_str(name));
    let _ = writeln!(out, "description = {}", toml_str(description));
    out.push_str("sources = [\n");
    for s in sources {
        let _ = writeln!(out, "  {},", toml_str(s));
    }
    out.push_str("]\n");
}

/// If a node's cores follow `threads_per_core` with a numbering rule, returns
/// them; else None (the cores go to `[[smt]]`).
fn compact_smt(cpus: &CpuSet, cores: &[&CpuSet]) -> Option<(usize, Numbering)> {
    let tpc = cores.first().map_or(1, |c| c.len());
    if tpc == 0 || cores.iter().any(|c| c.len() != tpc) || !cpus.len().is_multiple_of(tpc) {
        return None;
    }
    if tpc == 1 {
        return Some((1, Numbering::SmtLast));
    }
    let list: Vec<usize> = cpus.iter().collect();
    let have: BTreeSet<&CpuSet> = cores.iter().copied().collect();
    [Numbering::SmtLast, Numbering::SmtAdjacent]
        .into_iter()
        .find(|&num| {
            let want = split_cores(&list, tpc, num);
            want.len() == have.len() && want.iter().all(|c| have.contains(c))
        })
        .map(|num| (tpc, num))
}

/// Writes `[[nodes]]`, `[[smt]]`, `[[llc]]` and `[distance]` in the explicit
/// form. `distance` None leaves `[distance]` out (the parser's default).
pub(crate) fn render_layout(out: &mut String, layout: &Layout, distance: Option<&[Vec<u32>]>) {
    let mut smt_groups: Vec<&CpuSet> = Vec::new();
    let mut llc_groups: Vec<&CpuSet> = Vec::new();
    for n in &layout.nodes {
        let cores: Vec<&CpuSet> = layout
            .cores
            .iter()
            .filter(|c| c.is_subset(&n.cpus) && !c.is_empty())
            .collect();
        let _ = write!(
            out,
            "\n[[nodes]]\ncpus = {}\nmem_gib = {}\npackage = {}\n",
            toml_str(&n.cpus.to_string()),
            toml_f64(n.mem_bytes as f64 / GIB),
            n.package
        );
        match compact_smt(&n.cpus, &cores) {
            Some((1, _)) => {}
            Some((tpc, num)) => {
                let _ = writeln!(out, "threads_per_core = {tpc}");
                if num != Numbering::SmtLast {
                    let _ = writeln!(out, "cpu_numbering = {}", toml_str(num.name()));
                }
            }
            None => smt_groups.extend(cores.iter().filter(|c| c.len() > 1)),
        }
        let llcs: Vec<&CpuSet> = layout
            .llcs
            .iter()
            .filter(|l| l.is_subset(&n.cpus) && !l.is_empty())
            .collect();
        if llcs.len() > 1 {
            llc_groups.extend(llcs);
        }
    }
    smt_groups.sort_by_key(|s| s.first());
    for g in smt_groups {
        let _ = write!(out, "\n[[smt]]\nsiblings = {}\n", toml_str(&g.to_string()));
    }
    llc_groups.sort_by_key(|s| s.first());
    for g in llc_groups {
        let _ = write!(out, "\n[[llc]]\ncpus = {}\n", toml_str(&g.to_string()));
    }
    if let Some(d) = distance {
        let _ = write!(
            out,
            "\n[distance]\nmatrix = {}\n",
            toml_matrix(d, |x| x.to_string())
        );
    }
}

/// Writes `m` as an explicit-form TOML spec (`[[nodes]]`, full distance
/// matrix, every physics constant written out), which [`parse_machine`]
/// reads back into an equal `Machine`. Latencies are written as
/// `local_ns`/`same_package_ns`/`remote_ns` when those reproduce the matrix
/// exactly, otherwise as the full `latency.matrix`.
pub fn to_toml(m: &Machine) -> String {
    let mut out = String::from("# numalab machine spec, explicit form (see docs/machines.md)\n");
    render_header(&mut out, &m.name, &m.description, &m.sources);
    let mut cores: Vec<CpuSet> = vec![CpuSet::new(); m.nr_cores()];
    let nr_llcs = m.cpus.iter().map(|c| c.llc + 1).max().unwrap_or(0);
    let mut llcs: Vec<CpuSet> = vec![CpuSet::new(); nr_llcs];
    for c in &m.cpus {
        cores[c.core].insert(c.id);
        llcs[c.llc].insert(c.id);
    }
    let layout = Layout {
        nodes: m
            .nodes
            .iter()
            .map(|n| LayoutNode {
                cpus: n.cpus.clone(),
                mem_bytes: n.mem_bytes,
                package: n.package,
            })
            .collect(),
        cores,
        llcs,
    };
    render_layout(&mut out, &layout, Some(&m.distance));

    out.push_str("\n[latency]\n");
    match latency_scalars(m) {
        Some((local, same, remote)) => {
            let _ = writeln!(out, "local_ns = {}", toml_f64(local));
            if let Some(v) = same {
                let _ = writeln!(out, "same_package_ns = {}", toml_f64(v));
            }
            if let Some(v) = remote {
                let _ = writeln!(out, "remote_ns = {}", toml_f64(v));
            }
        }
        None => {
            let _ = writeln!(
                out,
                "matrix = {}",
                toml_matrix(&m.latency_ns, |x| toml_f64(*x))
            );
        }
    }
    let b = &m.bandwidth;
    out.push_str("\n[bandwidth]\n");
    if b.node_gbps.windows(2).all(|w| w[0] == w[1]) && !b.node_gbps.is_empty() {
        let _ = writeln!(out, "node_gbps = {}", toml_f64(b.node_gbps[0]));
    } else {
        let _ = writeln!(
            out,
            "node_gbps = {}",
            toml_list(&b.node_gbps, |x| toml_f64(*x))
        );
    }
    let _ = writeln!(out, "link_gbps = {}", toml_f64(b.link_gbps));
    let _ = writeln!(
        out,
        "same_package_link_gbps = {}",
        toml_f64(b.same_package_link_gbps)
    );
    let _ = writeln!(out, "core_gbps = {}", toml_f64(b.core_gbps));
    let _ = writeln!(out, "smt_throughput = {}", toml_f64(b.smt_throughput));
    links::render_links(&mut out, &m.links, &m.coherence);
    out.push_str(&crate::kernel_spec::render_kernel(&m.kernel));
    out
}

/// local/same-package/remote scalars that reproduce `m.latency_ns` exactly.
fn latency_scalars(m: &Machine) -> Option<(f64, Option<f64>, Option<f64>)> {
    let n = m.nodes.len();
    let packages: Vec<usize> = m.nodes.iter().map(|x| x.package).collect();
    let has_cpus: Vec<bool> = m.nodes.iter().map(|x| !x.cpus.is_empty()).collect();
    let lat = &m.latency_ns;
    let square = |x: usize, y: usize| x == n && y == n;
    if n == 0
        || !square(lat.len(), n)
        || lat.iter().any(|r| r.len() != n)
        || !square(m.distance.len(), n)
        || m.distance.iter().any(|r| r.len() != n)
    {
        return None;
    }
    let local = lat[0][0];
    let pairs = || {
        (0..n)
            .flat_map(|a| (0..n).map(move |b| (a, b)))
            .filter(|&(a, b)| a != b)
    };
    let same = pairs()
        .find(|&(a, b)| packages[a] == packages[b])
        .map(|(a, b)| lat[a][b]);
    let anchor = remote_anchor(&m.distance, &packages, &has_cpus);
    let remote = anchor.and_then(|d| {
        pairs()
            .find(|&(a, b)| packages[a] != packages[b] && m.distance[a][b] == d)
            .map(|(a, b)| lat[a][b])
    });
    if same.is_some_and(|s| s < local) || remote.is_some_and(|r| r < local) {
        return None;
    }
    let s = same.unwrap_or(local * DEFAULT_SAME_PACKAGE_LATENCY_FACTOR);
    let r = remote.unwrap_or(local);
    let again = latency_from_scalars(local, s, r, &m.distance, &packages, &has_cpus);
    (again == *lat).then_some((local, same, remote))
}
