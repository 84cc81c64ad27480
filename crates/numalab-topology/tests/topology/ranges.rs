//! Plausible ranges of machine constants: every spec in the repository and
//! every import still loads, values outside a range are refused with one
//! error naming the field, the value and the range, and the table in
//! `docs/machines.md` is the one declared in `ranges::MACHINE_RANGES`.

use numalab_topology::import::from_numactl;
use numalab_topology::ranges::{range, MACHINE_RANGES};
use numalab_topology::spec::parse_machine;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.toml` file under `dir` (recursively) whose text satisfies `pick`.
fn toml_files(dir: &Path, pick: &dyn Fn(&str) -> bool, out: &mut Vec<(PathBuf, String)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if name != "target" && !name.starts_with('.') {
                toml_files(&p, pick, out);
            }
        } else if name.ends_with(".toml") {
            if let Ok(t) = std::fs::read_to_string(&p) {
                if pick(&t) {
                    out.push((p, t));
                }
            }
        }
    }
}

#[test]
fn every_machine_spec_in_the_repository_loads() {
    let mut specs = Vec::new();
    toml_files(
        &repo().join("crates"),
        &|t| t.lines().any(|l| l.trim() == "[bandwidth]"),
        &mut specs,
    );
    // The five presets and the QEMU guest at least.
    assert!(specs.len() >= 6, "{specs:?}");
    for (p, t) in &specs {
        parse_machine(t, &p.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn an_import_with_default_physics_loads() {
    let text = "available: 2 nodes (0-1)\nnode 0 cpus: 0 1\nnode 0 size: 1024 MB\nnode 0 free: 512 MB\nnode 1 cpus: 2 3\nnode 1 size: 1024 MB\nnode 1 free: 512 MB\nnode distances:\nnode   0   1\n  0:  10  21\n  1:  21  10\n";
    let spec = from_numactl(text).unwrap_or_else(|e| panic!("{e}"));
    parse_machine(&spec, "import").unwrap_or_else(|e| panic!("{e}\n{spec}"));
}

const BASE: &str = "
[topology]
packages = 2
nodes_per_package = 1
cores_per_node = 2
threads_per_core = 1

[memory]
per_node_gib = 1

[latency]
local_ns = 80
remote_ns = 140

[bandwidth]
node_gbps = 100
link_gbps = 30
";

/// The spec with `key = old` replaced by `key = new`; the one-line error.
fn refused(old: &str, new: &str) -> String {
    assert!(BASE.contains(old), "{old}");
    let text = BASE.replace(old, new);
    match parse_machine(&text, "foo.toml") {
        Ok(_) => panic!("accepted: {new}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_value_outside_its_range_is_one_clear_error() {
    assert_eq!(
        refused("node_gbps = 100", "node_gbps = 1e-300"),
        "machine spec foo.toml: field `bandwidth.node_gbps`: 1e-300 is outside the plausible range [0.1, 10000] GB/s"
    );
    let cases = [
        (
            "node_gbps = 100",
            "node_gbps = [100, 0.0000001]",
            "`bandwidth.node_gbps[1]`: 1e-7",
        ),
        (
            "link_gbps = 30",
            "link_gbps = 1e9",
            "`bandwidth.link_gbps`: 1e9 is outside",
        ),
        (
            "remote_ns = 140",
            "remote_ns = 1e7",
            "`latency.remote_ns`: 10000000 is outside",
        ),
        (
            "local_ns = 80",
            "local_ns = 1",
            "`latency.local_ns`: 1 is outside",
        ),
        (
            "per_node_gib = 1",
            "per_node_gib = 0.000001",
            "`memory.per_node_gib`: 1e-6",
        ),
        (
            "per_node_gib = 1",
            "per_node_gib = 1e6",
            "`memory.per_node_gib`: 1000000 is outside",
        ),
        (
            "threads_per_core = 1",
            "threads_per_core = 64",
            "`topology.threads_per_core`: 64 is outside the plausible range [1, 8] threads",
        ),
        (
            "nodes_per_package = 1",
            "nodes_per_package = 20",
            "`topology.nodes_per_package`: 20",
        ),
        (
            "cores_per_node = 2",
            "cores_per_node = 2000",
            "`topology.cores_per_node`: 2000",
        ),
        (
            "link_gbps = 30",
            "link_gbps = 30\nsmt_throughput = 100",
            "`bandwidth.smt_throughput`: 100",
        ),
        (
            "link_gbps = 30",
            "link_gbps = 30\ncore_gbps = 1e-6",
            "`bandwidth.core_gbps`: 1e-6",
        ),
        (
            "link_gbps = 30",
            "link_gbps = 30\nline_fill_buffers = 1000",
            "`bandwidth.line_fill_buffers`: 1000",
        ),
        (
            "link_gbps = 30",
            "link_gbps = 30\nsame_package_link_gbps = 0.01",
            "`bandwidth.same_package_link_gbps`: 0.01",
        ),
    ];
    for (old, new, want) in cases {
        let e = refused(old, new);
        assert!(e.contains(want), "{new}: {e}");
        assert!(e.contains("plausible range"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // SLIT entries keep Linux's bounds.
    let e = refused(
        "[latency]",
        "[distance]\nmatrix = [[10, 255], [21, 10]]\n[latency]",
    );
    assert!(
        e.contains("`distance.matrix[0][1]`: 255 is outside the plausible range [11, 254] SLIT"),
        "{e}"
    );
}

#[test]
fn latency_scaled_beyond_the_range_is_refused() {
    // Latency beyond the remote anchor scales with SLIT: 80 + 244 * 9920 / 11.
    let text = "
[[nodes]]
cpus = \"0\"
mem_gib = 1
package = 0
[[nodes]]
cpus = \"1\"
mem_gib = 1
package = 1
[[nodes]]
cpus = \"\"
mem_gib = 1
package = 2
[distance]
matrix = [[10, 21, 254], [21, 10, 254], [254, 254, 10]]
[latency]
local_ns = 80
remote_ns = 10000
[bandwidth]
node_gbps = 100
link_gbps = 30
";
    let e = parse_machine(text, "far.toml").unwrap_err().to_string();
    assert!(
        e.contains("field `latency.matrix[a][b]`: latency[0][2] scaled with SLIT distance 254"),
        "{e}"
    );
}

#[test]
fn unusual_but_physical_machines_load() {
    // One socket, SMT8, HBM bandwidth, and a CXL memory-only node far away.
    let text = "
[[nodes]]
cpus = \"0-15\"
mem_gib = 64
package = 0
threads_per_core = 8
[[nodes]]
cpus = \"\"
mem_gib = 4096
package = 1
[distance]
matrix = [[10, 40], [40, 10]]
[latency]
local_ns = 110
remote_ns = 400
[bandwidth]
node_gbps = [5300, 60]
link_gbps = 64
";
    parse_machine(text, "hbm-cxl.toml").unwrap_or_else(|e| panic!("{e}"));
    // A 32-socket box.
    let big = BASE.replace("packages = 2", "packages = 32");
    parse_machine(&big, "big.toml").unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn ranges_are_sane_and_named_once() {
    for (i, r) in MACHINE_RANGES.iter().enumerate() {
        assert!(r.min > 0.0 && r.min < r.max, "{r:?}");
        assert!(!r.unit.is_empty() && !r.why.is_empty(), "{r:?}");
        assert!(
            MACHINE_RANGES[..i].iter().all(|o| o.field != r.field),
            "{} twice",
            r.field
        );
        assert_eq!(range(r.field), r);
    }
}

#[test]
fn docs_carry_the_declared_table() {
    // NUMALAB_BLESS=1 rewrites the table in place instead of failing.
    let bless = std::env::var_os("NUMALAB_BLESS").is_some();
    let path = repo().join("docs/machines.md");
    if let Err(e) = numalab_topology::ranges::check_doc_table(
        &path,
        "machine-ranges",
        "ranges::MACHINE_RANGES",
        MACHINE_RANGES,
        bless,
    ) {
        panic!("{e}");
    }
}
