//! Built-in machine presets, and loading a machine by preset name or file.
//!
//! Each preset is a TOML spec in `crates/numalab-topology/presets/NAME.toml`,
//! embedded in the binary. Every constant there carries a comment naming its
//! source: a published Intel Memory Latency Checker measurement (rows marked
//! (a): the `*_mlc.txt` files of the hpcleuven/VscDocumentation repository;
//! (b): the plantegg/plantegg.github.io CPU notes), or the plain statement
//! that it is an extrapolation, and from which measurement. Leaves out: any machine whose
//! physics has no basis in such a measurement (e.g. AMD with NPS4, CXL tiers).

use crate::{spec, Machine, TopologyError};

/// One preset: name, one-line description, embedded TOML.
struct Preset {
    name: &'static str,
    description: &'static str,
    toml: &'static str,
}

/// The presets, smallest first. Descriptions must match the TOML's
/// `description` (checked by a test).
const PRESETS: &[Preset] = &[
    // Cascade Lake 6240 row (a), synthetic topology.
    Preset {
        name: "tiny-2n",
        description: "2 nodes x 2 CPUs (no SMT), 1 GiB per node, Cascade Lake 6240 physics",
        toml: include_str!("../presets/tiny-2n.toml"),
    },
    // Ivy Bridge EP row (a), extrapolated from 2 to 4 sockets.
    Preset {
        name: "4s-48",
        description: "4-socket Ivy Bridge EP (2013), 4 nodes x 6 cores x 2 threads (48 CPUs), 16 GiB/node",
        toml: include_str!("../presets/4s-48.toml"),
    },
    // Cascade Lake 6240 row (a), cross-checked with the 8269CY SNC2 row (b).
    Preset {
        name: "clx-2s-104",
        description: "2-socket Cascade Lake, 2 nodes x 26 cores x 2 threads (104 CPUs), 128 GiB/node",
        toml: include_str!("../presets/clx-2s-104.toml"),
    },
    // No SPR measurement: Ice Lake 8360Y row (a), the nearest measured Intel server.
    Preset {
        name: "spr-4n",
        description: "4-socket Sapphire Rapids, 4 nodes x 40 cores x 2 threads (320 CPUs), 256 GiB/node; Ice Lake 8360Y physics",
        toml: include_str!("../presets/spr-4n.toml"),
    },
    // No GNR measurement: Ice Lake 8360Y base, SNC ratios from the Cascade Lake
    // 8269CY SNC2 row and the Broadwell Cluster-on-Die row; all extrapolated.
    Preset {
        name: "gnr-2s-snc3",
        description: "2-socket Granite Rapids SNC3, 6 nodes x 40 cores x 2 threads (480 CPUs), 256 GiB/node; extrapolated physics",
        toml: include_str!("../presets/gnr-2s-snc3.toml"),
    },
    // A scaling machine (numalab bench scaling): gnr-2s-snc3's figures on
    // eight sockets, all extrapolated; no reproduction uses it.
    Preset {
        name: "xl-8s-1024",
        description: "8-socket scaling machine, 16 nodes (SNC2) x 32 cores x 2 threads (1024 CPUs), 128 GiB/node; extrapolated physics, for numalab bench scaling",
        toml: include_str!("../presets/xl-8s-1024.toml"),
    },
];

/// The presets as `(name, one-line description)`, smallest machine first.
pub fn list() -> Vec<(&'static str, &'static str)> {
    PRESETS.iter().map(|p| (p.name, p.description)).collect()
}

/// The embedded TOML text of a preset, or None if there is no such preset.
pub fn preset_toml(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|p| p.name == name).map(|p| p.toml)
}

/// Loads a machine: a preset by name first, else a readable TOML file at
/// that path. Neither gives [`TopologyError::Unknown`]; a file that exists
/// but is not a valid spec gives the spec's own error.
pub fn load(name_or_path: &str) -> Result<Machine, TopologyError> {
    if let Some(text) = preset_toml(name_or_path) {
        return spec::parse_machine(text, name_or_path);
    }
    match std::fs::read_to_string(name_or_path) {
        Ok(text) => spec::parse_machine(&text, name_or_path),
        Err(_) => Err(TopologyError::Unknown(name_or_path.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuSet;

    fn cpus_of(m: &Machine, node: usize) -> String {
        m.nodes[node].cpus.to_string()
    }

    #[test]
    fn every_preset_loads_and_round_trips_through_to_toml() {
        for (name, desc) in list() {
            let m = load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(m.name, name);
            assert_eq!(
                m.description, desc,
                "{name}: list() description differs from TOML"
            );
            let text = spec::to_toml(&m);
            let again =
                spec::parse_machine(&text, name).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            assert_eq!(again, m, "{name} does not round-trip:\n{text}");
        }
    }

    #[test]
    fn tiny_2n_has_two_single_thread_nodes() {
        let m = load("tiny-2n").unwrap();
        assert_eq!((m.nr_cpus(), m.nr_nodes(), m.nr_cores()), (4, 2, 4));
        assert_eq!(cpus_of(&m, 0), "0-1");
        assert_eq!(cpus_of(&m, 1), "2-3");
        assert_eq!(m.nodes[0].mem_bytes, 1 << 30);
        assert_eq!(m.distance, vec![vec![10, 21], vec![21, 10]]);
        assert_eq!(m.latency_ns, vec![vec![81.0, 141.0], vec![141.0, 81.0]]);
        assert_eq!(m.bandwidth.node_gbps, vec![113.0, 113.0]);
        assert_eq!(m.bandwidth.link_gbps, 34.0);
        assert!(m.cpus.iter().all(|c| c.smt == 0));
        assert_ne!(m.cpus[1].package, m.cpus[2].package);
    }

    #[test]
    fn spr_4n_uses_smt_last_numbering() {
        let m = load("spr-4n").unwrap();
        assert_eq!((m.nr_cpus(), m.nr_nodes(), m.nr_cores()), (320, 4, 160));
        assert_eq!(cpus_of(&m, 0), "0-39,160-199");
        assert_eq!(cpus_of(&m, 3), "120-159,280-319");
        assert_eq!(m.cpus[160].core, m.cpus[0].core);
        assert_eq!((m.cpus[0].smt, m.cpus[160].smt), (0, 1));
        assert_eq!(m.nodes[0].mem_bytes, 256 << 30);
        assert_eq!(m.latency_ns[0][3], 143.0);
        assert!(m.sources.iter().any(|s| s.contains("Ice Lake 8360Y")));
    }

    #[test]
    fn clx_2s_104_has_104_cpus() {
        let m = load("clx-2s-104").unwrap();
        assert_eq!((m.nr_cpus(), m.nr_nodes(), m.nr_cores()), (104, 2, 52));
        assert_eq!(cpus_of(&m, 0), "0-25,52-77");
        assert_eq!(cpus_of(&m, 1), "26-51,78-103");
        assert_eq!(m.total_mem_bytes(), 256 << 30);
    }

    #[test]
    fn gnr_2s_snc3_has_three_nodes_per_package_with_one_llc_each() {
        let m = load("gnr-2s-snc3").unwrap();
        assert_eq!((m.nr_cpus(), m.nr_nodes(), m.nr_cores()), (480, 6, 240));
        assert_eq!(cpus_of(&m, 0), "0-39,240-279");
        assert_eq!(cpus_of(&m, 5), "200-239,440-479");
        let pkgs: Vec<usize> = m.nodes.iter().map(|n| n.package).collect();
        assert_eq!(pkgs, vec![0, 0, 0, 1, 1, 1]);
        for n in &m.nodes {
            let llcs: CpuSet = n.cpus.iter().map(|c| m.cpus[c].llc).collect();
            assert_eq!(llcs.len(), 1, "node {} spans several LLCs", n.id);
        }
        assert_eq!(m.distance[0][1], 12);
        assert_eq!(m.distance[0][3], 21);
        assert_eq!(m.latency_ns[0][1], 90.0);
        assert_eq!(m.latency_ns[0][4], 136.0);
        assert_eq!(m.bandwidth.same_package_link_gbps, 149.0);
    }

    #[test]
    fn four_socket_48_has_48_cpus() {
        let m = load("4s-48").unwrap();
        assert_eq!((m.nr_cpus(), m.nr_nodes(), m.nr_cores()), (48, 4, 24));
        assert_eq!(cpus_of(&m, 0), "0-5,24-29");
        assert_eq!(m.nodes[2].mem_bytes, 16 << 30);
        // core_gbps derived: 10 x 64 B / 61 ns.
        assert!((m.bandwidth.core_gbps - 640.0 / 61.0).abs() < 1e-12);
        assert!(m.sources.iter().any(|s| s.contains("Little's law")));
    }

    #[test]
    fn presets_carry_their_link_layouts() {
        use crate::{LinkEnds, Snoop};
        let pkg_links = |m: &Machine| -> Vec<(usize, usize, u32)> {
            m.links
                .iter()
                .filter_map(|l| match l.ends {
                    LinkEnds::Packages(a, b) => Some((a, b, l.count)),
                    LinkEnds::Nodes(..) => None,
                })
                .collect()
        };
        let clx = load("clx-2s-104").unwrap();
        assert_eq!(pkg_links(&clx), vec![(0, 1, 3)]);
        assert!((clx.links[0].bundle_gbps() - 34.0).abs() < 1e-9);
        // 4s-48: a ring, no link across; broadcast snooping.
        let ring = load("4s-48").unwrap();
        assert_eq!(
            pkg_links(&ring),
            vec![(0, 1, 1), (1, 2, 1), (2, 3, 1), (0, 3, 1)]
        );
        assert_eq!(ring.coherence.snoop, Snoop::Broadcast);
        // spr-4n: fully connected, one link per pair.
        assert_eq!(pkg_links(&load("spr-4n").unwrap()).len(), 6);
        // gnr-2s-snc3: 6 UPI links, the dies of a socket in a chain.
        let gnr = load("gnr-2s-snc3").unwrap();
        assert_eq!(pkg_links(&gnr), vec![(0, 1, 6)]);
        let dies: Vec<LinkEnds> = gnr
            .links
            .iter()
            .map(|l| l.ends)
            .filter(|e| matches!(e, LinkEnds::Nodes(..)))
            .collect();
        assert_eq!(
            dies,
            vec![
                LinkEnds::Nodes(0, 1),
                LinkEnds::Nodes(1, 2),
                LinkEnds::Nodes(3, 4),
                LinkEnds::Nodes(4, 5)
            ]
        );
    }

    #[test]
    fn load_reads_files_and_rejects_unknown_names() {
        assert!(matches!(
            load("no-such-machine"),
            Err(TopologyError::Unknown(_))
        ));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.toml");
        std::fs::write(&path, preset_toml("tiny-2n").unwrap()).unwrap();
        let m = load(path.to_str().unwrap()).unwrap();
        assert_eq!(m.nr_cpus(), 4);
        std::fs::write(&path, "name = [").unwrap();
        assert!(matches!(
            load(path.to_str().unwrap()),
            Err(TopologyError::Toml { .. })
        ));
    }
}
