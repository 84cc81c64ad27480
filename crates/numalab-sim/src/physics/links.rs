//! The interconnect as resources: each link bundle of the machine spec
//! (`Machine::links`) becomes two directional resources, one per direction,
//! of the bundle's bandwidth; each pair of nodes gets the route its bytes
//! take, the list of directional resources they cross.
//!
//! Routes: between packages, the fewest package-to-package hops; inside a
//! package, the fewest on-die hops. Ties go to the path a breadth-first
//! search finds when it visits lower-numbered neighbours first (so 0 -> 2 on
//! a ring 0-1-2-3-0 goes through 1). Multi-hop traffic loads every link on
//! its route; two routes that share a link share its bandwidth.
//!
//! With the lab switch `numalab.link_routes=0` the model before links is
//! built instead: one resource per ordered package pair of
//! `bandwidth.link_gbps` and one per ordered node pair inside a package of
//! `bandwidth.same_package_link_gbps`, every route one hop.
//!
//! Left out: where a package's link ports sit on its die (cross-package
//! traffic loads no on-die segment), adaptive routing and routing tables
//! that differ from fewest hops, latency per hop (latency comes from the
//! machine's latency matrix), link-level retries and power states.

use super::ResId;
use numalab_topology::{LinkEnds, Machine};
use std::collections::VecDeque;

/// Directional link resources and the route between every two nodes.
#[derive(Clone, Debug)]
pub struct Interconnect {
    nr_nodes: usize,
    /// Package of each node.
    package: Vec<usize>,
    /// `route[from * nr_nodes + to]`: resources crossed by bytes moving
    /// from node `from` to node `to`, in order.
    route: Vec<Vec<ResId>>,
}

impl Interconnect {
    /// Builds the link resources of `m` (appending their capacities in
    /// bytes/ns and names) and every route. `routed` false builds the model
    /// before links (`numalab.link_routes=0`).
    pub fn new(
        m: &Machine,
        routed: bool,
        capacity: &mut Vec<f64>,
        name: &mut Vec<String>,
    ) -> Interconnect {
        let nn = m.nr_nodes();
        let package: Vec<usize> = m.nodes.iter().map(|n| n.package).collect();
        let route = if routed {
            routed_routes(m, &package, capacity, name)
        } else {
            pairwise_routes(m, &package, capacity, name)
        };
        Interconnect {
            nr_nodes: nn,
            package,
            route,
        }
    }

    /// Resources crossed by bytes moving from node `from` to node `to`
    /// (empty when they are the same node).
    pub fn route(&self, from: usize, to: usize) -> &[ResId] {
        &self.route[from * self.nr_nodes + to]
    }

    /// Package of node `n`.
    pub fn package(&self, n: usize) -> usize {
        self.package[n]
    }

    /// Number of packages.
    pub fn nr_packages(&self) -> usize {
        self.package.iter().map(|&p| p + 1).max().unwrap_or(0)
    }

    /// The first node of package `p`: cross-package routes depend only on
    /// the packages, so it stands for the whole package.
    pub fn package_node(&self, p: usize) -> usize {
        self.package.iter().position(|&q| q == p).unwrap_or(0)
    }
}

/// One resource per direction of every link bundle; routes by fewest hops.
fn routed_routes(
    m: &Machine,
    package: &[usize],
    capacity: &mut Vec<f64>,
    name: &mut Vec<String>,
) -> Vec<Vec<ResId>> {
    let nn = package.len();
    let npk = m.nr_packages();
    // Directed resource of each adjacent pair, packages and nodes apart.
    let mut pkg_hop: Vec<Option<ResId>> = vec![None; npk * npk];
    let mut node_hop: Vec<Option<ResId>> = vec![None; nn * nn];
    for l in &m.links {
        let (a, b, table, size, prefix, unit) = match l.ends {
            LinkEnds::Packages(a, b) => (a, b, &mut pkg_hop, npk, "link", "pkg"),
            LinkEnds::Nodes(a, b) => (a, b, &mut node_hop, nn, "die", "node"),
        };
        let bundle = if l.count > 1 {
            format!(" ({} links)", l.count)
        } else {
            String::new()
        };
        for (from, to) in [(a, b), (b, a)] {
            capacity.push(l.bundle_gbps());
            name.push(format!("{prefix}-{unit}{from}->{unit}{to}{bundle}"));
            table[from * size + to] = Some(capacity.len() - 1);
        }
    }
    let pkg_paths: Vec<Vec<ResId>> = (0..npk)
        .flat_map(|a| (0..npk).map(move |b| (a, b)))
        .map(|(a, b)| path(npk, &pkg_hop, a, b, |_| true))
        .collect();
    let mut route = vec![Vec::new(); nn * nn];
    for from in 0..nn {
        for to in 0..nn {
            if from == to {
                continue;
            }
            let (pf, pt) = (package[from], package[to]);
            route[from * nn + to] = if pf == pt {
                path(nn, &node_hop, from, to, |n| package[n] == pf)
            } else {
                pkg_paths[pf * npk + pt].clone()
            };
        }
    }
    route
}

/// The directed resources along the fewest-hop path from `from` to `to`
/// over the vertices `keep` accepts, ties to the lower-numbered neighbour.
/// Empty when there is no path (the spec parser refuses such machines).
fn path(
    n: usize,
    hop: &[Option<ResId>],
    from: usize,
    to: usize,
    keep: impl Fn(usize) -> bool,
) -> Vec<ResId> {
    if from == to {
        return Vec::new();
    }
    let mut parent: Vec<Option<usize>> = vec![None; n];
    let mut seen = vec![false; n];
    seen[from] = true;
    let mut queue = VecDeque::from([from]);
    while let Some(x) = queue.pop_front() {
        for y in 0..n {
            if !seen[y] && keep(y) && hop[x * n + y].is_some() {
                seen[y] = true;
                parent[y] = Some(x);
                queue.push_back(y);
            }
        }
    }
    let mut rev = Vec::new();
    let mut at = to;
    while let Some(p) = parent[at] {
        if let Some(r) = hop[p * n + at] {
            rev.push(r);
        }
        at = p;
    }
    if at != from {
        return Vec::new();
    }
    rev.reverse();
    rev
}

/// The model before links: a resource per ordered package pair and per
/// ordered node pair inside a package, every route one hop.
fn pairwise_routes(
    m: &Machine,
    package: &[usize],
    capacity: &mut Vec<f64>,
    name: &mut Vec<String>,
) -> Vec<Vec<ResId>> {
    let nn = package.len();
    let npk = m.nr_packages();
    let mut pkg_link: Vec<Option<ResId>> = vec![None; npk * npk];
    let mut route = vec![Vec::new(); nn * nn];
    for src in 0..nn {
        for dst in 0..nn {
            if src == dst {
                continue;
            }
            let (ps, pd) = (package[src], package[dst]);
            let id = if ps != pd {
                *pkg_link[ps * npk + pd].get_or_insert_with(|| {
                    capacity.push(m.bandwidth.link_gbps);
                    name.push(format!("link-pkg{ps}->pkg{pd}"));
                    capacity.len() - 1
                })
            } else {
                capacity.push(m.bandwidth.same_package_link_gbps);
                name.push(format!("die-node{src}->node{dst}"));
                capacity.len() - 1
            };
            route[src * nn + dst] = vec![id];
        }
    }
    route
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topology::spec::parse_machine;

    /// A machine of `packages` single-node packages (or `snc` nodes each)
    /// with the given extra spec text (links).
    fn machine(packages: usize, snc: usize, links: &str) -> Machine {
        let text = format!(
            "[topology]\npackages = {packages}\nnodes_per_package = {snc}\ncores_per_node = 1\nthreads_per_core = 1\n[memory]\nper_node_gib = 1\n[latency]\nlocal_ns = 80\nremote_ns = 140\n[bandwidth]\nnode_gbps = 100\n{links}"
        );
        parse_machine(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn build(m: &Machine, routed: bool) -> (Interconnect, Vec<f64>, Vec<String>) {
        let (mut cap, mut name) = (Vec::new(), Vec::new());
        let ic = Interconnect::new(m, routed, &mut cap, &mut name);
        (ic, cap, name)
    }

    const RING: &str = "[[links]]\npackages = [0, 1]\ngbps = 10\n[[links]]\npackages = [1, 2]\ngbps = 10\n[[links]]\npackages = [2, 3]\ngbps = 10\n[[links]]\npackages = [3, 0]\ngbps = 10\n";

    #[test]
    fn two_hop_route_loads_both_links_toward_the_reader() {
        let m = machine(4, 1, RING);
        let (ic, cap, name) = build(&m, true);
        // Four bundles, two directions each.
        assert_eq!(cap, vec![10.0; 8]);
        let names = |r: &[ResId]| r.iter().map(|&i| name[i].clone()).collect::<Vec<_>>();
        // 0 -> 2: two hops, the tie going through package 1.
        assert_eq!(
            names(ic.route(0, 2)),
            ["link-pkg0->pkg1", "link-pkg1->pkg2"]
        );
        assert_eq!(
            names(ic.route(2, 0)),
            ["link-pkg2->pkg1", "link-pkg1->pkg0"]
        );
        // Neighbours: one hop, and the two directions are different resources.
        assert_eq!(names(ic.route(3, 0)), ["link-pkg3->pkg0"]);
        assert_ne!(ic.route(0, 1), ic.route(1, 0));
        assert!(ic.route(1, 1).is_empty());
        // 0 -> 2 and 1 -> 2 share the link 1 -> 2.
        assert_eq!(ic.route(0, 2)[1], ic.route(1, 2)[0]);
    }

    #[test]
    fn bundles_add_their_links_and_a_chain_of_dies_routes_through_the_middle() {
        let m = machine(
            2,
            3,
            "[[links]]\npackages = [0, 1]\ncount = 3\ngbps = 10\n[[links]]\nnodes = [0, 1]\ngbps = 50\n[[links]]\nnodes = [1, 2]\ngbps = 50\n[[links]]\nnodes = [3, 4]\ngbps = 50\n[[links]]\nnodes = [4, 5]\ngbps = 50\n",
        );
        let (ic, cap, name) = build(&m, true);
        let r = ic.route(0, 2);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(name[r[0]], "die-node0->node1");
        assert_eq!(name[r[1]], "die-node1->node2");
        // Cross-package: the package bundle only, 3 x 10 per direction.
        let x = ic.route(2, 4);
        assert_eq!(x.len(), 1);
        assert_eq!(cap[x[0]], 30.0);
        assert_eq!(name[x[0]], "link-pkg0->pkg1 (3 links)");
        assert_eq!(ic.route(1, 3), x);
    }

    #[test]
    fn a_spec_without_links_is_fully_connected_one_link_per_pair() {
        let m = machine(3, 1, "link_gbps = 20\n");
        let (ic, cap, _) = build(&m, true);
        for a in 0..3 {
            for b in 0..3 {
                assert_eq!(ic.route(a, b).len(), usize::from(a != b));
            }
        }
        assert_eq!(cap, vec![20.0; 6]);
    }

    #[test]
    fn switch_off_gives_every_ordered_package_pair_its_own_link() {
        let m = machine(4, 1, RING);
        let (ic, cap, _) = build(&m, false);
        // 12 ordered pairs of the old model, at the derived link_gbps.
        assert_eq!(cap.len(), 12);
        assert_eq!(ic.route(0, 2).len(), 1);
        assert_ne!(ic.route(0, 2), ic.route(1, 2));
        assert_eq!(cap[ic.route(0, 2)[0]], m.bandwidth.link_gbps);
    }
}
