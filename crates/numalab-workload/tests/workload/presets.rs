//! Every preset parses and resolves, with the counts, slices and bindings
//! the autonumabench sources give, on a 2-node 4-CPU and a 4-node 320-CPU
//! machine.

use crate::common::{big, machine, small, GIB};
use numalab_topology::{CpuSet, Machine};
use numalab_workload::presets::{list, load, text};
use numalab_workload::spec::resolve;
use numalab_workload::{Phase, PolicyMode, PolicySpec, Process, Score, Workload};

fn run(name: &str, m: &Machine, seed: u64) -> Workload {
    let spec = load(name).unwrap_or_else(|e| panic!("{e}"));
    resolve(&spec, m, seed, 1.0).unwrap_or_else(|e| panic!("{e}"))
}

fn bind(nodes: &[usize]) -> Option<PolicySpec> {
    Some(PolicySpec {
        mode: PolicyMode::Bind,
        nodes: nodes.to_vec(),
        numa_balancing: false,
    })
}

fn node_cpus(m: &Machine, nodes: impl IntoIterator<Item = usize>) -> CpuSet {
    nodes
        .into_iter()
        .fold(CpuSet::new(), |s, n| s.or(&m.nodes[n].cpus))
}

/// (offset, len) of every stream phase at `idx` of the named threads.
fn streams(p: &Process, group: &str, idx: usize) -> Vec<(u64, u64)> {
    p.threads
        .iter()
        .filter(|t| t.name == group || t.name.starts_with(&format!("{group}.")))
        .map(|t| match &t.phases[idx] {
            Phase::Stream { offset, len, .. } => (*offset, *len),
            other => panic!("{}: phase {idx} is {other:?}", t.name),
        })
        .collect()
}

/// The ranges are disjoint, in thread order, and cover `[0, bytes)`.
fn assert_tiles(ranges: &[(u64, u64)], bytes: u64) {
    let mut next = 0;
    for &(o, l) in ranges {
        assert_eq!(o, next, "ranges {ranges:?} leave a gap or overlap");
        assert!(l > 0);
        assert_eq!(o % 4096, 0);
        next = o + l;
    }
    assert_eq!(next, bytes);
}

const ALL: &[&str] = &[
    "numa01",
    "numa01-threadlocal",
    "numa02",
    "numa02-smt",
    "numa01-hard-bind",
    "numa01-inverse-bind",
    "numa01-threadlocal-hard-bind",
    "numa01-threadlocal-inverse-bind",
    "numa02-hard-bind",
    "numa02-inverse-bind",
    "numa02-smt-hard-bind",
    "numa02-smt-inverse-bind",
    "oltp",
    "specjbb",
    "specjbb-multi",
    "specjbb-stw",
    "mixed-cgroups",
    "numa01-threadlocal-interleave",
    "numa01-threadlocal-interleave-plain",
    "interleave-swap-example",
    "interleave-swap-example-plain",
    "interleave-stride-aligned",
    "interleave-stride-aligned-plain",
    "interleave-uniform",
    "interleave-uniform-plain",
    "pmbench",
    "pmbench-busy",
];

#[test]
fn every_preset_is_listed_parses_and_resolves_on_both_machines() {
    let listed: Vec<&str> = list().iter().map(|(n, _)| *n).collect();
    assert_eq!(listed, ALL);
    for (name, desc) in list() {
        assert!(
            !desc.is_empty() && !desc.contains("broken"),
            "{name}: {desc}"
        );
        assert!(text(name).is_some());
        for m in [small(), big()] {
            let w = run(name, &m, 0);
            assert_eq!(w.name, name);
            assert_eq!(w.description, desc);
            let threads: usize = w.processes.iter().map(|p| p.threads.len()).sum();
            assert!(threads > 0);
        }
    }
}

#[test]
fn numa01_family_has_two_processes_of_ncpus_half_threads_sharing_3gib() {
    for name in ALL
        .iter()
        .filter(|n| n.starts_with("numa01") && !n.contains("interleave"))
    {
        for (m, per) in [(small(), 2), (big(), 160)] {
            let w = run(name, &m, 0);
            assert_eq!(w.score, Score::Elapsed);
            assert_eq!(w.duration_ns, None);
            let names: Vec<&str> = w.processes.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(names, ["numa01.0", "numa01.1"], "{name}");
            for p in &w.processes {
                assert_eq!(p.threads.len(), per, "{name}");
                assert_eq!(p.regions.len(), 1);
                assert_eq!(p.regions[0].bytes, 3 * GIB);
                assert_eq!(p.cgroup, "/");
                for t in &p.threads {
                    assert!(t.start_after.is_empty());
                }
            }
        }
    }
}

#[test]
fn numa01_binds_every_thread_to_node_seed_parity_for_the_first_touch_only() {
    for name in ["numa01", "numa01-threadlocal"] {
        for seed in [0u64, 1, 2, 7] {
            let w = run(name, &big(), seed);
            let node = (seed % 2) as usize;
            for p in &w.processes {
                for t in &p.threads {
                    assert_eq!(t.affinity, None);
                    assert_eq!(t.policy, None);
                    assert_eq!(t.phases.len(), 4);
                    assert_eq!(t.phases[0], Phase::SetMempolicy(bind(&[node])));
                    assert_eq!(
                        t.phases[1],
                        Phase::Stream {
                            region: 0,
                            offset: 0,
                            len: 3 * GIB,
                            passes: 1,
                            write: true
                        }
                    );
                    assert_eq!(t.phases[2], Phase::SetMempolicy(None));
                }
            }
        }
    }
}

#[test]
fn numa01_writes_the_whole_buffer_50_times_threadlocal_its_slice_1000_times() {
    for m in [small(), big()] {
        let w = run("numa01", &m, 0);
        for p in &w.processes {
            for t in &p.threads {
                assert_eq!(
                    t.phases[3],
                    Phase::Stream {
                        region: 0,
                        offset: 0,
                        len: 3 * GIB,
                        passes: 50,
                        write: true
                    }
                );
            }
        }
        for name in [
            "numa01-threadlocal",
            "numa01-threadlocal-hard-bind",
            "numa01-threadlocal-inverse-bind",
        ] {
            let w = run(name, &m, 0);
            for p in &w.processes {
                let last = p.threads[0].phases.len() - 1;
                assert_tiles(&streams(p, "thread", last), 3 * GIB);
                for t in &p.threads {
                    let Phase::Stream { passes, write, .. } = t.phases[last] else {
                        panic!()
                    };
                    assert_eq!((passes, write), (1000, true));
                }
            }
        }
    }
}

#[test]
fn numa01_hard_bind_puts_the_child_on_the_first_half_and_the_parent_on_the_second() {
    let m = big();
    for name in ["numa01-hard-bind", "numa01-threadlocal-hard-bind"] {
        let w = run(name, &m, 1);
        for (p, half) in w.processes.iter().zip([[0, 1], [2, 3]]) {
            for t in &p.threads {
                assert_eq!(t.affinity, Some(node_cpus(&m, half)), "{name} {}", p.name);
                assert_eq!(t.policy, bind(&half));
                // No NO_BIND_FORCE_SAME_NODE in this build: no rebinding.
                assert!(t.phases.iter().all(|ph| matches!(ph, Phase::Stream { .. })));
                assert_eq!(
                    t.phases[0],
                    Phase::Stream {
                        region: 0,
                        offset: 0,
                        len: 3 * GIB,
                        passes: 1,
                        write: true
                    }
                );
            }
        }
    }
    let m = small();
    let w = run("numa01-hard-bind", &m, 0);
    assert_eq!(
        w.processes[0].threads[0].affinity,
        Some(CpuSet::parse_list("0-1").unwrap())
    );
    assert_eq!(
        w.processes[1].threads[1].affinity,
        Some(CpuSet::parse_list("2-3").unwrap())
    );
    assert_eq!(w.processes[0].threads[0].policy, bind(&[0]));
    assert_eq!(w.processes[1].threads[0].policy, bind(&[1]));
}

#[test]
fn numa01_inverse_bind_reproduces_the_source_bug_only_the_child_is_swapped() {
    for (m, first, second) in [(big(), vec![0, 1], vec![2, 3]), (small(), vec![0], vec![1])] {
        for name in ["numa01-inverse-bind", "numa01-threadlocal-inverse-bind"] {
            let w = run(name, &m, 0);
            let (child, parent) = (&w.processes[0], &w.processes[1]);
            for t in &child.threads {
                assert_eq!(t.affinity, Some(node_cpus(&m, first.clone())));
                assert_eq!(
                    t.policy,
                    bind(&second),
                    "child memory swapped to the second half"
                );
            }
            for t in &parent.threads {
                assert_eq!(t.affinity, Some(node_cpus(&m, second.clone())));
                assert_eq!(t.policy, bind(&second), "parent keeps its own second half");
            }
        }
    }
}

#[test]
fn numa02_family_counts_main_then_workers_on_disjoint_covering_slices() {
    for (name, big_n, small_n) in [
        ("numa02", 320, 4),
        ("numa02-hard-bind", 320, 4),
        ("numa02-inverse-bind", 320, 4),
        ("numa02-smt", 160, 2),
        ("numa02-smt-hard-bind", 160, 2),
        ("numa02-smt-inverse-bind", 160, 2),
    ] {
        for (m, n) in [(big(), big_n), (small(), small_n)] {
            let w = run(name, &m, 0);
            assert_eq!(w.processes.len(), 1);
            let p = &w.processes[0];
            assert_eq!(p.name, "numa02");
            assert_eq!(p.regions[0].bytes, GIB);
            assert_eq!(p.threads.len(), 1 + n, "{name}");
            assert_eq!(p.threads[0].name, "main");
            assert!(p.threads[0].start_after.is_empty());
            for (i, t) in p.threads[1..].iter().enumerate() {
                assert_eq!(t.name, format!("thread.{i}"));
                assert_eq!(t.start_after, vec![0], "workers wait for main");
                assert_eq!(t.phases.len(), 1);
                let Phase::Stream { passes, write, .. } = t.phases[0] else {
                    panic!()
                };
                assert_eq!((passes, write), (800, true));
            }
            assert_tiles(&streams(p, "thread", 0), GIB);
        }
    }
}

#[test]
fn numa02_main_zeroes_everything_without_binding() {
    for name in ["numa02", "numa02-smt"] {
        let w = run(name, &big(), 0);
        let main = &w.processes[0].threads[0];
        assert_eq!(main.affinity, None);
        assert_eq!(
            main.phases,
            vec![Phase::Stream {
                region: 0,
                offset: 0,
                len: GIB,
                passes: 1,
                write: true
            }]
        );
        for t in &w.processes[0].threads[1..] {
            assert_eq!((&t.affinity, &t.policy), (&None, &None));
        }
    }
}

fn check_numa02_bound(name: &str, m: &Machine, n: usize, inverse: bool) {
    let w = run(name, m, 0);
    let p = &w.processes[0];
    let nn = m.nr_nodes();
    // main: for each node k, affinity + MPOL_BIND to k, then zero the k-th 1/nnodes.
    let main = &p.threads[0];
    assert_eq!(main.phases.len(), 3 * nn);
    let mut prefault = Vec::new();
    for k in 0..nn {
        assert_eq!(
            main.phases[3 * k],
            Phase::SetAffinity(Some(m.nodes[k].cpus.clone()))
        );
        assert_eq!(main.phases[3 * k + 1], Phase::SetMempolicy(bind(&[k])));
        let Phase::Stream {
            offset,
            len,
            passes: 1,
            write: true,
            ..
        } = main.phases[3 * k + 2]
        else {
            panic!("{:?}", main.phases[3 * k + 2])
        };
        prefault.push((offset, len));
    }
    assert_tiles(&prefault, GIB);
    for (i, t) in p.threads[1..].iter().enumerate() {
        let node = if inverse {
            (n - 1 - i) / (n / nn)
        } else {
            i / (n / nn)
        };
        assert_eq!(
            t.affinity,
            Some(m.nodes[node].cpus.clone()),
            "{name} thread {i}"
        );
        assert_eq!(t.policy, bind(&[node]));
        // Hard bind: the worker's slice was prefaulted on its own node;
        // inverse: on another one.
        let Phase::Stream { offset, .. } = t.phases[0] else {
            panic!()
        };
        let home = prefault
            .iter()
            .position(|&(o, l)| offset >= o && offset < o + l)
            .unwrap();
        if inverse {
            assert_eq!(home, nn - 1 - node, "{name} thread {i}");
        } else {
            assert_eq!(home, node, "{name} thread {i}");
        }
    }
}

#[test]
fn numa02_hard_and_inverse_bind_map_threads_to_nodes_as_the_source_does() {
    check_numa02_bound("numa02-hard-bind", &big(), 320, false);
    check_numa02_bound("numa02-inverse-bind", &big(), 320, true);
    check_numa02_bound("numa02-smt-hard-bind", &big(), 160, false);
    check_numa02_bound("numa02-smt-inverse-bind", &big(), 160, true);
    check_numa02_bound("numa02-hard-bind", &small(), 4, false);
    check_numa02_bound("numa02-inverse-bind", &small(), 4, true);
    check_numa02_bound("numa02-smt-hard-bind", &small(), 2, false);
    check_numa02_bound("numa02-smt-inverse-bind", &small(), 2, true);
    // Spot values on the 320-CPU machine: 80 threads per node.
    let w = run("numa02-inverse-bind", &big(), 0);
    let t = &w.processes[0].threads;
    assert_eq!(t[1].policy, bind(&[3]));
    assert_eq!(t[80].policy, bind(&[3]));
    assert_eq!(t[81].policy, bind(&[2]));
    assert_eq!(t[320].policy, bind(&[0]));
}

#[test]
fn node_sets_follow_the_machine_not_cpu_numbering() {
    // CPU c on node c % 4, as with interleaved enumeration.
    let m = machine(4, 80, 2, 256, true);
    check_numa02_bound("numa02-hard-bind", &m, 320, false);
    let w = run("numa01-hard-bind", &m, 0);
    let a = w.processes[0].threads[0].affinity.clone().unwrap();
    assert_eq!(a.len(), 160);
    assert!(a.iter().all(|c| c % 4 < 2));
}

#[test]
fn oltp_is_a_throughput_service_with_a_partition_per_cpu() {
    for m in [small(), big()] {
        let n = m.nr_cpus();
        let w = run("oltp", &m, 0);
        assert_eq!(w.score, Score::Throughput);
        assert_eq!(w.duration_ns, Some(3_000_000_000));
        let p = &w.processes[0];
        let names: Vec<&str> = p.regions.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["items", "shared", "data"]);
        assert_eq!(p.regions[0].bytes, 100_000 * 128);
        assert_eq!(p.regions[2].bytes, n as u64 * 30_000 * 1024);
        assert_eq!(p.threads.len(), 1 + n);
        assert_tiles(&streams(p, "worker", 0), p.regions[2].bytes);
        for t in &p.threads[1..] {
            assert_eq!(t.start_after, vec![0]);
            let Phase::Repeat {
                times,
                body,
                request,
            } = &t.phases[1]
            else {
                panic!()
            };
            assert!(*request && *times >= 100_000);
            let mut accesses = 0;
            let mut cross = 0;
            for ph in body {
                match ph {
                    Phase::Random {
                        region: 2,
                        len,
                        accesses: a,
                        mlp,
                        ..
                    } => {
                        accesses += a;
                        if *len == p.regions[2].bytes {
                            cross += a;
                        }
                        assert!((1.0..=2.0).contains(mlp));
                    }
                    Phase::Random { mlp, .. } => assert!((1.0..=2.0).contains(mlp)),
                    Phase::Compute { ns } => assert!((10_000..100_000).contains(ns)),
                    Phase::Sleep { ns } => assert!((10_000..1_000_000).contains(ns)),
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(
                cross * 10,
                accesses,
                "10% of partition accesses are cross-partition"
            );
        }
    }
}

#[test]
fn load_takes_a_preset_then_a_file_else_says_it_is_neither() {
    let dir = std::env::temp_dir().join(format!("numalab-workload-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mine.toml");
    std::fs::write(
        &path,
        "[[process]]\nname = \"a\"\n[[process.thread]]\nname = \"t\"\nphases = [{ compute = \"1ms\" }]\n",
    )
    .unwrap();
    let spec = load(path.to_str().unwrap()).unwrap();
    assert_eq!(spec.name, "mine", "name defaults to the file stem");
    assert_eq!(spec.origin, path.to_str().unwrap());
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[[process]]\nname = 3\n").unwrap();
    let e = load(bad.to_str().unwrap()).unwrap_err().to_string();
    assert!(
        e.contains("bad.toml") && e.contains("malformed TOML"),
        "{e}"
    );
    let e = load("no-such-workload").unwrap_err().to_string();
    assert!(
        e.contains("no-such-workload") && e.contains("not a preset") && e.contains("not a file"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn resolve_is_deterministic() {
    for name in ALL {
        let spec = load(name).unwrap();
        for scale in [1.0, 0.05] {
            let a = resolve(&spec, &big(), 42, scale).unwrap();
            let b = resolve(&spec, &big(), 42, scale).unwrap();
            assert_eq!(a, b);
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
    }
}

/// Proposal 3's NUMA01_THREADLOCAL: the strided buffer's two page sets,
/// interleaved over the even and the odd nodes, flagged only in the
/// flagged preset; each thread's repeated slice is of the even set.
#[test]
fn numa01_threadlocal_interleave_is_the_even_and_odd_page_sets() {
    let m = big();
    assert_eq!(m.nr_nodes(), 4);
    for (name, flag) in [
        ("numa01-threadlocal-interleave", true),
        ("numa01-threadlocal-interleave-plain", false),
    ] {
        let w = run(name, &m, 0);
        for p in &w.processes {
            let r: Vec<(&str, Option<&PolicySpec>)> = p
                .regions
                .iter()
                .map(|r| (r.name.as_str(), r.policy.as_ref()))
                .collect();
            assert_eq!(r.len(), 2);
            for ((rname, pol), nodes) in r.iter().zip([[0, 2], [1, 3]]) {
                let pol = pol.unwrap_or_else(|| panic!("{name} {rname}"));
                assert_eq!(pol.mode, PolicyMode::Interleave);
                assert_eq!(pol.nodes, nodes, "{name} {rname}");
                assert_eq!(pol.numa_balancing, flag);
            }
            assert_eq!(p.regions[0].bytes + p.regions[1].bytes, 3 * GIB);
        }
    }
}

/// Threads of group `group` in process `p` (names are `group` or `group.K`).
/// Bytes of the first process's region `name`.
fn region_bytes(w: &Workload, name: &str) -> u64 {
    w.processes[0]
        .regions
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no region {name}"))
        .bytes
}

fn count_threads(p: &Process, group: &str) -> usize {
    p.threads
        .iter()
        .filter(|t| t.name == group || t.name.starts_with(&format!("{group}.")))
        .count()
}

#[test]
fn specjbb_params_set_warehouses_and_jvms_and_overrides_replace_them() {
    let m = big();
    let w = run("specjbb", &m, 0);
    assert_eq!(w.processes.len(), 1, "one JVM by default");
    let ncpus = m.nr_cpus();
    assert_eq!(count_threads(&w.processes[0], "warehouse"), ncpus);
    let wh = |w: &Workload| region_bytes(w, "warehouse");
    assert_eq!(wh(&w), (ncpus as u64 * 25) << 20);
    let w12 = run("specjbb:warehouses=12", &m, 0);
    assert_eq!(count_threads(&w12.processes[0], "warehouse"), 12);
    assert_eq!(wh(&w12), (12 * 25) << 20);
    let multi = run("specjbb-multi", &m, 0);
    assert_eq!(multi.processes.len(), m.nr_nodes(), "one JVM per node");
    for p in &multi.processes {
        assert_eq!(count_threads(p, "warehouse"), ncpus / m.nr_nodes());
        assert_eq!(count_threads(p, "gc"), 1);
    }
    // The warehouse threads' Java stacks: one 1 MiB mapping each, 4 KiB
    // pages (no THP); `stack_accesses=0` leaves them untouched.
    let stack = |w: &Workload| {
        let r = w.processes[0]
            .regions
            .iter()
            .find(|r| r.name == "stack")
            .expect("stack region");
        (r.bytes, r.page_size == numalab_workload::PageSize::Thp2M)
    };
    assert_eq!(stack(&w12), (12 << 20, false));
    assert_eq!(
        stack(&run("specjbb:warehouses=12,stack_kib=2048", &m, 0)).0,
        24 << 20
    );
    let two = run("specjbb-multi:jvms=2,warehouses=3", &m, 0);
    assert_eq!(two.processes.len(), 2);
    assert_eq!(count_threads(&two.processes[1], "warehouse"), 3);
    assert_eq!(two.score, Score::Throughput);
}

#[test]
fn pmbench_map_size_is_a_param_defaulting_to_16_gib() {
    let m = big();
    let map = |w: &Workload| region_bytes(w, "map");
    assert_eq!(map(&run("pmbench", &m, 0)), 16 << 30);
    let w = run("pmbench:size=64GiB", &m, 0);
    assert_eq!(map(&w), 64 << 30);
    // Only the map changes: the same 64 threads, one random phase each.
    assert_eq!(count_threads(&w.processes[0], "job"), 64);
}

#[test]
fn an_unknown_or_malformed_param_override_is_an_error_naming_it() {
    let e = load("specjbb:wharehouses=3").unwrap_err().to_string();
    assert!(
        e.contains("params.wharehouses") && e.contains("warehouses"),
        "{e}"
    );
    let e = load("specjbb:warehouses").unwrap_err().to_string();
    assert!(e.contains("NAME=VALUE"), "{e}");
    let e = load("specjbb:warehouses=3+").unwrap_err().to_string();
    assert!(e.contains("params.warehouses"), "{e}");
    // A preset without parameters says so.
    let e = load("numa01:x=1").unwrap_err().to_string();
    assert!(e.contains("none"), "{e}");
}

#[test]
fn params_may_not_shadow_a_builtin_and_see_earlier_params() {
    use numalab_workload::spec::parse;
    let body = "[[process]]\nname = \"p\"\n[[process.thread]]\nname = \"t\"\ncount = \"b\"\nphases = [ { compute = \"1us\" } ]\n";
    let bad = format!("[params]\nncpus = 3\n{body}");
    let e = parse(&bad, "x").unwrap_err().to_string();
    assert!(e.contains("params.ncpus"), "{e}");
    // Name order: `b` may use `a`.
    let ok = format!("[params]\na = \"nnodes * 2\"\nb = \"a + 1\"\n{body}");
    let spec = parse(&ok, "x").unwrap_or_else(|e| panic!("{e}"));
    let m = big();
    let w = resolve(&spec, &m, 0, 1.0).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.processes[0].threads.len(), m.nr_nodes() * 2 + 1);
}
