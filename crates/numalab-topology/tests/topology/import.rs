//! Imports: `numactl --hardware` output and a fake sysfs tree, each turned
//! into a spec that parses back into the expected machine.

use numalab_topology::import::{from_numactl, from_sysfs};
use numalab_topology::spec::{parse_machine, to_toml};
use numalab_topology::TopologyError;
use std::fs;
use std::path::Path;

/// `numactl --hardware` of a 2-socket Haswell box (2 x 12 cores x 2 threads).
const NUMACTL_2N: &str = "available: 2 nodes (0-1)
node 0 cpus: 0 1 2 3 4 5 6 7 8 9 10 11 24 25 26 27 28 29 30 31 32 33 34 35
node 0 size: 64136 MB
node 0 free: 60211 MB
node 1 cpus: 12 13 14 15 16 17 18 19 20 21 22 23 36 37 38 39 40 41 42 43 44 45 46 47
node 1 size: 64509 MB
node 1 free: 62985 MB
node distances:
node   0   1 
  0:  10  21 
  1:  21  10 
";

#[test]
fn numactl_two_node_box_round_trips() {
    let text = from_numactl(NUMACTL_2N).unwrap();
    let m = parse_machine(&text, "import").unwrap();
    assert_eq!((m.nr_cpus(), m.nr_nodes()), (48, 2));
    assert_eq!(m.nodes[0].cpus.to_string(), "0-11,24-35");
    assert_eq!(m.nodes[1].cpus.to_string(), "12-23,36-47");
    assert_eq!(m.nodes[0].mem_bytes, 64136 << 20);
    assert_eq!(m.nodes[1].mem_bytes, 64509 << 20);
    assert_eq!(m.distance, vec![vec![10, 21], vec![21, 10]]);
    // numactl knows no SMT, caches or packages.
    assert_eq!(m.nr_cores(), 48);
    assert_eq!((m.nodes[0].package, m.nodes[1].package), (0, 1));
    assert_eq!(m.cpus[24].llc, m.cpus[0].llc);
    assert_ne!(m.cpus[12].llc, m.cpus[0].llc);
    // Physics are the named default, commented as such.
    assert_eq!(m.latency_ns[0][1], 141.0);
    assert_eq!(m.bandwidth.node_gbps, vec![113.0, 113.0]);
    for key in ["local_ns", "remote_ns", "node_gbps", "link_gbps"] {
        let line = text.lines().find(|l| l.starts_with(key)).unwrap();
        assert!(
            line.contains("# default physics: Cascade Lake 6240"),
            "{line}"
        );
    }
    assert!(m
        .sources
        .iter()
        .any(|s| s.contains("NOT measured on this host")));
    assert!(m
        .sources
        .iter()
        .any(|s| s.contains("imported from numactl")));
    assert_eq!(parse_machine(&to_toml(&m), "again").unwrap(), m);
}

#[test]
fn numactl_with_a_memory_only_node_and_offline_cpus() {
    let text = "available: 3 nodes (0-2)
node 0 cpus: 0 1 2 3
node 0 size: 1024 MB
node 0 free: 1000 MB
node 1 cpus: 4 5 7
node 1 size: 2048 MB
node 1 free: 2000 MB
node 2 cpus:
node 2 size: 8192 MB
node 2 free: 8192 MB
node distances:
node   0   1   2
  0:  10  21  17
  1:  21  10  28
  2:  17  28  10
";
    let spec = from_numactl(text).unwrap();
    let m = parse_machine(&spec, "import").unwrap();
    assert_eq!(m.nr_cpus(), 7);
    assert_eq!(m.nodes[1].cpus.to_string(), "4-6");
    assert!(m.nodes[2].cpus.is_empty());
    assert_eq!(m.nodes[2].mem_bytes, 8 << 30);
    assert_eq!(m.distance[1][2], 28);
    assert!(m.sources.iter().any(|s| s.contains("renumbered densely")));
}

#[test]
fn numactl_sparse_node_ids_are_renumbered() {
    let text = "available: 2 nodes (0,2)
node 0 cpus: 0 1
node 0 size: 100 MB
node 2 cpus: 2 3
node 2 size: 100 MB
node distances:
node   0   2
  0:  10  20
  2:  20  10
";
    let m = parse_machine(&from_numactl(text).unwrap(), "import").unwrap();
    assert_eq!(m.nr_nodes(), 2);
    assert_eq!(m.distance[0][1], 20);
    assert!(m.sources.iter().any(|s| s.contains("host node ids [0, 2]")));
}

#[test]
fn numactl_garbage_is_an_import_error() {
    for bad in [
        "",
        "No NUMA available on this system\n",
        "hello world\n",
        "node 0 cpus: 0 x\n",
        "node 0 cpus: 0\n",
        "node 0 cpus: 0\nnode 0 size: 0 MB\n",
        "available: 2 nodes (0-1)\nnode 0 cpus: 0\nnode 0 size: 10 MB\n",
        "node 0 cpus: 0\nnode 0 size: 10 MB\nnode 1 cpus: 0\nnode 1 size: 10 MB\n",
        "node 0 cpus: 0\nnode 0 size: 10 MB\nnode distances:\nnode 0\n 0: 11\n",
        "node 0 cpus: 0\nnode 0 size: 10 MB\nnode distances:\nnode 0 1\n 0: 10 20\n",
    ] {
        match from_numactl(bad) {
            Err(TopologyError::Import(msg)) => assert!(!msg.is_empty()),
            other => panic!("{bad:?}: expected an import error, got {other:?}"),
        }
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// One package with SNC2 (2 nodes x 2 cores x 2 threads, smt-last numbering,
/// the L3 spanning the whole package) plus a CPU-less memory node.
fn fake_sysfs(root: &Path) {
    let node = "devices/system/node";
    write(root, &format!("{node}/node0/cpulist"), "0-1,4-5\n");
    write(root, &format!("{node}/node1/cpulist"), "2-3,6-7\n");
    write(root, &format!("{node}/node2/cpulist"), "\n");
    write(root, &format!("{node}/node0/distance"), "10 11 20\n");
    write(root, &format!("{node}/node1/distance"), "11 10 20\n");
    write(root, &format!("{node}/node2/distance"), "20 20 10\n");
    for (k, kb) in [(0, 2097152u64), (1, 2097152), (2, 16777216)] {
        write(
            root,
            &format!("{node}/node{k}/meminfo"),
            &format!("Node {k} MemTotal:       {kb} kB\nNode {k} MemFree:        1000 kB\n"),
        );
    }
    fs::create_dir_all(root.join(format!("{node}/possible"))).ok();
    for c in 0..8 {
        let cpu = format!("devices/system/cpu/cpu{c}");
        let sib = c % 4;
        write(
            root,
            &format!("{cpu}/topology/thread_siblings_list"),
            &format!("{},{}\n", sib, sib + 4),
        );
        write(root, &format!("{cpu}/topology/physical_package_id"), "0\n");
        write(root, &format!("{cpu}/cache/index3/level"), "3\n");
        write(
            root,
            &format!("{cpu}/cache/index3/shared_cpu_list"),
            "0-7\n",
        );
    }
}

#[test]
fn sysfs_import_reads_smt_packages_and_llcs() {
    let dir = tempfile::tempdir().unwrap();
    fake_sysfs(dir.path());
    let text = from_sysfs(dir.path()).unwrap();
    let m = parse_machine(&text, "import").unwrap();
    assert_eq!((m.nr_cpus(), m.nr_nodes(), m.nr_cores()), (8, 3, 4));
    assert_eq!(m.nodes[0].cpus.to_string(), "0-1,4-5");
    assert_eq!(m.cpus[4].core, m.cpus[0].core);
    assert_eq!((m.cpus[0].smt, m.cpus[4].smt), (0, 1));
    // SNC: both CPU nodes in package 0; the memory node gets its own.
    let pkgs: Vec<usize> = m.nodes.iter().map(|n| n.package).collect();
    assert_eq!(pkgs, vec![0, 0, 1]);
    // The package-wide L3 is split at the node boundary.
    assert_eq!(m.cpus[5].llc, m.cpus[0].llc);
    assert_ne!(m.cpus[2].llc, m.cpus[0].llc);
    assert!(m
        .sources
        .iter()
        .any(|s| s.contains("split at node boundaries")));
    assert_eq!(m.nodes[0].mem_bytes, 2 << 30);
    assert_eq!(m.nodes[2].mem_bytes, 16 << 30);
    assert!(m.nodes[2].cpus.is_empty());
    assert_eq!(
        m.distance,
        vec![vec![10, 11, 20], vec![11, 10, 20], vec![20, 20, 10]]
    );
    assert!(text.contains("threads_per_core = 2"), "{text}");
    assert_eq!(parse_machine(&to_toml(&m), "again").unwrap(), m);
}

#[test]
fn sysfs_without_cpu_topology_falls_back_to_one_core_per_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "devices/system/node/node0/cpulist", "0-1");
    write(
        root,
        "devices/system/node/node0/meminfo",
        "Node 0 MemTotal: 1048576 kB\n",
    );
    let text = from_sysfs(root).unwrap();
    let m = parse_machine(&text, "import").unwrap();
    assert_eq!((m.nr_cpus(), m.nr_cores(), m.nr_nodes()), (2, 2, 1));
    assert!(m
        .sources
        .iter()
        .any(|s| s.contains("each CPU is its own core")));
    assert!(m
        .sources
        .iter()
        .any(|s| s.contains("SLIT left to the default")));
}

#[test]
fn sysfs_errors_are_import_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert!(matches!(from_sysfs(root), Err(TopologyError::Import(_))));
    write(root, "devices/system/node/node0/cpulist", "0-1");
    // No meminfo.
    assert!(matches!(from_sysfs(root), Err(TopologyError::Import(_))));
    write(root, "devices/system/node/node0/meminfo", "nothing here\n");
    assert!(matches!(from_sysfs(root), Err(TopologyError::Import(_))));
    write(
        root,
        "devices/system/node/node0/meminfo",
        "Node 0 MemTotal: 1048576 kB\n",
    );
    write(root, "devices/system/node/node0/distance", "10 20\n");
    assert!(matches!(from_sysfs(root), Err(TopologyError::Import(_))));
}
