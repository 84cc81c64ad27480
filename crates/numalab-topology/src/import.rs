//! Import of a real host's topology, from `numactl --hardware` output or a
//! sysfs tree (`/sys/devices/system/{node,cpu}`), into an explicit-form TOML
//! machine spec.
//!
//! What each source gives:
//! - `numactl --hardware`: nodes, their CPUs and memory size, the SLIT. No SMT,
//!   cache or package information, so each CPU becomes its own core, each
//!   node its own LLC and its own package.
//! - sysfs: the same from `node*/{cpulist,meminfo,distance}`, plus SMT
//!   siblings (`topology/thread_siblings_list`), packages
//!   (`topology/physical_package_id`) and LLCs (`cache/index3/shared_cpu_list`)
//!   where present. An LLC that spans nodes (sub-NUMA clustering) is split at
//!   node boundaries, as the kernel's scheduler topology does.
//!
//! Neither source says anything about latency or bandwidth: the spec's physics
//! are the Cascade Lake 6240 Intel MLC measurement (hpcleuven/VscDocumentation
//! `*_mlc.txt`), each such line commented
//! as a default to edit. Host CPU and node ids that are not contiguous from 0
//! (offline CPUs, sparse node ids) are renumbered densely in ascending order,
//! and the renumbering is recorded in `sources`. CPU-less (memory-only) nodes
//! are kept, each in a package of its own. Left out: memory-less nodes with
//! CPUs (the model needs memory on every node: an import error), caches other
//! than L3, hybrid core types, CPU capacity and frequency.

use crate::spec::{self, Layout, LayoutNode};
use crate::{CpuSet, TopologyError, MAX_NUMNODES};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// The measured row whose latency and bandwidth fill an imported spec.
pub const IMPORT_PHYSICS_ROW: &str =
    "Cascade Lake 6240, Intel MLC (hpcleuven/VscDocumentation *_mlc.txt)";
const LOCAL_NS: f64 = 81.0;
const REMOTE_NS: f64 = 141.0;
const NODE_GBPS: f64 = 113.0;
const LINK_GBPS: f64 = 34.0;

/// A node as the host numbers it.
struct RawNode {
    cpus: BTreeSet<usize>,
    mem_bytes: u64,
    /// Host package id, when the source gives one.
    package: Option<usize>,
}

/// What an import read, in host ids.
struct Raw {
    /// Where it came from, for the description and error messages.
    origin: String,
    /// Nodes keyed by host node id.
    nodes: BTreeMap<usize, RawNode>,
    /// SMT sibling groups (host CPU ids), when known.
    cores: Option<Vec<BTreeSet<usize>>>,
    /// LLC groups (host CPU ids), when known.
    llcs: Option<Vec<BTreeSet<usize>>>,
    /// SLIT rows in ascending host node order, when known.
    distance: Option<Vec<Vec<i64>>>,
    notes: Vec<String>,
}

fn err(msg: impl Into<String>) -> TopologyError {
    TopologyError::Import(msg.into())
}

/// Parses `numactl --hardware` output into an explicit-form TOML spec.
///
/// Understands the lines `available: N nodes (...)`, `node K cpus: ...`,
/// `node K size: M MB`, `node K free: ...` and the `node distances:` table.
/// Any other non-blank line is an error naming its line number.
pub fn from_numactl(text: &str) -> Result<String, TopologyError> {
    let mut nodes: BTreeMap<usize, (Option<BTreeSet<usize>>, Option<u64>)> = BTreeMap::new();
    let mut available: Option<usize> = None;
    let mut dist_cols: Option<Vec<usize>> = None;
    let mut dist_rows: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
    let mut in_distances = false;
    for (ln, line) in text.lines().enumerate() {
        let ln = ln + 1;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let bad = || err(format!("numactl output line {ln}: cannot read '{t}'"));
        if t.starts_with("No NUMA available") {
            return Err(err("numactl reports no NUMA on this system"));
        }
        if let Some(rest) = t.strip_prefix("available:") {
            let n = rest
                .split_whitespace()
                .next()
                .and_then(|w| w.parse::<usize>().ok())
                .ok_or_else(bad)?;
            available = Some(n);
            continue;
        }
        if t == "node distances:" {
            in_distances = true;
            continue;
        }
        if in_distances {
            if dist_cols.is_none() {
                let mut w = t.split_whitespace();
                if w.next() != Some("node") {
                    return Err(bad());
                }
                let cols = w
                    .map(|x| x.parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| bad())?;
                dist_cols = Some(cols);
                continue;
            }
            let (row, rest) = t.split_once(':').ok_or_else(bad)?;
            let row = row.trim().parse::<usize>().map_err(|_| bad())?;
            let vals = rest
                .split_whitespace()
                .map(|x| x.parse::<i64>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| bad())?;
            if dist_rows.insert(row, vals).is_some() {
                return Err(err(format!(
                    "numactl output line {ln}: node {row} has two distance rows"
                )));
            }
            continue;
        }
        let mut w = t.split_whitespace();
        if w.next() != Some("node") {
            return Err(bad());
        }
        let k = w
            .next()
            .and_then(|x| x.parse::<usize>().ok())
            .ok_or_else(bad)?;
        if k >= 1 << 16 {
            return Err(bad());
        }
        let entry = nodes.entry(k).or_insert((None, None));
        match w.next() {
            Some("cpus:") => {
                let cpus = w
                    .map(|x| x.parse::<usize>())
                    .collect::<Result<BTreeSet<_>, _>>()
                    .map_err(|_| bad())?;
                if cpus.iter().any(|&c| c >= 1 << 20) {
                    return Err(bad());
                }
                entry.0 = Some(cpus);
            }
            Some("size:") => {
                let mb = w
                    .next()
                    .and_then(|x| x.parse::<u64>().ok())
                    .ok_or_else(bad)?;
                if w.next() != Some("MB") || mb > 1 << 40 {
                    return Err(bad());
                }
                entry.1 = Some(mb << 20);
            }
            Some("free:") => {}
            _ => return Err(bad()),
        }
    }
    if nodes.is_empty() {
        return Err(err(
            "no 'node K cpus:' lines: not numactl --hardware output",
        ));
    }
    if let Some(n) = available {
        if n != nodes.len() {
            return Err(err(format!(
                "numactl says {n} nodes are available but lists {}",
                nodes.len()
            )));
        }
    }
    let mut raw_nodes = BTreeMap::new();
    for (k, (cpus, size)) in nodes {
        let cpus = cpus.ok_or_else(|| err(format!("node {k} has no 'cpus:' line")))?;
        let mem_bytes = size.ok_or_else(|| err(format!("node {k} has no 'size:' line")))?;
        raw_nodes.insert(
            k,
            RawNode {
                cpus,
                mem_bytes,
                package: None,
            },
        );
    }
    let distance = match dist_cols {
        None => None,
        Some(cols) => {
            let ids: Vec<usize> = raw_nodes.keys().copied().collect();
            let pos: BTreeMap<usize, usize> =
                cols.iter().enumerate().map(|(i, &c)| (c, i)).collect();
            if pos.len() != cols.len()
                || ids.iter().any(|k| !pos.contains_key(k))
                || cols.len() != ids.len()
            {
                return Err(err(format!(
                    "the distance table's columns {cols:?} are not the nodes {ids:?}"
                )));
            }
            let mut m = Vec::with_capacity(ids.len());
            for &a in &ids {
                let row = dist_rows
                    .get(&a)
                    .ok_or_else(|| err(format!("the distance table has no row for node {a}")))?;
                if row.len() != cols.len() {
                    return Err(err(format!(
                        "distance row of node {a} has {} entries, expected {}",
                        row.len(),
                        cols.len()
                    )));
                }
                m.push(ids.iter().map(|b| row[pos[b]]).collect());
            }
            if dist_rows.len() != ids.len() {
                return Err(err(
                    "the distance table has rows for nodes that are not listed",
                ));
            }
            Some(m)
        }
    };
    finish(Raw {
        origin: "numactl --hardware".to_string(),
        nodes: raw_nodes,
        cores: None,
        llcs: None,
        distance,
        notes: vec![
            "numactl --hardware gives no SMT, cache or package information: each CPU is its own core, each node its own LLC and its own package".to_string(),
        ],
    })
}

/// Reads a file, None when it does not exist.
fn read_opt(path: &Path) -> Result<Option<String>, TopologyError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(err(format!("{}: {e}", path.display()))),
    }
}

fn read_req(path: &Path) -> Result<String, TopologyError> {
    read_opt(path)?.ok_or_else(|| err(format!("{}: missing", path.display())))
}

fn cpulist(path: &Path, s: &str) -> Result<BTreeSet<usize>, TopologyError> {
    let set = CpuSet::parse_list(s).map_err(|e| err(format!("{}: {e}", path.display())))?;
    Ok(set.iter().collect())
}

/// Reads a sysfs tree into an explicit-form TOML spec. `root` is normally
/// `/sys`; the files read are `devices/system/node/node*/{cpulist,meminfo,
/// distance}` and, per CPU, `devices/system/cpu/cpuN/topology/
/// {thread_siblings_list,physical_package_id}` and
/// `devices/system/cpu/cpuN/cache/index3/shared_cpu_list`. Per-CPU files that
/// are missing fall back to one core per CPU, one package per node and one
/// LLC per node, each fallback noted in `sources`.
pub fn from_sysfs(root: &Path) -> Result<String, TopologyError> {
    let node_dir = root.join("devices/system/node");
    let entries = std::fs::read_dir(&node_dir).map_err(|e| {
        err(format!(
            "{}: {e} (not a sysfs tree with NUMA nodes)",
            node_dir.display()
        ))
    })?;
    let mut ids = BTreeSet::new();
    for e in entries {
        let e = e.map_err(|e| err(format!("{}: {e}", node_dir.display())))?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if let Some(k) = name
            .strip_prefix("node")
            .and_then(|k| k.parse::<usize>().ok())
        {
            ids.insert(k);
        }
    }
    if ids.is_empty() {
        return Err(err(format!("{}: no node* directories", node_dir.display())));
    }
    if ids.len() > MAX_NUMNODES {
        return Err(err(format!(
            "{} nodes, more than the model's limit of {MAX_NUMNODES}",
            ids.len()
        )));
    }
    let mut nodes = BTreeMap::new();
    let mut distance: Option<Vec<Vec<i64>>> = Some(Vec::new());
    let mut notes = Vec::new();
    for &k in &ids {
        let dir = node_dir.join(format!("node{k}"));
        let p = dir.join("cpulist");
        let cpus = cpulist(&p, &read_req(&p)?)?;
        let p = dir.join("meminfo");
        let meminfo = read_req(&p)?;
        let kb = meminfo
            .lines()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                w.position(|x| x == "MemTotal:")?;
                w.next()?.parse::<u64>().ok()
            })
            .ok_or_else(|| err(format!("{}: no MemTotal line", p.display())))?;
        if kb > 1 << 50 {
            return Err(err(format!(
                "{}: implausible MemTotal {kb} kB",
                p.display()
            )));
        }
        let p = dir.join("distance");
        match (read_opt(&p)?, distance.as_mut()) {
            (Some(s), Some(m)) => {
                let row = s
                    .split_whitespace()
                    .map(|x| x.parse::<i64>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| err(format!("{}: not a list of distances", p.display())))?;
                if row.len() != ids.len() {
                    return Err(err(format!(
                        "{}: {} distances, but there are {} nodes",
                        p.display(),
                        row.len(),
                        ids.len()
                    )));
                }
                m.push(row);
            }
            (None, Some(_)) => {
                notes.push(format!("{} missing: SLIT left to the default", p.display()));
                distance = None;
            }
            (_, None) => {}
        }
        nodes.insert(
            k,
            RawNode {
                cpus,
                mem_bytes: kb << 10,
                package: None,
            },
        );
    }

    // Per-CPU topology.
    let cpu_dir = root.join("devices/system/cpu");
    let mut cores = Vec::new();
    let mut llcs = Vec::new();
    let (mut have_smt, mut have_pkg, mut have_llc) = (true, true, true);
    let mut pkg_of: BTreeMap<usize, usize> = BTreeMap::new();
    let all: Vec<usize> = nodes
        .values()
        .flat_map(|n| n.cpus.iter().copied())
        .collect();
    for &c in &all {
        let dir = cpu_dir.join(format!("cpu{c}"));
        let p = dir.join("topology/thread_siblings_list");
        match read_opt(&p)? {
            Some(s) => cores.push(cpulist(&p, &s)?),
            None => have_smt = false,
        }
        let p = dir.join("topology/physical_package_id");
        match read_opt(&p)? {
            Some(s) => match s.trim().parse::<i64>() {
                Ok(v) if v >= 0 => {
                    pkg_of.insert(c, v as usize);
                }
                _ => have_pkg = false,
            },
            None => have_pkg = false,
        }
        let idx3 = dir.join("cache/index3");
        let level_ok = match read_opt(&idx3.join("level"))? {
            Some(l) => l.trim() == "3",
            None => true,
        };
        let p = idx3.join("shared_cpu_list");
        match read_opt(&p)? {
            Some(s) if level_ok => llcs.push(cpulist(&p, &s)?),
            _ => have_llc = false,
        }
    }
    if have_pkg {
        for (k, n) in nodes.iter_mut() {
            let pk: BTreeSet<usize> = n
                .cpus
                .iter()
                .filter_map(|c| pkg_of.get(c).copied())
                .collect();
            if pk.len() > 1 {
                return Err(err(format!("node {k} has CPUs in packages {pk:?}")));
            }
            n.package = pk.first().copied();
        }
    } else {
        notes.push(
            "topology/physical_package_id missing for some CPUs: one package per node".to_string(),
        );
    }
    if !have_smt {
        notes.push(
            "topology/thread_siblings_list missing for some CPUs: each CPU is its own core"
                .to_string(),
        );
    }
    if !have_llc {
        notes.push(
            "cache/index3/shared_cpu_list missing for some CPUs: one LLC per node".to_string(),
        );
    }
    finish(Raw {
        origin: format!("sysfs {}", root.display()),
        nodes,
        cores: have_smt.then_some(cores),
        llcs: have_llc.then_some(llcs),
        distance,
        notes,
    })
}

/// Translates host CPU groups to model ids, drops CPUs in no node, merges
/// duplicates, and splits groups at node boundaries (returning whether any
/// group was split). A CPU in two different groups is an error.
fn model_groups(
    what: &str,
    groups: &[BTreeSet<usize>],
    model_of: &BTreeMap<usize, usize>,
    node_of: &[usize],
) -> Result<(Vec<CpuSet>, bool), TopologyError> {
    let mut seen: BTreeSet<CpuSet> = BTreeSet::new();
    let mut split = false;
    for g in groups {
        let mut by_node: BTreeMap<usize, CpuSet> = BTreeMap::new();
        for c in g.iter().filter_map(|c| model_of.get(c)) {
            by_node.entry(node_of[*c]).or_default().insert(*c);
        }
        split |= by_node.len() > 1;
        seen.extend(by_node.into_values());
    }
    let mut owner: BTreeMap<usize, &CpuSet> = BTreeMap::new();
    for g in &seen {
        for c in g.iter() {
            if let Some(other) = owner.insert(c, g) {
                return Err(err(format!(
                    "CPU {c} is in two different {what} groups: {other} and {g}"
                )));
            }
        }
    }
    Ok((seen.into_iter().collect(), split))
}

/// Renumbers, checks and renders what an import read; the result is checked
/// with [`spec::parse_machine`].
fn finish(raw: Raw) -> Result<String, TopologyError> {
    let mut notes = raw.notes;
    let nr_nodes = raw.nodes.len();
    if nr_nodes == 0 {
        return Err(err("no nodes"));
    }
    if nr_nodes > MAX_NUMNODES {
        return Err(err(format!(
            "{nr_nodes} nodes, more than the model's limit of {MAX_NUMNODES}"
        )));
    }
    let host_ids: Vec<usize> = raw.nodes.keys().copied().collect();
    if host_ids.iter().enumerate().any(|(i, &k)| i != k) {
        notes.push(format!(
            "host node ids {host_ids:?} renumbered densely as model nodes 0-{}",
            nr_nodes - 1
        ));
    }
    // CPUs: each in one node, renumbered densely.
    let mut host_node_of: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, (k, n)) in raw.nodes.iter().enumerate() {
        if n.mem_bytes == 0 {
            return Err(err(format!(
                "node {k} has no memory; the model needs memory on every node"
            )));
        }
        for &c in &n.cpus {
            if let Some(j) = host_node_of.insert(c, i) {
                return Err(err(format!(
                    "CPU {c} is listed in node {} and node {k}",
                    host_ids[j]
                )));
            }
        }
    }
    if host_node_of.is_empty() {
        return Err(err("no node has CPUs"));
    }
    if host_node_of.len() > spec::MAX_CPUS {
        return Err(err(format!(
            "{} CPUs, more than the model's limit of {}",
            host_node_of.len(),
            spec::MAX_CPUS
        )));
    }
    let model_of: BTreeMap<usize, usize> = host_node_of
        .keys()
        .enumerate()
        .map(|(m, &h)| (h, m))
        .collect();
    if model_of.iter().any(|(h, m)| h != m) {
        let missing: Vec<usize> = (0..host_node_of.keys().last().map_or(0, |l| l + 1))
            .filter(|c| !model_of.contains_key(c))
            .take(8)
            .collect();
        notes.push(format!(
            "host CPU ids were not contiguous from 0 (missing e.g. {missing:?}, offline?): renumbered densely in ascending order"
        ));
    }
    let node_of: Vec<usize> = host_node_of.values().copied().collect();

    // Packages: host ids renumbered densely; CPU-less nodes get their own.
    let cpu_pkgs: Option<Vec<Option<usize>>> = {
        let v: Vec<Option<usize>> = raw.nodes.values().map(|n| n.package).collect();
        let complete = raw
            .nodes
            .values()
            .all(|n| n.cpus.is_empty() || n.package.is_some());
        (complete && v.iter().any(Option::is_some)).then_some(v)
    };
    let packages: Vec<usize> = match cpu_pkgs {
        Some(v) => {
            let dense: BTreeMap<usize, usize> = v
                .iter()
                .flatten()
                .copied()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .enumerate()
                .map(|(i, p)| (p, i))
                .collect();
            let mut next = dense.len();
            let mut out = Vec::with_capacity(nr_nodes);
            for (i, p) in v.iter().enumerate() {
                match p {
                    Some(p) => out.push(dense[p]),
                    None => {
                        notes.push(format!(
                            "node {} has no CPUs: put in a package of its own ({next})",
                            host_ids[i]
                        ));
                        out.push(next);
                        next += 1;
                    }
                }
            }
            out
        }
        None => (0..nr_nodes).collect(),
    };

    let nodes: Vec<LayoutNode> = raw
        .nodes
        .values()
        .zip(&packages)
        .map(|(n, &package)| LayoutNode {
            cpus: n.cpus.iter().map(|c| model_of[c]).collect(),
            mem_bytes: n.mem_bytes,
            package,
        })
        .collect();

    let singletons = |covered: &BTreeSet<usize>| -> Vec<CpuSet> {
        (0..node_of.len())
            .filter(|c| !covered.contains(c))
            .map(|c| std::iter::once(c).collect())
            .collect()
    };
    let mut cores = match &raw.cores {
        Some(g) => {
            let (groups, split) = model_groups("SMT sibling", g, &model_of, &node_of)?;
            if split {
                return Err(err("an SMT core's siblings are in different nodes"));
            }
            groups
        }
        None => Vec::new(),
    };
    let covered: BTreeSet<usize> = cores.iter().flat_map(|g| g.iter()).collect();
    cores.extend(singletons(&covered));

    let mut llcs = match &raw.llcs {
        Some(g) => {
            let (groups, split) = model_groups("LLC", g, &model_of, &node_of)?;
            if split {
                notes.push("an L3 cache spans several nodes (sub-NUMA clustering): split at node boundaries, one LLC per node part".to_string());
            }
            groups
        }
        None => Vec::new(),
    };
    let covered: BTreeSet<usize> = llcs.iter().flat_map(|g| g.iter()).collect();
    for n in &nodes {
        let rest: CpuSet = n.cpus.iter().filter(|c| !covered.contains(c)).collect();
        if !rest.is_empty() {
            llcs.push(rest);
        }
    }
    for core in &cores {
        if !llcs.iter().any(|l| core.is_subset(l)) {
            return Err(err(format!(
                "the SMT siblings {core} do not share one L3 cache"
            )));
        }
    }

    let distance = match raw.distance {
        None => None,
        Some(m) => {
            if m.len() != nr_nodes || m.iter().any(|r| r.len() != nr_nodes) {
                return Err(err("the distance table is not nodes x nodes"));
            }
            let mut out = Vec::with_capacity(nr_nodes);
            for (a, row) in m.iter().enumerate() {
                let mut r = Vec::with_capacity(nr_nodes);
                for (b, &d) in row.iter().enumerate() {
                    if !(0..=255).contains(&d) {
                        return Err(err(format!(
                            "distance from node {} to node {} is {d}, not a SLIT value",
                            host_ids[a], host_ids[b]
                        )));
                    }
                    r.push(d as u32);
                }
                out.push(r);
            }
            Some(out)
        }
    };

    let layout = Layout { nodes, cores, llcs };
    let mut sources = vec![
        format!("topology imported from {}", raw.origin),
        format!(
            "latency.local_ns, latency.remote_ns, bandwidth.node_gbps, bandwidth.link_gbps: NOT measured on this host; filled from {IMPORT_PHYSICS_ROW}; edit them to match the host"
        ),
    ];
    sources.extend(notes);
    let mut out = format!(
        "# numalab machine spec imported from {}; see docs/machines.md.\n# The topology is the host's. Latency and bandwidth are NOT: they are the\n# {IMPORT_PHYSICS_ROW} figures; edit them to match the host.\n",
        raw.origin
    );
    spec::render_header(
        &mut out,
        "imported",
        &format!("imported from {}", raw.origin),
        &sources,
    );
    spec::render_layout(&mut out, &layout, distance.as_deref());
    let tag = format!("# default physics: {IMPORT_PHYSICS_ROW}, not this host");
    let _ = write!(
        out,
        "\n[latency]\nlocal_ns = {}  {tag}\nremote_ns = {}  {tag}\n\n[bandwidth]\nnode_gbps = {}  {tag}\nlink_gbps = {}  {tag}\n",
        crate::toml_out::toml_f64(LOCAL_NS),
        crate::toml_out::toml_f64(REMOTE_NS),
        crate::toml_out::toml_f64(NODE_GBPS),
        crate::toml_out::toml_f64(LINK_GBPS),
    );
    // Neither numactl nor sysfs says how the sockets are wired: the
    // parser's default layout applies (fully connected, one link of
    // link_gbps per package pair; one on-die link per node pair).
    out.push_str("# No [[links]]: one link of link_gbps between every two packages (fully\n# connected) and one on-die link between every two nodes of a package.\n# Give the host's links as [[links]] (docs/machines.md) where you know them.\n");
    spec::parse_machine(&out, &raw.origin)
        .map_err(|e| err(format!("the imported topology is not a valid machine: {e}")))?;
    Ok(out)
}
