//! The language features, one by one, and the example of docs/workloads.md.

use crate::common::{big, small, GIB};
use numalab_topology::CpuSet;
use numalab_workload::spec::{parse, resolve, Num, PhaseSpec, RangeSpec};
use numalab_workload::{Distribution, PageSize, Phase, PolicyMode, PolicySpec, Score, Workload};

fn go(text: &str) -> Workload {
    let s = parse(text, "test").unwrap_or_else(|e| panic!("{e}"));
    resolve(&s, &small(), 5, 1.0).unwrap_or_else(|e| panic!("{e}"))
}

/// The example in docs/workloads.md, verbatim.
const EXAMPLE: &str = r#"
name = "example"
description = "A batch job per half of the machine and a small service, in two cgroups"
score = "throughput"
duration = "2s"

[[cgroup]]
path = "/batch"
cpuset_mems = "all"

[[cgroup]]
path = "/svc"
cpuset_cpus = "nodes:nnodes / 2 .. nnodes"

[[process]]
name = "batch"
count = 2                         # batch.0 and batch.1
cgroup = "/batch"

[[process.region]]
name = "buf"
size = "256MiB * (p + 1)"         # 256 MiB and 512 MiB
thp = true

[[process.thread]]
name = "w"
count = "cpus_per_node"
affinity = "node:p % nnodes"
policy = { mode = "bind", nodes = "p % nnodes" }
phases = [
    { stream = "buf", slice = ["i", "n"] },           # first touch of my slice
    { set_mempolicy = "default" },
    { stream = "buf", slice = ["(i + 1) % n", "n"], passes = 20, write = false },
]

[[process]]
name = "svc"
cgroup = "/svc"

[[process.region]]
name = "table"
size = "64MiB"
policy = { mode = "interleave", nodes = "all" }

[[process.thread]]
name = "worker"
count = "ncpus / 2"

[[process.thread.phases]]
repeat = 100_000
request = true
body = [
    { random = "table", accesses = 8, distribution = { zipf = 0.99 }, mlp = 2 },
    { compute = "20us" },
    { sleep = "100us" },
]
"#;

#[test]
fn the_documented_example_resolves_as_described() {
    let docs = include_str!("../../../../docs/workloads.md");
    assert!(
        docs.contains(EXAMPLE.trim()),
        "docs/workloads.md example drifted from the test"
    );
    let w = go(EXAMPLE);
    assert_eq!(w.score, Score::Throughput);
    assert_eq!(w.duration_ns, Some(2_000_000_000));
    assert_eq!(w.cgroups.len(), 2);
    assert_eq!(w.cgroups[0].path, "/batch");
    assert_eq!(w.cgroups[0].cpuset_mems, Some(vec![0, 1]));
    assert_eq!(
        w.cgroups[1].cpuset_cpus,
        Some(CpuSet::parse_list("2-3").unwrap())
    );
    let names: Vec<&str> = w.processes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["batch.0", "batch.1", "svc"]);
    for (p, k) in w.processes[..2].iter().zip(0..) {
        assert_eq!(p.cgroup, "/batch");
        assert_eq!(p.regions[0].bytes, (256 << 20) * (k + 1));
        assert_eq!(p.regions[0].page_size, PageSize::Thp2M);
        assert_eq!(p.threads.len(), 2);
        let t1 = &p.threads[1];
        assert_eq!(t1.name, "w.1");
        assert_eq!(t1.affinity, Some(small().nodes[k as usize].cpus.clone()));
        let half = p.regions[0].bytes / 2;
        assert_eq!(
            t1.phases[0],
            Phase::Stream {
                region: 0,
                offset: half,
                len: half,
                passes: 1,
                write: true
            }
        );
        assert_eq!(t1.phases[1], Phase::SetMempolicy(None));
        assert_eq!(
            t1.phases[2],
            Phase::Stream {
                region: 0,
                offset: 0,
                len: half,
                passes: 20,
                write: false
            }
        );
    }
    let svc = &w.processes[2];
    assert_eq!(
        svc.regions[0].policy,
        Some(PolicySpec {
            mode: PolicyMode::Interleave,
            nodes: vec![0, 1],
            numa_balancing: false
        })
    );
    assert_eq!(svc.threads.len(), 2);
    let Phase::Repeat {
        times,
        request,
        body,
    } = &svc.threads[0].phases[0]
    else {
        panic!()
    };
    assert_eq!((*times, *request), (100_000, true));
    assert_eq!(
        body[0],
        Phase::Random {
            region: 0,
            offset: 0,
            len: 64 << 20,
            accesses: 8,
            distribution: Distribution::Zipf { s: 0.99 },
            write_fraction: 0.0,
            mlp: 2.0
        }
    );
    assert_eq!(body[1], Phase::Compute { ns: 20_000 });
    assert_eq!(body[2], Phase::Sleep { ns: 100_000 });
}

#[test]
fn integers_and_expressions_are_interchangeable() {
    let a = parse("[[process]]\nname = \"a\"\ncount = 2\n[[process.region]]\nname = \"r\"\nsize = 1048576\n[[process.thread]]\nname = \"t\"\nphases = [{ compute = 1000 }]\n", "x").unwrap();
    let b = parse("[[process]]\nname = \"a\"\ncount = \"1 + 1\"\n[[process.region]]\nname = \"r\"\nsize = \"1MiB\"\n[[process.thread]]\nname = \"t\"\nphases = [{ compute = \"1us\" }]\n", "x").unwrap();
    assert_eq!(a.processes[0].count, Num::Int(2));
    assert_eq!(b.processes[0].count, Num::Expr("1 + 1".into()));
    assert_eq!(
        resolve(&a, &small(), 0, 1.0).unwrap(),
        resolve(&b, &small(), 0, 1.0).unwrap()
    );
}

#[test]
fn variables_describe_machine_process_and_thread() {
    let text = r#"
[[process]]
name = "a"
count = 3
[[process.region]]
name = "r"
size = "4KiB * (np * 100 + p)"
[[process.thread]]
name = "t"
count = "ncores - 1"
phases = [{ compute = "ncpus * 1000 + nnodes * 100 + cpus_per_node * 10 + seed" },
          { sleep = "i * 10 + n" }]
"#;
    let s = parse(text, "x").unwrap();
    let w = resolve(&s, &big(), 9, 1.0).unwrap();
    assert_eq!(w.processes[2].regions[0].bytes, 4096 * 302);
    let ts = &w.processes[0].threads;
    assert_eq!(ts.len(), 159, "ncores = 160 on the 2-way SMT machine");
    assert_eq!(
        ts[3].phases[0],
        Phase::Compute {
            ns: 320_000 + 400 + 800 + 9
        }
    );
    assert_eq!(ts[3].phases[1], Phase::Sleep { ns: 30 + 159 });
}

#[test]
fn sets_policies_and_their_defaults() {
    let w = go(r#"
[[process]]
name = "a"
[[process.region]]
name = "r"
size = "1MiB"
policy = "local"
[[process.thread]]
name = "t"
affinity = "all"
policy = { mode = "preferred", nodes = 1 }
phases = [
    { set_affinity = "0, node:1" },
    { set_affinity = "cpu:ncpus - 1, cpus:0..1" },
    { set_affinity = "all" },
    { set_mempolicy = { mode = "default", numa_balancing = true } },
    { set_mempolicy = { mode = "interleave", nodes = "all", numa_balancing = true } },
    { set_mempolicy = { mode = "preferred-many", nodes = "0-1" } },
    { set_mempolicy = { mode = "bind", nodes = "1, 0, 1" } },
    { set_mempolicy = { mode = "default" } },
]
"#);
    let p = &w.processes[0];
    let pol = |mode, nodes: &[usize], nb| {
        Some(PolicySpec {
            mode,
            nodes: nodes.to_vec(),
            numa_balancing: nb,
        })
    };
    assert_eq!(p.regions[0].policy, pol(PolicyMode::Local, &[], false));
    let t = &p.threads[0];
    assert_eq!(t.affinity, None, "\"all\" is no restriction");
    assert_eq!(t.policy, pol(PolicyMode::Preferred, &[1], false));
    assert_eq!(
        t.phases[0],
        Phase::SetAffinity(Some(CpuSet::parse_list("0,2-3").unwrap()))
    );
    assert_eq!(
        t.phases[1],
        Phase::SetAffinity(Some(CpuSet::parse_list("0,3").unwrap()))
    );
    assert_eq!(t.phases[2], Phase::SetAffinity(None));
    // Legality (MPOL_F_NUMA_BALANCING only with bind/preferred-many) is the
    // kernel model's business: the spec passes the request through.
    assert_eq!(
        t.phases[3],
        Phase::SetMempolicy(pol(PolicyMode::Default, &[], true))
    );
    assert_eq!(
        t.phases[4],
        Phase::SetMempolicy(pol(PolicyMode::Interleave, &[0, 1], true))
    );
    assert_eq!(
        t.phases[5],
        Phase::SetMempolicy(pol(PolicyMode::PreferredMany, &[0, 1], false))
    );
    assert_eq!(
        t.phases[6],
        Phase::SetMempolicy(pol(PolicyMode::Bind, &[0, 1], false))
    );
    assert_eq!(t.phases[7], Phase::SetMempolicy(None));
}

#[test]
fn cgroups_get_their_parents_first() {
    let w = go(r#"
[[cgroup]]
path = "/a/b/c"
files = { "cpuset.mems" = 1 }
[[cgroup]]
path = "/a"
cpuset_cpus = "all"
[[process]]
name = "x"
cgroup = "/a/b"
[[process.thread]]
name = "t"
"#);
    let paths: Vec<&str> = w.cgroups.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["/a", "/a/b", "/a/b/c"]);
    assert_eq!(w.cgroups[0].cpuset_cpus, Some(CpuSet::first_n(4)));
    assert_eq!(w.cgroups[1].files.len(), 0);
    // A declared file in `files` acts as its key.
    assert_eq!(w.cgroups[2].cpuset_mems, Some(vec![1]));
    assert!(w.cgroups[2].files.is_empty());
    assert_eq!(w.processes[0].cgroup, "/a/b");
}

#[test]
fn for_loops_unroll_and_repeat_stays_a_loop() {
    let w = go(r#"
[[process]]
name = "a"
[[process.region]]
name = "r"
size = "1MiB"
[[process.thread]]
name = "t"
phases = [
    { for = "k", range = [1, 3], body = [
        { for = "j", range = [0, "k"], body = [{ compute = "k * 10 + j" }] } ] },
    { for = "k", range = [3, 3], body = [{ compute = 1 }] },
    { repeat = 4, body = [{ stream = "r", offset = "256KiB", len = "4KiB" }] },
]
"#);
    let ph = &w.processes[0].threads[0].phases;
    let ns: Vec<u64> = ph[..3]
        .iter()
        .map(|p| match p {
            Phase::Compute { ns } => *ns,
            _ => panic!(),
        })
        .collect();
    assert_eq!(ns, [10, 20, 21]);
    assert_eq!(
        ph[3],
        Phase::Repeat {
            times: 4,
            request: false,
            body: vec![Phase::Stream {
                region: 0,
                offset: 256 << 10,
                len: 4096,
                passes: 1,
                write: true
            }]
        }
    );
}

#[test]
fn the_checked_spec_keeps_what_was_written() {
    let s = parse(
        "[[process]]\nname = \"a\"\n[[process.region]]\nname = \"r\"\nsize = \"1GiB\"\n[[process.thread]]\nname = \"t\"\n\
         phases = [{ random = \"r\", accesses = \"n\", slice = [\"i\", 4], distribution = { hot = 0.2, probability = 0.8 } }]\n",
        "x",
    )
    .unwrap();
    assert_eq!(s.name, "x");
    assert_eq!(
        s.processes[0].threads[0].phases[0],
        PhaseSpec::Random {
            region: "r".into(),
            accesses: Num::Expr("n".into()),
            distribution: Distribution::Hot {
                fraction: 0.2,
                probability: 0.8
            },
            write_fraction: 0.0,
            mlp: 1.0,
            range: RangeSpec::Slice {
                index: Num::Expr("i".into()),
                of: Num::Int(4)
            },
        }
    );
    let w = resolve(&s, &small(), 0, 1.0).unwrap();
    let Phase::Random { offset, len, .. } = w.processes[0].threads[0].phases[0] else {
        panic!()
    };
    assert_eq!((offset, len), (0, GIB / 4));
}

#[test]
fn test_names_default_to_the_name_and_bind_forms_share_their_base_test() {
    let spec = numalab_workload::spec::parse(
        "name = \"my-load\"\n[[process]]\nname = \"p\"\n[[process.thread]]\nname = \"t\"\nphases = [ { compute = \"1ms\" } ]\n",
        "t",
    )
    .unwrap();
    assert_eq!(spec.test, "MY_LOAD");
    for (preset, test) in [
        ("numa01-hard-bind", "NUMA01"),
        ("numa01-threadlocal-inverse-bind", "NUMA01_THREADLOCAL"),
        ("numa02-smt", "NUMA02_SMT"),
    ] {
        assert_eq!(numalab_workload::presets::load(preset).unwrap().test, test);
    }
}

/// Proposal 4's additions: the per-task control (thread key and phase) and
/// a cgroup file written by a phase during the run.
#[test]
fn numa_balancing_control_and_cgroup_writes() {
    let w = go(r#"
[[cgroup]]
path = "/a"
files = { "cpu.numa_load_balance" = 1 }

[[cgroup]]
path = "/a/b"

[[process]]
name = "p"
cgroup = "/a/b"

[[process.thread]]
name = "t"
numa_balancing = "disabled"
phases = [
    { compute = "1ms" },
    { cgroup_write = "/a/b:cpu.numa_load_balance=1" },
    { repeat = 2, body = [ { set_numa_balancing = "default" } ] },
]
"#);
    let a = w.cgroups.iter().find(|c| c.path == "/a").unwrap();
    assert_eq!(a.files["cpu.numa_load_balance"], "1");
    let ph = &w.processes[0].threads[0].phases;
    assert_eq!(
        ph[0],
        Phase::SetNumaBalancing(numalab_workload::NumaBalancingCtl::Disabled),
        "the thread key is the thread's first act"
    );
    assert_eq!(
        ph[2],
        Phase::CgroupWrite {
            cgroup: "/a/b".into(),
            write: numalab_workload::CgroupFileWrite::NumaLoadBalance(true),
        }
    );
    let Phase::Repeat { body, .. } = &ph[3] else {
        panic!("{:?}", ph[3]);
    };
    assert_eq!(
        body[0],
        Phase::SetNumaBalancing(numalab_workload::NumaBalancingCtl::Default)
    );
}

#[test]
fn bad_numa_balancing_controls_and_cgroup_writes_are_refused() {
    let err = |phases: &str, key: &str| {
        let t = format!(
            "[[cgroup]]\npath = \"/a\"\n[[process]]\nname = \"p\"\n[[process.thread]]\nname = \"t\"\n{key}\nphases = [ {phases} ]\n"
        );
        parse(&t, "t.toml").unwrap_err().to_string()
    };
    let e = err("", "numa_balancing = \"on\"");
    assert!(
        e.contains("numa_balancing") && e.contains("not one of default, enabled, disabled"),
        "{e}"
    );
    let e = err("{ set_numa_balancing = \"yes\" }", "");
    assert!(e.contains("set_numa_balancing"), "{e}");
    let e = err("{ cgroup_write = \"/a:cpuset.cpus=0\" }", "");
    assert!(
        e.contains("set before the run starts") && e.contains("cpu.numa_load_balance"),
        "{e}"
    );
    let e = err("{ cgroup_write = \"/nope:cpu.numa_load_balance=1\" }", "");
    assert!(e.contains("'/nope' is not declared"), "{e}");
    let e = err("{ cgroup_write = \"/a:cpu.numa_load_balance=2\" }", "");
    assert!(e.contains("not 0 or 1"), "{e}");
    let e = err("{ cgroup_write = \"/a:cpu.numa_load_balance\" }", "");
    assert!(e.contains("CGROUP:FILE=VALUE"), "{e}");
    // The root may be written, and is not declared.
    let t = "[[process]]\nname = \"p\"\n[[process.thread]]\nname = \"t\"\nphases = [ { cgroup_write = \"/:cpu.numa_load_balance=0\" } ]\n";
    parse(t, "t.toml").unwrap();
}
