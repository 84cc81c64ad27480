//! The interconnect part of a machine spec: `[[links]]` (which packages, or
//! which nodes of one package, each bundle of physical links joins, and its
//! bandwidth per direction) and `[coherence]` (link bytes per coherence
//! message, directory or broadcast snooping).
//!
//! A spec without package links keeps its old meaning: one link between
//! every two packages at `bandwidth.link_gbps`. A package of several nodes
//! without on-die links gets one between every two of its nodes at
//! `bandwidth.same_package_link_gbps`. Both defaults are noted in `sources`.
//! Routes are not given: the model takes the fewest hops over the links
//! (numalab-sim `physics/links.rs`), so the links must connect every package,
//! and every node of a package on-die.
//!
//! Leaves out: links between nodes of different packages (a socket's links
//! belong to the socket, not to one of its SNC nodes), explicit routes,
//! links of different speeds inside one bundle.

use super::Ctx;
use crate::{Coherence, Link, LinkEnds, Snoop, TopologyError, DEFAULT_MESSAGE_BYTES};
use serde::Deserialize;
use std::fmt::Write as _;

/// One `[[links]]` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LinkSpec {
    packages: Option<Vec<i64>>,
    nodes: Option<Vec<i64>>,
    count: Option<i64>,
    gbps: Option<f64>,
}

/// The `[coherence]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CoherenceSpec {
    message_bytes: Option<f64>,
    snoop: Option<String>,
}

/// The two ends of entry `k`, checked: existing, distinct, and for node
/// ends inside one package.
fn ends(ctx: &Ctx, k: usize, l: &LinkSpec, packages: &[usize]) -> Result<LinkEnds, TopologyError> {
    let npk = packages.iter().map(|&p| p + 1).max().unwrap_or(0);
    let pair = |field: &str, v: &[i64], limit: usize, what: &str| {
        let f = format!("links[{k}].{field}");
        if v.len() != 2 {
            return Err(ctx.field(&f, format!("needs two {what} ids, got {}", v.len())));
        }
        for &x in v {
            if x < 0 || x as u64 >= limit as u64 {
                return Err(ctx.field(
                    &f,
                    format!("{what} {x} does not exist (the machine has {limit} {what}s)"),
                ));
            }
        }
        if v[0] == v[1] {
            return Err(ctx.field(&f, format!("joins {what} {} to itself", v[0])));
        }
        Ok((v[0] as usize, v[1] as usize))
    };
    match (&l.packages, &l.nodes) {
        (Some(_), Some(_)) => Err(ctx.field(
            format!("links[{k}]"),
            "give `packages` or `nodes`, not both",
        )),
        (None, None) => Err(ctx.field(
            format!("links[{k}]"),
            "missing: give the two `packages` or the two `nodes` it joins",
        )),
        (Some(p), None) => {
            let (a, b) = pair("packages", p, npk, "package")?;
            Ok(LinkEnds::Packages(a.min(b), a.max(b)))
        }
        (None, Some(n)) => {
            let (a, b) = pair("nodes", n, packages.len(), "node")?;
            if packages[a] != packages[b] {
                return Err(ctx.field(
                    format!("links[{k}].nodes"),
                    format!(
                        "nodes {a} and {b} are in different packages ({} and {}): join packages with `packages`",
                        packages[a], packages[b]
                    ),
                ));
            }
            Ok(LinkEnds::Nodes(a.min(b), a.max(b)))
        }
    }
}

/// The `[[links]]` entries, each checked on its own and against the others
/// (no two entries join the same ends).
pub(super) fn parse_links(
    ctx: &Ctx,
    specs: &[LinkSpec],
    packages: &[usize],
) -> Result<Vec<Link>, TopologyError> {
    let mut links: Vec<Link> = Vec::new();
    for (k, l) in specs.iter().enumerate() {
        let ends = ends(ctx, k, l, packages)?;
        if let Some(j) = links.iter().position(|o| o.ends == ends) {
            return Err(ctx.field(
                format!("links[{k}]"),
                format!("joins the same ends as links[{j}]: give one entry with `count`"),
            ));
        }
        let count = ctx.count_in(
            "links[k].count",
            &format!("links[{k}].count"),
            l.count.or(Some(1)),
            64,
        )? as u32;
        let f = format!("links[{k}].gbps");
        let gbps = l.gbps.ok_or_else(|| ctx.field(&f, "missing"))?;
        let gbps = ctx.positive_in("links[k].gbps", &f, gbps)?;
        links.push(Link { ends, count, gbps });
    }
    Ok(links)
}

/// The widest bundle among `links` that joins packages, GB/s per direction.
pub(super) fn widest_package_bundle(links: &[Link]) -> Option<f64> {
    links
        .iter()
        .filter(|l| matches!(l.ends, LinkEnds::Packages(..)))
        .map(Link::bundle_gbps)
        .reduce(f64::max)
}

/// Completes the given links with the defaults (noted) and checks that they
/// connect every package, and every node of a package on-die.
pub(super) fn complete_links(
    ctx: &mut Ctx,
    mut links: Vec<Link>,
    packages: &[usize],
    link_gbps: f64,
    same_package_link_gbps: f64,
) -> Result<Vec<Link>, TopologyError> {
    let npk = packages.iter().map(|&p| p + 1).max().unwrap_or(0);
    let defaults = crate::default_links(packages, link_gbps, same_package_link_gbps);
    if npk > 1 && widest_package_bundle(&links).is_none() {
        ctx.note(format!(
            "links: none given between packages; one link between every two packages at bandwidth.link_gbps = {link_gbps} GB/s (fully connected)"
        ));
        links.extend(
            defaults
                .iter()
                .filter(|l| matches!(l.ends, LinkEnds::Packages(..)))
                .cloned(),
        );
    }
    for p in 0..npk {
        let nodes: Vec<usize> = (0..packages.len()).filter(|&n| packages[n] == p).collect();
        let on_die = |l: &Link| matches!(l.ends, LinkEnds::Nodes(a, _) if packages[a] == p);
        if nodes.len() > 1 && !links.iter().any(on_die) {
            ctx.note(format!(
                "links: none given inside package {p}; one on-die link between every two of its nodes at bandwidth.same_package_link_gbps = {same_package_link_gbps} GB/s"
            ));
            links.extend(defaults.iter().filter(|l| on_die(l)).cloned());
        }
    }
    // Connectivity: packages over package links, nodes of a package over
    // its on-die links.
    let reach = |n: usize, start: usize, edges: &dyn Fn(&Link) -> Option<(usize, usize)>| {
        let mut seen = vec![false; n];
        seen[start] = true;
        let mut stack = vec![start];
        while let Some(x) = stack.pop() {
            for (a, b) in links.iter().filter_map(edges) {
                for (from, to) in [(a, b), (b, a)] {
                    if from == x && !seen[to] {
                        seen[to] = true;
                        stack.push(to);
                    }
                }
            }
        }
        seen
    };
    let pkg_edges = |l: &Link| match l.ends {
        LinkEnds::Packages(a, b) => Some((a, b)),
        LinkEnds::Nodes(..) => None,
    };
    if npk > 1 {
        let seen = reach(npk, 0, &pkg_edges);
        if let Some(p) = seen.iter().position(|&s| !s) {
            return Err(ctx.field(
                "links",
                format!("package {p} is not reachable from package 0 over the links"),
            ));
        }
    }
    let node_edges = |l: &Link| match l.ends {
        LinkEnds::Nodes(a, b) => Some((a, b)),
        LinkEnds::Packages(..) => None,
    };
    for p in 0..npk {
        let nodes: Vec<usize> = (0..packages.len()).filter(|&n| packages[n] == p).collect();
        if nodes.len() < 2 {
            continue;
        }
        let seen = reach(packages.len(), nodes[0], &node_edges);
        if let Some(&n) = nodes.iter().find(|&&n| !seen[n]) {
            return Err(ctx.field(
                "links",
                format!(
                    "node {n} of package {p} is not reachable from node {} over the package's on-die links",
                    nodes[0]
                ),
            ));
        }
    }
    Ok(links)
}

/// The `[coherence]` table, defaults noted.
pub(super) fn resolve_coherence(
    ctx: &mut Ctx,
    spec: Option<&CoherenceSpec>,
) -> Result<Coherence, TopologyError> {
    let message_bytes = match spec.and_then(|c| c.message_bytes) {
        Some(v) => {
            let f = "coherence.message_bytes";
            if v.is_nan() {
                return Err(ctx.field(f, "is NaN"));
            }
            ctx.ranged(f, f, v)?
        }
        None => {
            ctx.note(format!(
                "coherence.message_bytes defaulted to 64/9 = {DEFAULT_MESSAGE_BYTES:.2} B: one QPI header flit (80-bit flits of 64 data bits; a 64-byte line is 8 data flits behind one header flit)"
            ));
            DEFAULT_MESSAGE_BYTES
        }
    };
    let snoop = match spec.and_then(|c| c.snoop.as_deref()) {
        Some("directory") => Snoop::Directory,
        Some("broadcast") => Snoop::Broadcast,
        Some(other) => {
            return Err(ctx.field(
                "coherence.snoop",
                format!("'{other}' is not a snoop mode: use \"directory\" or \"broadcast\""),
            ))
        }
        None => {
            ctx.note(
                "coherence.snoop defaulted to \"directory\" (UPI supports directory coherence only)"
                    .to_string(),
            );
            Snoop::Directory
        }
    };
    Ok(Coherence {
        message_bytes,
        snoop,
    })
}

/// Writes every link bundle and the `[coherence]` table.
pub(super) fn render_links(out: &mut String, links: &[Link], c: &Coherence) {
    for l in links {
        let ends = match l.ends {
            LinkEnds::Packages(a, b) => format!("packages = [{a}, {b}]"),
            LinkEnds::Nodes(a, b) => format!("nodes = [{a}, {b}]"),
        };
        let _ = write!(
            out,
            "\n[[links]]\n{ends}\ncount = {}\ngbps = {}\n",
            l.count,
            crate::toml_out::toml_f64(l.gbps)
        );
    }
    let snoop = match c.snoop {
        Snoop::Directory => "directory",
        Snoop::Broadcast => "broadcast",
    };
    let _ = write!(
        out,
        "\n[coherence]\nmessage_bytes = {}\nsnoop = \"{snoop}\"\n",
        crate::toml_out::toml_f64(c.message_bytes)
    );
}
