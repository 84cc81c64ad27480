//! The pinned first-touch smoke test's deterministic checks, used by the
//! CI's QEMU stage (`numalab validate --check`) and the host integration
//! test. The workload itself is `crates/numalab/validate/pinned-4k.toml`.
//!
//! One process in cgroup `/pinned`: an `init` thread pinned to the first
//! CPU of node 0 first-touches one chunk per node (all pages land on node
//! 0, 4 KiB pages, THP off by `MADV_NOHUGEPAGE`); when it exits, one
//! `worker.N` thread per node, pinned to that node's first CPU, writes its
//! own chunk over and over until the deadline. With NUMA balancing on, the
//! kernel must notice the remote accesses (PTE updates, hint faults) and
//! migrate each remote chunk to its worker's node.
//!
//! [`check_pinned`] asserts only what does not depend on timing: the
//! counters moved, they are consistent with each other, the memcg's counts
//! do not exceed the system's, each remote chunk ends at least half local,
//! and each worker ran where it was pinned. How fast placement converged
//! is reported, not asserted. Left out: unpinned placement (it differs
//! from run to run) and anything about speed (emulated nodes have the same
//! latency).

use numalab_record::{Column, RunKind, RunRecord};
use numalab_topology::{Bandwidth, Cpu, CpuSet, Machine, Node};

/// A small symmetric machine: `nodes` nodes of `cpus_per_node` CPUs and
/// `mem_per_node` bytes, SLIT `remote` between different nodes. Physics
/// constants are placeholders (a guest under emulation has no NUMA
/// penalty to measure).
pub fn small_machine(
    nodes: usize,
    cpus_per_node: usize,
    mem_per_node: u64,
    remote: u32,
) -> Machine {
    let mut cpus = Vec::new();
    let mut ns = Vec::new();
    for n in 0..nodes {
        let mut set = CpuSet::new();
        for k in 0..cpus_per_node {
            let id = n * cpus_per_node + k;
            set.insert(id);
            cpus.push(Cpu {
                id,
                node: n,
                package: n,
                core: id,
                llc: n,
                smt: 0,
            });
        }
        ns.push(Node {
            id: n,
            package: n,
            cpus: set,
            mem_bytes: mem_per_node,
        });
    }
    let distance: Vec<Vec<u32>> = (0..nodes)
        .map(|a| {
            (0..nodes)
                .map(|b| if a == b { 10 } else { remote })
                .collect()
        })
        .collect();
    let latency_ns = distance
        .iter()
        .map(|r| r.iter().map(|&d| 10.0 * d as f64).collect())
        .collect();
    Machine {
        name: format!("small-{nodes}n{cpus_per_node}c"),
        description: format!(
            "{nodes} nodes x {cpus_per_node} CPUs x {} MiB, SLIT {remote}",
            mem_per_node >> 20
        ),
        links: numalab_topology::default_links(
            &ns.iter().map(|n| n.package).collect::<Vec<_>>(),
            20.0,
            40.0,
        ),
        coherence: Default::default(),
        cpus,
        nodes: ns,
        distance,
        latency_ns,
        bandwidth: Bandwidth {
            node_gbps: vec![20.0; nodes],
            link_gbps: 20.0,
            same_package_link_gbps: 40.0,
            core_gbps: 10.0,
            smt_throughput: 1.0,
        },
        sources: vec!["UNMEASURED placeholder constants (numalab-real smoke machine)".to_string()],
        kernel: Default::default(),
    }
}

/// The name of the pinned workload's process (its regions are `chunkN`,
/// its threads `init` and `worker.N`).
pub const PROCESS: &str = "pft";

/// The CI guest: 4 nodes x 1 CPU x 1 GiB, SLIT 20.
pub fn ci_machine() -> Machine {
    small_machine(4, 1, 1 << 30, 20)
}

/// One assertion of the smoke test.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// Short name.
    pub name: String,
    /// Passed?
    pub ok: bool,
    /// What was seen.
    pub detail: String,
}

fn chk(name: &str, ok: bool, detail: String) -> Check {
    Check {
        name: name.to_string(),
        ok,
        detail,
    }
}

/// Local share of each chunk in one time-series row: `(node, share)` per
/// chunk, `None` when the row has no data for it (a value of -1, a node
/// missing, or no bytes at all).
fn chunk_local_shares(rec: &RunRecord, m: &Machine, row: &[f64]) -> Vec<Option<f64>> {
    let nn = m.nr_nodes();
    // bytes[chunk][node], from the `region:pft/chunkI:nodeN_bytes` columns.
    let mut bytes: Vec<Vec<Option<f64>>> = vec![vec![None; nn]; nn];
    if let Some(ts) = rec.timeseries.as_ref() {
        for (c, v) in ts.columns.iter().zip(row.iter()) {
            if let Some(Column::RegionBytes {
                process: PROCESS,
                region,
                node,
            }) = Column::parse(c)
            {
                let chunk = region.strip_prefix("chunk").and_then(|i| i.parse().ok());
                if let Some(slot) = chunk
                    .and_then(|i: usize| bytes.get_mut(i))
                    .and_then(|b| b.get_mut(node))
                {
                    *slot = Some(*v);
                }
            }
        }
    }
    bytes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let vals: Vec<f64> = b.iter().copied().collect::<Option<_>>()?;
            let total: f64 = vals.iter().sum();
            if vals.iter().any(|&v| v < 0.0) || total <= 0.0 {
                return None;
            }
            Some(vals[i] / total)
        })
        .collect()
}

/// The deterministic checks of a pinned first-touch run on a multi-node
/// machine `m` (the one the workload was built for): counters non-zero and
/// consistent, every remote chunk at least `min_local` local at the end,
/// workers where they were pinned.
pub fn check_pinned(rec: &RunRecord, m: &Machine, min_local: f64) -> Vec<Check> {
    let mut out = Vec::new();
    out.push(chk(
        "real run",
        rec.kind == RunKind::Real,
        format!("kind {:?}, kernel {:?}", rec.kind, rec.kernel),
    ));
    let pte = rec.vm("numa_pte_updates");
    let faults = rec.vm("numa_hint_faults");
    let local = rec.vm("numa_hint_faults_local");
    let migrated = rec.vm("numa_pages_migrated");
    out.push(chk("numa_pte_updates > 0", pte > 0, format!("{pte}")));
    out.push(chk("numa_hint_faults > 0", faults > 0, format!("{faults}")));
    out.push(chk(
        "numa_pages_migrated > 0",
        migrated > 0,
        format!("{migrated}"),
    ));
    out.push(chk(
        "pages_migrated <= hint_faults <= pte_updates (4 KiB pages)",
        migrated <= faults && faults <= pte,
        format!("{migrated} <= {faults} <= {pte}"),
    ));
    out.push(chk(
        "hint_faults_local <= hint_faults",
        local <= faults,
        format!("{local} <= {faults}"),
    ));
    match rec.cgroups.get("/pinned") {
        Some(cg) if !cg.memory_stat.is_empty() => {
            let cm = cg
                .memory_stat
                .get("numa_pages_migrated")
                .copied()
                .unwrap_or(0);
            let cf = cg.memory_stat.get("numa_hint_faults").copied().unwrap_or(0);
            out.push(chk(
                "memory.stat /pinned: 0 < numa_pages_migrated <= vmstat's",
                cm > 0 && cm <= migrated,
                format!("{cm} (vmstat {migrated})"),
            ));
            out.push(chk(
                "memory.stat /pinned: numa_hint_faults <= vmstat's",
                cf <= faults && cf > 0,
                format!("{cf} (vmstat {faults})"),
            ));
        }
        _ => out.push(chk(
            "memory.stat /pinned present",
            false,
            "no memory.stat figures".into(),
        )),
    }
    // Placement.
    let rows: &[Vec<f64>] = rec.timeseries.as_ref().map_or(&[], |t| &t.rows);
    let remote: Vec<usize> = (1..m.nr_nodes()).collect();
    let last = rows.iter().rev().find(|r| {
        chunk_local_shares(rec, m, r)
            .iter()
            .skip(1)
            .all(|s| s.is_some())
    });
    match last {
        Some(row) => {
            let shares = chunk_local_shares(rec, m, row);
            for &i in &remote {
                let s = shares[i].unwrap_or(0.0);
                out.push(chk(
                    &format!(
                        "chunk{i} >= {:.0}% on node {i} at the end",
                        min_local * 100.0
                    ),
                    s >= min_local,
                    format!("{:.1}% local at t={:.1}s", s * 100.0, row[0]),
                ));
            }
        }
        None => out.push(chk(
            "placement sampled",
            false,
            "no time-series row with chunk placement".into(),
        )),
    }
    let converged = rows.iter().find(|r| {
        let s = chunk_local_shares(rec, m, r);
        remote.iter().all(|&i| s[i].is_some_and(|v| v >= min_local))
    });
    out.push(chk(
        "placement converged (informational bound: the run)",
        converged.is_some(),
        converged.map_or("never".to_string(), |r| {
            format!(
                "all remote chunks >= {:.0}% local at t={:.1}s",
                min_local * 100.0,
                r[0]
            )
        }),
    ));
    // Workers ran where pinned.
    for (i, n) in m.nodes.iter().enumerate() {
        let want = n.cpus.first().unwrap_or(0);
        let t = rec.task(PROCESS, &format!("worker.{i}"));
        out.push(match t {
            Some(t) => chk(
                &format!("worker.{i} ran on CPU {want}"),
                t.last_cpu == want,
                format!("last_cpu {}", t.last_cpu),
            ),
            None => chk(
                &format!("worker.{i} reported"),
                false,
                "no task figures".into(),
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::{CgroupFigures, TaskFigures, TimeSeries, FORMAT_NAME, FORMAT_VERSION};
    use std::collections::BTreeMap;

    fn record(m: &Machine, final_local: f64) -> RunRecord {
        let mut columns = vec!["t_s".to_string()];
        for i in 0..4 {
            for n in 0..4 {
                let region = format!("chunk{i}");
                columns.push(
                    Column::RegionBytes {
                        process: PROCESS,
                        region: &region,
                        node: n,
                    }
                    .name(),
                );
            }
        }
        let row = |t: f64, local: f64| {
            let mut r = vec![t];
            for i in 0..4 {
                for n in 0..4 {
                    let v = if i == 0 {
                        if n == 0 {
                            100.0
                        } else {
                            0.0
                        }
                    } else if n == i {
                        100.0 * local
                    } else if n == 0 {
                        100.0 * (1.0 - local)
                    } else {
                        0.0
                    };
                    r.push(v);
                }
            }
            r
        };
        let mut cg = CgroupFigures::default();
        cg.memory_stat.insert("numa_pages_migrated".into(), 40000);
        cg.memory_stat.insert("numa_hint_faults".into(), 60000);
        RunRecord {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            kind: RunKind::Real,
            numalab_version: "0".into(),
            kernel: Some("6.12".into()),
            machine: serde_json::Value::Null,
            workload: serde_json::Value::Null,
            settings: BTreeMap::new(),
            seed: 0,
            scale: 1.0,
            elapsed_s: 20.0,
            user_s: 0.0,
            sys_s: 0.0,
            score: None,
            vmstat: [
                ("numa_pte_updates", 70000u64),
                ("numa_hint_faults", 65000),
                ("numa_hint_faults_local", 10000),
                ("numa_pages_migrated", 49152),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            cgroups: [("/pinned".to_string(), cg)].into_iter().collect(),
            processes: vec![],
            tasks: (0..4)
                .map(|i| TaskFigures {
                    name: numalab_record::task_name(PROCESS, &format!("worker.{i}")),
                    last_cpu: m.nodes[i].cpus.first().unwrap(),
                    ..Default::default()
                })
                .collect(),
            nodes: vec![],
            lab: numalab_record::Lab::new(),
            timeseries: Some(TimeSeries {
                interval_s: 1.0,
                columns,
                rows: vec![row(1.0, 0.0), row(10.0, 0.7), row(20.0, final_local)],
            }),
        }
    }

    #[test]
    fn a_converged_run_passes_every_check() {
        let m = ci_machine();
        let checks = check_pinned(&record(&m, 1.0), &m, 0.5);
        let failed: Vec<_> = checks.iter().filter(|c| !c.ok).collect();
        assert!(failed.is_empty(), "{failed:#?}");
        let conv = checks
            .iter()
            .find(|c| c.name.starts_with("placement converged"))
            .unwrap();
        assert!(conv.detail.contains("t=10.0s"), "{}", conv.detail);
    }

    #[test]
    fn an_unmigrated_chunk_and_inconsistent_counters_fail() {
        let m = ci_machine();
        let mut r = record(&m, 0.2);
        r.vmstat.insert("numa_pages_migrated".into(), 70001);
        let checks = check_pinned(&r, &m, 0.5);
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.name.as_str())
            .collect();
        assert!(
            failed.iter().any(|n| n.starts_with("chunk1 >=")),
            "{failed:?}"
        );
        assert!(
            failed.iter().any(|n| n.starts_with("pages_migrated <=")),
            "{failed:?}"
        );
    }
}
