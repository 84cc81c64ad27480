//! Scenario tests of NUMA balancing: whole workloads on tiny-2n, checked
//! through the Run record and the trace.

use crate::common::local_share;
use numalab_record::RunRecord;
use numalab_sim::kernel::TraceEvent;
use numalab_sim::{Knobs, RunOptions, Sim};

fn run_spec(
    machine: &str,
    spec: &numalab_workload::spec::WorkloadSpec,
    scale: f64,
    sets: &[&str],
    trace: bool,
) -> (RunRecord, Vec<TraceEvent>) {
    let m = numalab_topology::presets::load(machine).expect("machine");
    let w = numalab_workload::spec::resolve(spec, &m, 1, scale).expect("resolve");
    let k = Knobs::from_sets(sets).expect("knobs");
    let opts = RunOptions {
        seed: 1,
        scale,
        trace,
        check_every: 25,
    };
    Sim::new(m, w, k, opts)
        .expect("sim")
        .run_with_trace(&mut |_| {})
        .expect("run")
}

fn run_preset(machine: &str, w: &str, scale: f64, sets: &[&str]) -> (RunRecord, Vec<TraceEvent>) {
    let spec = numalab_workload::presets::load(w).expect("workload");
    run_spec(machine, &spec, scale, sets, true)
}

fn vm(r: &RunRecord, name: &str) -> u64 {
    r.vmstat.get(name).copied().unwrap_or(0)
}

#[test]
fn numa01_threadlocal_memory_follows_its_threads_and_balancing_off_leaves_it() {
    let (off, _) = run_preset(
        "tiny-2n",
        "numa01-threadlocal",
        0.1,
        &["kernel.numa_balancing=0"],
    );
    let (on, trace) = run_preset(
        "tiny-2n",
        "numa01-threadlocal",
        0.1,
        &["numalab.sample_interval_ms=100"],
    );
    // Off: nothing scanned, nothing faulted, memory stays misplaced.
    for c in [
        "numa_pte_updates",
        "numa_hint_faults",
        "numa_pages_migrated",
    ] {
        assert_eq!(vm(&off, c), 0, "{c} with balancing off");
    }
    // On: pages migrate, locality and time improve.
    assert!(vm(&on, "numa_pages_migrated") > 10_000, "{:?}", on.vmstat);
    assert_eq!(vm(&on, "numa_pages_migrated"), vm(&on, "pgmigrate_success"));
    assert!(
        local_share(&on) > local_share(&off) + 0.2,
        "{} vs {}",
        local_share(&on),
        local_share(&off)
    );
    assert!(
        on.elapsed_s < off.elapsed_s * 0.9,
        "{} vs {}",
        on.elapsed_s,
        off.elapsed_s
    );
    assert!(on.sys_s > off.sys_s, "balancing costs system time");
    assert!(trace.iter().any(|e| e.name == "mm_migrate_pages"));
    // Memory and tasks end up together: each process's threads sit on
    // the node that holds most of its memory.
    for p in &on.processes {
        let home = (0..p.pages_by_node.len())
            .max_by_key(|&n| p.pages_by_node[n])
            .unwrap();
        assert!(
            p.pages_by_node[home] * 10 >= p.pages_by_node.iter().sum::<u64>() * 9,
            "{p:?}"
        );
        for t in on.tasks.iter().filter(|t| t.tgid == p.pid) {
            assert_eq!(
                t.last_node, home,
                "{} ends on node {} but its memory is on {home}",
                t.name, t.last_node
            );
            let numa = t.numa.as_ref().expect("numa figures");
            assert!(numa.preferred_nid == -1 || numa.preferred_nid == home as i64);
        }
    }
    // The share of local hinting faults rises over time: the last sample
    // interval with hinting faults has a larger local share than the
    // first (per interval: the running totals are dominated by the first
    // interval's burst of faults).
    let ts = on.timeseries.as_ref().expect("time series");
    let col = |n: &str| ts.columns.iter().position(|c| c == n).unwrap();
    let (hf, hl) = (col("numa_hint_faults"), col("numa_hint_faults_local"));
    let mut prev = (0.0, 0.0);
    let mut shares = Vec::new();
    for r in &ts.rows {
        let d = (r[hf] - prev.0, r[hl] - prev.1);
        prev = (r[hf], r[hl]);
        if d.0 > 0.0 {
            shares.push(d.1 / d.0);
        }
    }
    assert!(shares.len() >= 2, "{:?}", ts.rows);
    let (first, last) = (shares[0], shares[shares.len() - 1]);
    assert!(
        last > first,
        "local fault share {first} -> {last}: {shares:?}"
    );
}

#[test]
fn threads_move_to_memory_they_may_not_migrate() {
    // Memory bound to node 1 with MPOL_F_NUMA_BALANCING: faults from
    // node 0 cannot move it (node 0 is outside the mask) but make node 1
    // preferred, so the threads on node 0 are moved there.
    let toml = r#"
name = "bound-memory"
description = "two threads streaming memory bound to node 1"
score = "elapsed"
[[process]]
name = "p"
[[process.region]]
name = "buf"
size = "256MiB"
policy = { mode = "bind", nodes = "1", numa_balancing = true }
[[process.thread]]
name = "t"
count = 2
phases = [
{ stream = "buf", slice = ["i", "n"], passes = 400 },
]
"#;
    let spec = numalab_workload::spec::parse(toml, "test").expect("parse");
    let (r, trace) = run_spec("tiny-2n", &spec, 1.0, &[], true);
    assert_eq!(r.processes[0].pages_by_node[0], 0);
    assert_eq!(vm(&r, "numa_pages_migrated"), 0);
    assert!(vm(&r, "numa_hint_faults") > 0);
    for t in &r.tasks {
        assert_eq!(t.last_node, 1, "{} stayed on node {}", t.name, t.last_node);
        assert_eq!(t.numa.as_ref().unwrap().preferred_nid, 1);
    }
    // Without balancing both threads stay on node 0, where fork put them
    // (on a quiet machine: a kernel thread queued on node 0 can make the
    // load balancer even the nodes out).
    let off = run_spec(
        "tiny-2n",
        &spec,
        1.0,
        &["kernel.numa_balancing=0", "numalab.background=0"],
        false,
    )
    .0;
    assert!(off.tasks.iter().all(|t| t.last_node == 0));
    let moves = trace.iter().filter(|e| e.name == "sched_move_numa").count();
    assert_eq!(moves, 2, "one sched_move_numa per thread");
    // Each move counts numa_task_migrated, in vmstat and in memory.stat.
    assert_eq!(vm(&r, "numa_task_migrated"), moves as u64);
    let root = &r.cgroups["/"];
    assert_eq!(root.memory_stat["numa_task_migrated"], moves as u64);
    assert!(
        r.elapsed_s < off.elapsed_s * 0.8,
        "{} vs {}",
        r.elapsed_s,
        off.elapsed_s
    );
}

/// The opt-in `numalab_fluid` event: one per tick with every resource's
/// load over capacity. NUMA01_THREADLOCAL's first phase binds all memory
/// to node 1 (seed 1), so in its first tick only node 1's controller and
/// the link toward it carry bytes; no resource is ever over capacity; a
/// trace that does not name the event has none of it.
#[test]
fn numalab_fluid_reports_each_resource_load_when_named() {
    let m = numalab_topology::presets::load("tiny-2n").expect("machine");
    let spec = numalab_workload::presets::load("numa01-threadlocal").expect("workload");
    let run = |events: Option<Vec<String>>| {
        let w = numalab_workload::spec::resolve(&spec, &m, 1, 0.05).expect("resolve");
        let k = Knobs::from_sets(&["kernel.numa_balancing=0"]).expect("knobs");
        let opts = RunOptions {
            seed: 1,
            scale: 0.05,
            trace: true,
            check_every: 25,
        };
        let filter = numalab_sim::kernel::TraceFilter {
            events,
            ..Default::default()
        };
        Sim::new(m.clone(), w, k, opts)
            .expect("sim")
            .with_trace_filter(filter)
            .run_with_trace(&mut |_| {})
            .expect("run")
            .1
    };
    // (Thread creation is traced before the filter is set.)
    let fluid: Vec<TraceEvent> = run(Some(vec!["numalab_fluid".into()]))
        .into_iter()
        .filter(|e| e.name == "numalab_fluid")
        .collect();
    assert!(fluid.len() > 10, "one event per tick: {}", fluid.len());
    let field = |e: &TraceEvent, key: &str| -> f64 {
        e.fields
            .split(' ')
            .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} in {}", e.fields))
            .parse()
            .expect("number")
    };
    let first = fluid
        .iter()
        .find(|e| field(e, "mem1") > 0.0)
        .expect("a loaded tick");
    assert_eq!(field(first, "mem0"), 0.0, "{}", first.fields);
    assert!(field(first, "link-pkg0->pkg1") > 0.0, "{}", first.fields);
    assert!(field(first, "lat1") >= 1.0 && field(first, "lat0") == 1.0);
    for e in &fluid {
        for kv in e.fields.split(' ').filter(|kv| !kv.starts_with("lat")) {
            let u: f64 = kv
                .split('=')
                .nth(1)
                .expect("value")
                .parse()
                .expect("number");
            assert!((0.0..=1.0005).contains(&u), "{kv} in {}", e.fields);
        }
    }
    let default = run(None);
    assert!(!default.is_empty() && default.iter().all(|e| e.name != "numalab_fluid"));
}
