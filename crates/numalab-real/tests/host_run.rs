//! Real runs on this host: refusals (always run; they change nothing) and
//! one tiny real run exercising every phase type (`#[ignore]`: it needs
//! root and a writable cgroup v2 hierarchy; run it with
//! `cargo test -p numalab-real --test host_run -- --ignored`).

use numalab_real::{host_machine, real_run, RealError, RealOptions};
use numalab_record::RunKind;
use numalab_topology::CpuSet;
use numalab_workload::model::{
    Cgroup, Distribution, PageSize, Phase, PolicyMode, PolicySpec, Process, Region, Score, Thread,
    Workload,
};
use std::sync::Mutex;
use std::time::Duration;

/// The two tests share this process's cgroup name: never run them at once.
static SERIAL: Mutex<()> = Mutex::new(());

fn pol(mode: PolicyMode, nodes: &[usize]) -> Option<PolicySpec> {
    Some(PolicySpec {
        mode,
        nodes: nodes.to_vec(),
        numa_balancing: false,
    })
}

fn one(c: usize) -> Option<CpuSet> {
    Some(std::iter::once(c).collect())
}

/// Two processes, nested cgroups, every phase type, node-0 policies only
/// (so it fits any host).
fn mixed() -> Workload {
    const MIB: u64 = 1 << 20;
    Workload {
        name: "mixed".into(),
        test: "MIXED".into(),
        description: "every phase type, small".into(),
        cgroups: vec![
            Cgroup {
                path: "/a".into(),
                cpuset_cpus: None,
                cpuset_mems: None,
                files: Default::default(),
            },
            Cgroup {
                path: "/a/b".into(),
                cpuset_cpus: None,
                cpuset_mems: None,
                files: Default::default(),
            },
        ],
        processes: vec![
            Process {
                name: "p0".into(),
                cgroup: "/a/b".into(),
                regions: vec![
                    Region {
                        name: "bound".into(),
                        bytes: 4 * MIB,
                        page_size: PageSize::Base4K,
                        policy: pol(PolicyMode::Bind, &[0]),
                        runtime: false,
                        shared: false,
                        vma_bytes: None,
                    },
                    Region {
                        name: "thp".into(),
                        bytes: 4 * MIB,
                        page_size: PageSize::Thp2M,
                        policy: pol(PolicyMode::Interleave, &[0]),
                        runtime: false,
                        shared: false,
                        vma_bytes: None,
                    },
                ],
                threads: vec![
                    Thread {
                        name: "main".into(),
                        affinity: one(0),
                        policy: pol(PolicyMode::Preferred, &[0]),
                        start_after: vec![],
                        phases: vec![
                            Phase::Stream {
                                region: 0,
                                offset: 0,
                                len: 4 * MIB,
                                passes: 1,
                                write: true,
                            },
                            Phase::Random {
                                region: 1,
                                offset: 0,
                                len: 4 * MIB,
                                accesses: 20_000,
                                distribution: Distribution::Zipf { s: 1.1 },
                                write_fraction: 0.3,
                                mlp: 4.0,
                            },
                            Phase::Compute { ns: 20_000_000 },
                            Phase::Sleep { ns: 20_000_000 },
                            Phase::SetMempolicy(pol(PolicyMode::Local, &[])),
                            Phase::SetAffinity(None),
                            Phase::Repeat {
                                times: 3,
                                body: vec![Phase::Stream {
                                    region: 0,
                                    offset: MIB,
                                    len: 2 * MIB,
                                    passes: 1,
                                    write: false,
                                }],
                                request: true,
                            },
                        ],
                    },
                    Thread {
                        name: "after".into(),
                        affinity: None,
                        policy: None,
                        start_after: vec![0],
                        phases: vec![Phase::Random {
                            region: 0,
                            offset: 0,
                            len: 4 * MIB,
                            accesses: 10_000,
                            distribution: Distribution::Hot {
                                fraction: 0.1,
                                probability: 0.9,
                            },
                            write_fraction: 0.5,
                            mlp: 1.0,
                        }],
                    },
                ],
            },
            Process {
                name: "p1".into(),
                cgroup: "/".into(),
                regions: vec![Region {
                    name: "r".into(),
                    bytes: 2 * MIB,
                    page_size: PageSize::Base4K,
                    policy: None,
                    runtime: false,
                    shared: false,
                    vma_bytes: None,
                }],
                threads: vec![Thread {
                    name: "w".into(),
                    affinity: None,
                    policy: None,
                    start_after: vec![],
                    phases: vec![
                        Phase::Stream {
                            region: 0,
                            offset: 0,
                            len: 2 * MIB,
                            passes: 2,
                            write: true,
                        },
                        Phase::Sleep { ns: 50_000_000 },
                    ],
                }],
            },
        ],
        score: Score::Throughput,
        duration_ns: None,
    }
}

fn numalab_cgroups() -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let Some(m) = numalab_real::cgroup::find_cgroup2_mount(&mounts) else {
        return vec![];
    };
    std::fs::read_dir(m)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("numalab-{}", std::process::id())))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn refusals_change_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = host_machine().unwrap();
    let mut w = mixed();
    w.processes[0].regions[0].bytes = 1 << 50;
    match real_run(&w, &m, &RealOptions::default()) {
        Err(RealError::Refused(e)) => assert!(e.contains("MemAvailable"), "{e}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let mut w = mixed();
    w.processes[0].threads[0].affinity = one(4095);
    match real_run(&w, &m, &RealOptions::default()) {
        Err(RealError::Refused(e)) => assert!(e.contains("CPU 4095"), "{e}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let mut w = mixed();
    w.processes[0].regions[0].policy = pol(PolicyMode::Bind, &[63]);
    match real_run(&w, &m, &RealOptions::default()) {
        Err(RealError::Refused(e)) => assert!(e.contains("node 63"), "{e}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let opts = RealOptions {
        sets: vec![("kernel.numa_balancing".into(), "1".into())],
        ..RealOptions::default()
    };
    match real_run(&mixed(), &m, &opts) {
        Err(RealError::Refused(e)) => assert!(e.contains("--allow-sysctl"), "{e}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let opts = RealOptions {
        sets: vec![("kernel.no_such_knob_numalab".into(), "1".into())],
        allow_sysctl: true,
        ..RealOptions::default()
    };
    match real_run(&mixed(), &m, &opts) {
        Err(e @ RealError::Refused(_)) => assert_eq!(e.exit_code(), 2),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(numalab_cgroups().is_empty());
}

#[test]
#[ignore = "needs root and a writable cgroup v2 hierarchy; runs a real workload for about a second"]
fn tiny_real_run_on_this_host() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = host_machine().unwrap();
    let opts = RealOptions {
        interval: Duration::from_millis(100),
        seed: 42,
        ..RealOptions::default()
    };
    let rec = real_run(&mixed(), &m, &opts).unwrap();
    assert_eq!(rec.kind, RunKind::Real);
    assert!(rec.kernel.is_some());
    assert_eq!(rec.seed, 42);
    assert_eq!(rec.processes.len(), 2);
    assert_eq!(rec.tasks.len(), 3);
    // Tasks are named PROCESS/THREAD, as the model names them.
    let names: Vec<&str> = rec.tasks.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"p0/main") && names.contains(&"p0/after") && names.contains(&"p1/w"),
        "{names:?}"
    );
    let main = rec.task("p0", "main").unwrap();
    let after = rec.task("p0", "after").unwrap();
    assert!(after.start_s >= main.exit_s, "start_after is honoured");
    assert!(
        main.user_s + main.sys_s >= 0.02,
        "compute phase burnt CPU: {main:?}"
    );
    assert!(main.bytes_by_node.iter().sum::<u64>() > 0);
    let score = rec.score.as_ref().unwrap();
    assert!(score.value > 0.0, "three requests were counted");
    assert_eq!(
        score.value,
        numalab_record::Score::throughput(3, rec.elapsed_s).value,
        "the record crate's rounding"
    );
    for cg in ["/", "/a", "/a/b"] {
        assert!(rec.cgroups.contains_key(cg), "cgroup {cg} in the record");
    }
    assert_eq!(rec.cgroups["/a/b"].nr_tasks, 2);
    assert_eq!(rec.cgroups["/"].nr_tasks, 3);
    assert!(rec.vmstat.contains_key("numa_hit"));
    let ts = rec.timeseries.as_ref().unwrap();
    assert!(!ts.rows.is_empty());
    assert!(ts.rows.iter().all(|r| r.len() == ts.columns.len()));
    // Region bytes were seen on node 0 by the end.
    let col = ts
        .columns
        .iter()
        .position(|c| c == "region:p0/bound:node0_bytes")
        .unwrap();
    assert!(ts.rows.iter().any(|r| r[col] >= (4 << 20) as f64));
    // Round trip through the JSON format.
    let back = numalab_record::RunRecord::from_json(&rec.to_json(), "test").unwrap();
    assert_eq!(back.tasks.len(), 3);
    assert!(numalab_cgroups().is_empty(), "cgroups removed");
}
