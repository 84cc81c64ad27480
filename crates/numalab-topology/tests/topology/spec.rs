//! Spec parsing: the two topology forms, defaults and their notes, the
//! latency model, round trips through `to_toml`, and one test per validation
//! error asserting the field it names.

use numalab_topology::spec::{parse_machine, to_toml};
use numalab_topology::{Machine, TopologyError};

const PHYSICS: &str = "
[latency]
local_ns = 80
remote_ns = 140

[bandwidth]
node_gbps = 100
link_gbps = 30
";

fn uniform(topology: &str) -> String {
    format!("[topology]\n{topology}\n[memory]\nper_node_gib = 2\n{PHYSICS}")
}

fn ok(text: &str) -> Machine {
    let m = parse_machine(text, "test.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let back = to_toml(&m);
    let again = parse_machine(&back, "test.toml").unwrap_or_else(|e| panic!("{e}\n{back}"));
    assert_eq!(again, m, "to_toml does not round-trip:\n{back}");
    m
}

fn field_err(text: &str) -> (String, String) {
    match parse_machine(text, "test.toml") {
        Err(TopologyError::Field { field, message, .. }) => (field, message),
        other => panic!("expected a field error, got {other:?}\n{text}"),
    }
}

#[track_caller]
fn assert_field(text: &str, want: &str) {
    let (field, message) = field_err(text);
    assert_eq!(field, want, "message: {message}\n{text}");
    let shown = parse_machine(text, "test.toml").unwrap_err().to_string();
    assert!(shown.contains(want), "{shown}");
}

#[test]
fn uniform_smt_last_numbers_first_threads_first() {
    let m = ok(&uniform(
        "packages = 2\nnodes_per_package = 1\ncores_per_node = 4\nthreads_per_core = 2",
    ));
    assert_eq!((m.nr_cpus(), m.nr_cores(), m.nr_nodes()), (16, 8, 2));
    assert_eq!(m.nodes[0].cpus.to_string(), "0-3,8-11");
    assert_eq!(m.nodes[1].cpus.to_string(), "4-7,12-15");
    assert_eq!(m.cpus[9].core, m.cpus[1].core);
    assert_eq!((m.cpus[1].smt, m.cpus[9].smt), (0, 1));
    assert_eq!(m.cpus[12].package, 1);
    assert_eq!(m.nodes[1].mem_bytes, 2 << 30);
    assert_eq!(m.name, "test.toml");
}

#[test]
fn uniform_smt_adjacent_gives_siblings_consecutive_ids() {
    let m = ok(&uniform(
        "packages = 1\nnodes_per_package = 2\ncores_per_node = 4\nthreads_per_core = 2\ncpu_numbering = \"smt-adjacent\"",
    ));
    assert_eq!(m.nodes[0].cpus.to_string(), "0-7");
    assert_eq!(m.cpus[0].core, m.cpus[1].core);
    assert_ne!(m.cpus[1].core, m.cpus[2].core);
    assert_eq!(m.cpus[5].smt, 1);
    // One package with two nodes: SLIT 12 and same-package latency.
    assert_eq!(m.distance, vec![vec![10, 12], vec![12, 10]]);
    assert!((m.latency_ns[0][1] - 80.0 * 1.08).abs() < 1e-9);
    assert!(m.sources.iter().any(|s| s.contains(
        "latency.same_package_ns defaulted to local_ns*1.08 = 86.40 ns (Intel MLC: a same-socket sub-node costs +5-10%"
    )));
}

#[test]
fn llcs_per_node_splits_a_node_into_core_groups() {
    let m = ok(&uniform(
        "packages = 1\nnodes_per_package = 1\ncores_per_node = 4\nthreads_per_core = 2\nllcs_per_node = 2",
    ));
    // Cores 0,1 (CPUs 0,1,4,5) share an LLC; cores 2,3 the other.
    assert_eq!(m.cpus[0].llc, m.cpus[5].llc);
    assert_ne!(m.cpus[0].llc, m.cpus[2].llc);
    assert_eq!(m.cpus[6].llc, m.cpus[3].llc);
    assert!(to_toml(&m).contains("[[llc]]"));
}

#[test]
fn defaults_are_recorded_in_sources() {
    let m = ok(&uniform(
        "packages = 2\nnodes_per_package = 1\ncores_per_node = 1\nthreads_per_core = 1",
    ));
    let has = |s: &str| m.sources.iter().any(|x| x.contains(s));
    assert!(has("distance.matrix defaulted"), "{:?}", m.sources);
    assert!(has(
        "line_fill_buffers 10 (default) x 64 B / local_ns 80 ns = 8.00 GB/s"
    ));
    assert!(has(
        "bandwidth.same_package_link_gbps defaulted to 2*node_gbps"
    ));
    assert!(has("bandwidth.smt_throughput defaulted to 1.25"));
    assert_eq!(m.bandwidth.core_gbps, 8.0);
    assert_eq!(m.bandwidth.same_package_link_gbps, 200.0);
    assert_eq!(m.bandwidth.smt_throughput, 1.25);
}

#[test]
fn author_sources_come_first_and_values_given_are_not_noted() {
    let text = "name = \"box\"\ndescription = \"a box\"\nsources = [\"my notes\"]\n\
        [topology]\npackages = 2\nnodes_per_package = 1\ncores_per_node = 1\nthreads_per_core = 1\n\
        [memory]\nper_node_gib = [1, 2.5]\n\
        [distance]\nmatrix = [[10, 20], [20, 10]]\n\
        [latency]\nlocal_ns = 80\nsame_package_ns = 85\nremote_ns = 140\n\
        [bandwidth]\nnode_gbps = [100, 90]\nlink_gbps = 30\nsame_package_link_gbps = 50\ncore_gbps = 10\nsmt_throughput = 1.1\n\
        [[links]]\npackages = [0, 1]\ngbps = 30\n\
        [coherence]\nmessage_bytes = 7\nsnoop = \"directory\"\n";
    let m = ok(text);
    assert_eq!(m.sources, vec!["my notes".to_string()]);
    assert_eq!((m.name.as_str(), m.description.as_str()), ("box", "a box"));
    assert_eq!(m.nodes[1].mem_bytes, 5 << 29);
    assert_eq!(m.bandwidth.node_gbps, vec![100.0, 90.0]);
}

#[test]
fn line_fill_buffers_sets_the_derived_core_bandwidth() {
    let text =
        uniform("packages = 1\nnodes_per_package = 1\ncores_per_node = 1\nthreads_per_core = 1")
            .replace("link_gbps = 30", "link_gbps = 30\nline_fill_buffers = 16");
    let m = ok(&text);
    assert_eq!(m.bandwidth.core_gbps, 16.0 * 64.0 / 80.0);
}

#[test]
fn remote_latency_beyond_the_nearest_remote_distance_scales_with_slit() {
    // A 4-socket ring: neighbours at 21, the opposite socket at 31.
    let text = format!(
        "[topology]\npackages = 4\nnodes_per_package = 1\ncores_per_node = 1\nthreads_per_core = 1\n\
         [memory]\nper_node_gib = 1\n\
         [distance]\nmatrix = [[10,21,31,21],[21,10,21,31],[31,21,10,21],[21,31,21,10]]\n{PHYSICS}"
    );
    let m = ok(&text);
    assert_eq!(m.latency_ns[0][1], 140.0);
    let want = 80.0 + 21.0 * (140.0 - 80.0) / 11.0;
    assert!(
        (m.latency_ns[0][2] - want).abs() < 1e-9,
        "{}",
        m.latency_ns[0][2]
    );
    assert!(m
        .sources
        .iter()
        .any(|s| s.contains("latency beyond SLIT distance 21 scaled linearly")));
}

#[test]
fn explicit_nodes_with_smt_and_llc_groups_round_trip() {
    let text = format!(
        "[[nodes]]\ncpus = \"0-3\"\nmem_gib = 1.5\npackage = 0\n\
         [[nodes]]\ncpus = \"4-7\"\nmem_gib = 1.5\npackage = 0\n\
         [[smt]]\nsiblings = \"0,2\"\n[[smt]]\nsiblings = \"1,3\"\n\
         [[llc]]\ncpus = \"4-5\"\n[[llc]]\ncpus = \"6-7\"\n{PHYSICS}"
    );
    let m = ok(&text);
    assert_eq!(m.nr_cores(), 6);
    assert_eq!(m.cpus[2].core, m.cpus[0].core);
    assert_eq!(m.cpus[2].smt, 1);
    assert_eq!(m.cpus[4].smt, 0);
    assert_eq!(m.cpus[4].llc, m.cpus[5].llc);
    assert_ne!(m.cpus[5].llc, m.cpus[6].llc);
    assert_eq!(m.cpus[0].llc, m.cpus[3].llc);
    let llcs: std::collections::BTreeSet<usize> = m.cpus.iter().map(|c| c.llc).collect();
    assert_eq!(llcs.len(), 3);
    // One package, so the remote latency is not needed.
    assert_eq!(m.latency_ns[0][1], 80.0 * 1.08);
}

#[test]
fn explicit_per_node_threads_per_core_and_numbering() {
    let text = format!(
        "[[nodes]]\ncpus = \"0-1,4-5\"\nmem_gib = 1\nthreads_per_core = 2\n\
         [[nodes]]\ncpus = \"2-3,6-7\"\nmem_gib = 1\nthreads_per_core = 2\n\
         [[nodes]]\ncpus = \"8-11\"\nmem_gib = 1\nthreads_per_core = 2\ncpu_numbering = \"smt-adjacent\"\n{PHYSICS}"
    );
    let m = ok(&text);
    assert_eq!(m.cpus[4].core, m.cpus[0].core);
    assert_eq!(m.cpus[9].core, m.cpus[8].core);
    assert_eq!(
        m.nodes.iter().map(|n| n.package).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
}

#[test]
fn a_cpu_less_memory_node_is_accepted() {
    let text = format!(
        "[[nodes]]\ncpus = \"0-1\"\nmem_gib = 1\n\
         [[nodes]]\ncpus = \"\"\nmem_gib = 64\n\
         [distance]\nmatrix = [[10, 17], [17, 10]]\n{PHYSICS}"
    );
    let m = ok(&text);
    assert!(m.nodes[1].cpus.is_empty());
    assert_eq!(m.nodes[1].package, 1);
    assert_eq!(m.latency_ns[0][1], 140.0);
    assert_eq!(m.nr_cpus(), 2);
}

#[test]
fn a_far_memory_node_does_not_become_the_remote_anchor() {
    // Two sockets at 21, a CXL node at 14 from socket 0 and 24 from socket 1.
    let text = format!(
        "[[nodes]]\ncpus = \"0\"\nmem_gib = 1\n[[nodes]]\ncpus = \"1\"\nmem_gib = 1\n\
         [[nodes]]\ncpus = \"\"\nmem_gib = 1\n\
         [distance]\nmatrix = [[10,21,14],[21,10,24],[14,24,10]]\n{PHYSICS}"
    );
    let m = ok(&text);
    assert_eq!(m.latency_ns[0][1], 140.0);
    assert_eq!(m.latency_ns[0][2], 140.0);
    assert!((m.latency_ns[1][2] - (80.0 + 14.0 * 60.0 / 11.0)).abs() < 1e-9);
}

#[test]
fn a_full_latency_matrix_is_taken_as_given() {
    let text = "[[nodes]]\ncpus = \"0\"\nmem_gib = 1\n[[nodes]]\ncpus = \"1\"\nmem_gib = 1\n\
        [latency]\nmatrix = [[70.5, 150], [160, 75]]\n\
        [bandwidth]\nnode_gbps = 100\nlink_gbps = 30\n";
    let m = ok(text);
    assert_eq!(m.latency_ns, vec![vec![70.5, 150.0], vec![160.0, 75.0]]);
    assert_eq!(m.bandwidth.core_gbps, 640.0 / 70.5);
    assert!(to_toml(&m).contains("matrix = [\n  [70.5, 150.0],"));
}

#[test]
fn malformed_toml_reports_line_and_column() {
    match parse_machine("name = \"x\"\n[topology\n", "bad.toml") {
        Err(TopologyError::Toml { origin, message }) => {
            assert_eq!(origin, "bad.toml");
            assert!(message.contains("line 2"), "{message}");
            assert!(message.contains("column"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_keys_name_the_key() {
    assert_field("bogus = 1\n", "bogus");
    assert_field(&uniform("packages = 1\ncores = 3"), "topology.cores");
    let text = format!(
        "[[nodes]]\ncpus = \"0\"\nmem_gib = 1\n[[nodes]]\ncpus = \"1\"\nmem = 1\n{PHYSICS}"
    );
    assert_field(&text, "nodes[1].mem");
    assert_field(
        &format!("{}\nwat = 2\n", uniform("packages = 1")),
        "bandwidth.wat",
    );
}

#[test]
fn wrong_types_name_the_key() {
    assert_field(
        &uniform(
            "packages = \"two\"\nnodes_per_package = 1\ncores_per_node = 1\nthreads_per_core = 1",
        ),
        "topology.packages",
    );
}

const ONE_BY_ONE: &str =
    "packages = 1\nnodes_per_package = 1\ncores_per_node = 1\nthreads_per_core = 1";
const TWO_BY_ONE: &str =
    "packages = 2\nnodes_per_package = 1\ncores_per_node = 2\nthreads_per_core = 1";

#[test]
fn topology_counts_must_be_positive() {
    for (key, field) in [
        ("packages = 1", "topology.packages"),
        ("nodes_per_package = 1", "topology.nodes_per_package"),
        ("cores_per_node = 1", "topology.cores_per_node"),
        ("threads_per_core = 1", "topology.threads_per_core"),
    ] {
        let zero = ONE_BY_ONE.replace(key, &key.replace("= 1", "= 0"));
        assert_field(&uniform(&zero), field);
        let neg = ONE_BY_ONE.replace(key, &key.replace("= 1", "= -3"));
        assert_field(&uniform(&neg), field);
        let missing = ONE_BY_ONE.replace(key, "");
        assert_field(&uniform(&missing), field);
    }
    assert_field(
        &uniform(&format!("{ONE_BY_ONE}\nllcs_per_node = 0")),
        "topology.llcs_per_node",
    );
}

#[test]
fn more_than_64_nodes_is_refused() {
    assert_field(
        &uniform(&ONE_BY_ONE.replace("packages = 1", "packages = 65")),
        "topology.packages",
    );
    let t = ONE_BY_ONE
        .replace("packages = 1", "packages = 8")
        .replace("nodes_per_package = 1", "nodes_per_package = 9");
    assert_field(&uniform(&t), "topology.nodes_per_package");
    let mut text = String::new();
    for i in 0..65 {
        text.push_str(&format!("[[nodes]]\ncpus = \"{i}\"\nmem_gib = 1\n"));
    }
    text.push_str(PHYSICS);
    assert_field(&text, "nodes");
}

#[test]
fn too_many_cpus_is_refused() {
    let t = "packages = 64\nnodes_per_package = 1\ncores_per_node = 100\nthreads_per_core = 2";
    assert_field(&uniform(t), "topology.cores_per_node");
}

#[test]
fn llcs_must_divide_cores() {
    let t = "packages = 1\nnodes_per_package = 1\ncores_per_node = 4\nthreads_per_core = 1\nllcs_per_node = 3";
    assert_field(&uniform(t), "topology.llcs_per_node");
}

#[test]
fn cpu_numbering_must_be_known() {
    assert_field(
        &uniform(&format!("{ONE_BY_ONE}\ncpu_numbering = \"interleaved\"")),
        "topology.cpu_numbering",
    );
}

#[test]
fn distance_matrix_shape_and_values_are_checked() {
    let with = |m: &str| {
        uniform(TWO_BY_ONE).replace("[latency]", &format!("[distance]\nmatrix = {m}\n[latency]"))
    };
    assert_field(&with("[[10, 21]]"), "distance.matrix");
    assert_field(&with("[[10, 21], [21]]"), "distance.matrix[1]");
    assert_field(&with("[[10, 21, 21], [21, 10, 21]]"), "distance.matrix[0]");
    assert_field(&with("[[11, 21], [21, 10]]"), "distance.matrix[0][0]");
    assert_field(&with("[[10, 21], [21, 12]]"), "distance.matrix[1][1]");
    assert_field(&with("[[10, 9], [21, 10]]"), "distance.matrix[0][1]");
    assert_field(&with("[[10, 21], [10, 10]]"), "distance.matrix[1][0]");
    assert_field(&with("[[10, 21], [-1, 10]]"), "distance.matrix[1][0]");
    assert_field(&with("[[10, 255], [21, 10]]"), "distance.matrix[0][1]");
}

#[test]
fn a_cpu_in_two_nodes_is_refused() {
    let text = format!(
        "[[nodes]]\ncpus = \"0-3\"\nmem_gib = 1\n[[nodes]]\ncpus = \"3-5\"\nmem_gib = 1\n{PHYSICS}"
    );
    let (field, message) = field_err(&text);
    assert_eq!(field, "nodes[1].cpus");
    assert!(message.contains("CPU 3 is also in nodes[0]"), "{message}");
}

#[test]
fn cpu_ids_must_be_contiguous_from_zero() {
    let text = format!(
        "[[nodes]]\ncpus = \"0-1\"\nmem_gib = 1\n[[nodes]]\ncpus = \"3\"\nmem_gib = 1\n{PHYSICS}"
    );
    let (field, message) = field_err(&text);
    assert_eq!(field, "nodes");
    assert!(message.contains("CPU 2"), "{message}");
    let text = format!("[[nodes]]\ncpus = \"1\"\nmem_gib = 1\n{PHYSICS}");
    assert_field(&text, "nodes");
}

#[test]
fn nodes_need_cpus_somewhere_and_a_cpulist_each() {
    assert_field(&format!("nodes = []\n{PHYSICS}"), "nodes");
    assert_field(
        &format!("[[nodes]]\ncpus = \"\"\nmem_gib = 1\n{PHYSICS}"),
        "nodes",
    );
    assert_field(
        &format!("[[nodes]]\nmem_gib = 1\n{PHYSICS}"),
        "nodes[0].cpus",
    );
    assert_field(
        &format!("[[nodes]]\ncpus = \"0-x\"\nmem_gib = 1\n{PHYSICS}"),
        "nodes[0].cpus",
    );
    assert_field(
        &format!("[[nodes]]\ncpus = \"0-3\"\nmem_gib = 1\nthreads_per_core = 0\n{PHYSICS}"),
        "nodes[0].threads_per_core",
    );
    assert_field(
        &format!("[[nodes]]\ncpus = \"0-2\"\nmem_gib = 1\nthreads_per_core = 2\n{PHYSICS}"),
        "nodes[0].threads_per_core",
    );
}

#[test]
fn package_ids_must_run_from_zero() {
    let text = format!("[[nodes]]\ncpus = \"0\"\nmem_gib = 1\npackage = 2\n{PHYSICS}");
    assert_field(&text, "nodes[0].package");
    let text = format!("[[nodes]]\ncpus = \"0\"\nmem_gib = 1\npackage = -1\n{PHYSICS}");
    assert_field(&text, "nodes[0].package");
}

#[test]
fn memory_must_be_positive() {
    for bad in ["0", "-1", "nan", "inf"] {
        let text =
            uniform(ONE_BY_ONE).replace("per_node_gib = 2", &format!("per_node_gib = {bad}"));
        assert_field(&text, "memory.per_node_gib");
    }
    let text = uniform(TWO_BY_ONE).replace("per_node_gib = 2", "per_node_gib = [1, 0]");
    assert_field(&text, "memory.per_node_gib[1]");
    let text = uniform(TWO_BY_ONE).replace("per_node_gib = 2", "per_node_gib = [1, 1, 1]");
    assert_field(&text, "memory.per_node_gib");
    let text = uniform(ONE_BY_ONE).replace("per_node_gib = 2", "");
    assert_field(&text, "memory.per_node_gib");
    let text = format!("[[nodes]]\ncpus = \"0\"\nmem_gib = -2\n{PHYSICS}");
    assert_field(&text, "nodes[0].mem_gib");
    let text = format!("[[nodes]]\ncpus = \"0\"\n{PHYSICS}");
    assert_field(&text, "nodes[0].mem_gib");
}

#[test]
fn latency_values_are_checked() {
    let base = uniform(TWO_BY_ONE);
    assert_field(
        &base.replace("local_ns = 80", "local_ns = 0"),
        "latency.local_ns",
    );
    assert_field(
        &base.replace("local_ns = 80", "local_ns = nan"),
        "latency.local_ns",
    );
    assert_field(&base.replace("local_ns = 80", ""), "latency.local_ns");
    assert_field(
        &base.replace("remote_ns = 140", "remote_ns = 70"),
        "latency.remote_ns",
    );
    assert_field(&base.replace("remote_ns = 140", ""), "latency.remote_ns");
    assert_field(
        &base.replace("remote_ns = 140", "remote_ns = 140\nsame_package_ns = 50"),
        "latency.same_package_ns",
    );
    assert_field(
        &base.replace(
            "remote_ns = 140",
            "remote_ns = 140\nmatrix = [[1, 2], [2, 1]]",
        ),
        "latency.matrix",
    );
    let (f, _) = field_err(&base.replace("[latency]\nlocal_ns = 80\nremote_ns = 140", ""));
    assert_eq!(f, "latency");
    let m = base.replace(
        "local_ns = 80\nremote_ns = 140",
        "matrix = [[80, 140], [140, -1]]",
    );
    assert_field(&m, "latency.matrix[1][1]");
    let m = base.replace("local_ns = 80\nremote_ns = 140", "matrix = [[80, 140]]");
    assert_field(&m, "latency.matrix");
}

#[test]
fn bandwidth_values_are_checked() {
    let base = uniform(TWO_BY_ONE);
    assert_field(
        &base.replace("node_gbps = 100", "node_gbps = 0"),
        "bandwidth.node_gbps",
    );
    assert_field(
        &base.replace("node_gbps = 100", "node_gbps = [100, -5]"),
        "bandwidth.node_gbps[1]",
    );
    assert_field(
        &base.replace("node_gbps = 100", "node_gbps = [100]"),
        "bandwidth.node_gbps",
    );
    assert_field(&base.replace("node_gbps = 100", ""), "bandwidth.node_gbps");
    assert_field(
        &base.replace("link_gbps = 30", "link_gbps = nan"),
        "bandwidth.link_gbps",
    );
    assert_field(&base.replace("link_gbps = 30", ""), "bandwidth.link_gbps");
    for (k, v) in [
        ("core_gbps", "-1"),
        ("same_package_link_gbps", "0"),
        ("smt_throughput", "nan"),
        ("line_fill_buffers", "0"),
    ] {
        let t = base.replace("link_gbps = 30", &format!("link_gbps = 30\n{k} = {v}"));
        assert_field(&t, &format!("bandwidth.{k}"));
    }
    let t = base.replace(
        "link_gbps = 30",
        "link_gbps = 30\ncore_gbps = 5\nline_fill_buffers = 12",
    );
    assert_field(&t, "bandwidth.line_fill_buffers");
    let (f, _) = field_err(&base.replace("[bandwidth]\nnode_gbps = 100\nlink_gbps = 30", ""));
    assert_eq!(f, "bandwidth");
}

#[test]
fn topology_and_nodes_are_exclusive_and_one_is_required() {
    let text = format!(
        "{}\n[[nodes]]\ncpus = \"0\"\nmem_gib = 1\n",
        uniform(ONE_BY_ONE)
    );
    assert_field(&text, "nodes");
    assert_field(PHYSICS, "topology");
    let text = format!("{}\n[[smt]]\nsiblings = \"0\"\n", uniform(ONE_BY_ONE));
    assert_field(&text, "smt");
}

#[test]
fn smt_and_llc_groups_are_checked() {
    let nodes = "[[nodes]]\ncpus = \"0-1\"\nmem_gib = 1\n[[nodes]]\ncpus = \"2-3\"\nmem_gib = 1\n";
    let t = format!("{nodes}[[smt]]\nsiblings = \"1-2\"\n{PHYSICS}");
    assert_field(&t, "smt[0].siblings");
    let t = format!("{nodes}[[smt]]\nsiblings = \"0-1\"\n[[smt]]\nsiblings = \"1\"\n{PHYSICS}");
    assert_field(&t, "smt[1].siblings");
    let t = format!("{nodes}[[smt]]\nsiblings = \"7\"\n{PHYSICS}");
    assert_field(&t, "smt[0].siblings");
    let t = format!("{nodes}[[smt]]\nsiblings = \"\"\n{PHYSICS}");
    assert_field(&t, "smt[0].siblings");
    let t = format!("{nodes}[[smt]]\nsiblings = \"0-1\"\n[[llc]]\ncpus = \"0\"\n{PHYSICS}");
    assert_field(&t, "llc[0].cpus");
    let t = format!("{nodes}[[llc]]\ncpus = \"1-2\"\n{PHYSICS}");
    assert_field(&t, "llc[0].cpus");
    let t = nodes.replace(
        "cpus = \"0-1\"\nmem_gib = 1\n",
        "cpus = \"0-1\"\nmem_gib = 1\nthreads_per_core = 2\n",
    );
    let t = format!("{t}[[smt]]\nsiblings = \"0-1\"\n{PHYSICS}");
    assert_field(&t, "smt[0].siblings");
}

#[test]
fn to_toml_writes_the_explicit_form() {
    let m = ok(&uniform(
        "packages = 2\nnodes_per_package = 1\ncores_per_node = 4\nthreads_per_core = 2",
    ));
    let text = to_toml(&m);
    assert!(
        text.contains(
            "[[nodes]]\ncpus = \"0-3,8-11\"\nmem_gib = 2.0\npackage = 0\nthreads_per_core = 2\n"
        ),
        "{text}"
    );
    assert!(!text.contains("[topology]"));
    assert!(text.contains("core_gbps = 8.0"));
}

/// Four single-node packages with no link_gbps: the links must come from
/// `[[links]]`.
fn four_packages(links: &str) -> String {
    uniform("packages = 4\nnodes_per_package = 1\ncores_per_node = 1\nthreads_per_core = 1")
        .replace("link_gbps = 30\n", "")
        + links
}

const RING: &str = "\n[[links]]\npackages = [0, 1]\ngbps = 10\n\n[[links]]\npackages = [1, 2]\ncount = 2\ngbps = 10\n\n[[links]]\npackages = [2, 3]\ngbps = 10\n\n[[links]]\npackages = [3, 0]\ngbps = 10\n";

#[test]
fn a_spec_without_links_gets_one_link_per_package_pair_and_says_so() {
    let m = ok(&uniform(
        "packages = 3\nnodes_per_package = 2\ncores_per_node = 1\nthreads_per_core = 1",
    ));
    use numalab_topology::LinkEnds;
    let pkg: Vec<_> = m
        .links
        .iter()
        .filter(|l| matches!(l.ends, LinkEnds::Packages(..)))
        .collect();
    assert_eq!(pkg.len(), 3);
    assert!(pkg.iter().all(|l| l.count == 1 && l.gbps == 30.0));
    // One on-die link per node pair in each of the 3 packages.
    assert_eq!(m.links.len(), 3 + 3);
    assert!(m.sources.iter().any(|s| s.contains("fully connected")));
    assert!(m
        .sources
        .iter()
        .any(|s| s.contains("coherence.message_bytes defaulted")));
    assert_eq!(m.coherence, numalab_topology::Coherence::default());
}

#[test]
fn links_parse_round_trip_and_derive_link_gbps_from_the_widest_bundle() {
    let m = ok(&four_packages(&format!(
        "{RING}\n[coherence]\nmessage_bytes = 8\nsnoop = \"broadcast\"\n"
    )));
    assert_eq!(m.links.len(), 4);
    assert_eq!(m.links[1].bundle_gbps(), 20.0);
    // [3, 0] is stored low id first.
    assert_eq!(m.links[3].ends, numalab_topology::LinkEnds::Packages(0, 3));
    assert_eq!(m.bandwidth.link_gbps, 20.0);
    assert!(m
        .sources
        .iter()
        .any(|s| s.contains("widest package link bundle")));
    assert_eq!(m.coherence.snoop, numalab_topology::Snoop::Broadcast);
    assert_eq!(m.coherence.message_bytes, 8.0);
    let back = to_toml(&m);
    assert!(
        back.contains("[[links]]\npackages = [1, 2]\ncount = 2\ngbps = 10.0"),
        "{back}"
    );
}

#[test]
fn on_die_links_join_nodes_of_one_package() {
    let t =
        uniform("packages = 1\nnodes_per_package = 3\ncores_per_node = 1\nthreads_per_core = 1")
            + "\n[[links]]\nnodes = [0, 1]\ngbps = 50\n\n[[links]]\nnodes = [2, 1]\ngbps = 50\n";
    let m = ok(&t);
    assert_eq!(m.links.len(), 2);
    // A node left out of the chain is refused.
    let bad =
        uniform("packages = 1\nnodes_per_package = 3\ncores_per_node = 1\nthreads_per_core = 1")
            + "\n[[links]]\nnodes = [0, 1]\ngbps = 50\n";
    let (f, msg) = field_err(&bad);
    assert_eq!(f, "links");
    assert!(
        msg.contains("node 2 of package 0 is not reachable"),
        "{msg}"
    );
}

#[test]
fn inconsistent_link_specs_are_refused_naming_the_entry() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "[[links]]\npackages = [0, 1]\nnodes = [0, 1]\ngbps = 10\n",
            "links[0]",
            "not both",
        ),
        ("[[links]]\ngbps = 10\n", "links[0]", "missing"),
        (
            "[[links]]\npackages = [0, 7]\ngbps = 10\n",
            "links[0].packages",
            "does not exist",
        ),
        (
            "[[links]]\npackages = [2, 2]\ngbps = 10\n",
            "links[0].packages",
            "to itself",
        ),
        (
            "[[links]]\npackages = [0, 1, 2]\ngbps = 10\n",
            "links[0].packages",
            "two package ids",
        ),
        (
            "[[links]]\nnodes = [0, 1]\ngbps = 10\n",
            "links[0].nodes",
            "different packages",
        ),
        ("[[links]]\npackages = [0, 1]\n", "links[0].gbps", "missing"),
        (
            "[[links]]\npackages = [0, 1]\ngbps = 1e9\n",
            "links[0].gbps",
            "plausible range",
        ),
        (
            "[[links]]\npackages = [0, 1]\ncount = 0\ngbps = 10\n",
            "links[0].count",
            "at least 1",
        ),
        (
            "[[links]]\npackages = [0, 1]\ngbps = 10\n[[links]]\npackages = [1, 0]\ngbps = 10\n",
            "links[1]",
            "same ends as links[0]",
        ),
        (
            "[[links]]\npackages = [0, 1]\ngbps = 10\n[[links]]\npackages = [2, 3]\ngbps = 10\n",
            "links",
            "package 2 is not reachable",
        ),
    ];
    for (links, field, words) in cases {
        let t = four_packages(&format!("\n{links}"));
        let (f, msg) = field_err(&t);
        assert_eq!(&f, field, "{msg}\n{t}");
        assert!(msg.contains(words), "{f}: {msg}");
    }
    for (coh, field, words) in [
        ("snoop = \"mesi\"", "coherence.snoop", "not a snoop mode"),
        (
            "message_bytes = 100",
            "coherence.message_bytes",
            "plausible range",
        ),
        ("message_bytes = nan", "coherence.message_bytes", "NaN"),
    ] {
        let (f, msg) = field_err(&four_packages(&format!("{RING}\n[coherence]\n{coh}\n")));
        assert_eq!(f, field, "{msg}");
        assert!(msg.contains(words), "{f}: {msg}");
    }
    // No link_gbps and no package links: one error saying what to give.
    let (f, msg) = field_err(&four_packages(""));
    assert_eq!(f, "bandwidth.link_gbps");
    assert!(msg.contains("[[links]]"), "{msg}");
}
