//! What `numalab validate` measures in a record, model's or kernel's
//! alike: the threads it follows (those whose phases access one region),
//! the share of each one's memory on its node over time, when it first
//! reached [`LOCAL`], and the run cgroup's memory.stat. Shared by the
//! side-by-side table (validate.rs) and the gate (validate_band.rs), so
//! that neither imports the other. Left out: everything that prints.

use numalab_record::{Column, RunRecord};
use numalab_topology::Machine;
use numalab_workload::model::{Phase, Workload};

/// The share of a thread's memory on its node that counts as converged.
pub const LOCAL: f64 = 0.9;

/// A measured thread: process, thread and region names.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Process name.
    pub process: String,
    /// Thread name.
    pub thread: String,
    /// The region it works on.
    pub region: String,
}

fn regions_of(phases: &[Phase], out: &mut Vec<usize>) {
    for p in phases {
        match p {
            Phase::Stream { region, .. } | Phase::Random { region, .. }
                if !out.contains(region) =>
            {
                out.push(*region);
            }
            Phase::Repeat { body, .. } => regions_of(body, out),
            _ => {}
        }
    }
}

/// The threads whose phases access exactly one region.
pub fn measured_threads(w: &Workload) -> Vec<Measured> {
    let mut out = Vec::new();
    for p in &w.processes {
        for t in &p.threads {
            let mut r = Vec::new();
            regions_of(&t.phases, &mut r);
            if let [one] = r[..] {
                out.push(Measured {
                    process: p.name.clone(),
                    thread: t.name.clone(),
                    region: p.regions[one].name.clone(),
                });
            }
        }
    }
    out
}

/// Local share of each measured thread over time: `(t_s, share)` for every
/// sample at which the thread ran and its region had pages.
pub fn local_shares(rec: &RunRecord, m: &Machine, th: &[Measured]) -> Vec<Vec<(f64, f64)>> {
    let Some(ts) = rec.timeseries.as_ref() else {
        return vec![Vec::new(); th.len()];
    };
    let col = |name: &str| ts.columns.iter().position(|c| c == name);
    let nn = m.nr_nodes();
    th.iter()
        .map(|t| {
            let cpu = col(&Column::Cpu {
                process: &t.process,
                thread: &t.thread,
            }
            .name());
            let reg: Vec<Option<usize>> = (0..nn)
                .map(|node| {
                    col(&Column::RegionBytes {
                        process: &t.process,
                        region: &t.region,
                        node,
                    }
                    .name())
                })
                .collect();
            let (Some(cpu), true) = (cpu, reg.iter().all(Option::is_some)) else {
                return Vec::new();
            };
            ts.rows
                .iter()
                .filter_map(|row| {
                    let c = *row.get(cpu)?;
                    if c < 0.0 {
                        return None;
                    }
                    let node = m.cpus.get(c as usize)?.node;
                    let bytes: Vec<f64> = reg
                        .iter()
                        .map(|i| i.and_then(|i| row.get(i).copied()).unwrap_or(-1.0))
                        .collect();
                    let total: f64 = bytes.iter().sum();
                    if bytes.iter().any(|&b| b < 0.0) || total <= 0.0 {
                        return None;
                    }
                    Some((row[0], bytes[node] / total))
                })
                .collect()
        })
        .collect()
}

/// The node each measured thread ran on over time: `(t_s, node)` for
/// every sample at which the thread ran (the node of the CPU the sampler
/// saw it on). The placement timeline beside [`local_shares`]: where the
/// scheduler put a thread, as opposed to where its memory followed it.
pub fn nodes_over_time(rec: &RunRecord, m: &Machine, th: &[Measured]) -> Vec<Vec<(f64, f64)>> {
    let Some(ts) = rec.timeseries.as_ref() else {
        return vec![Vec::new(); th.len()];
    };
    th.iter()
        .map(|t| {
            let name = Column::Cpu {
                process: &t.process,
                thread: &t.thread,
            }
            .name();
            let Some(cpu) = ts.columns.iter().position(|c| *c == name) else {
                return Vec::new();
            };
            ts.rows
                .iter()
                .filter_map(|row| {
                    let c = *row.get(cpu)?;
                    let node = m.cpus.get(usize::try_from(c as i64).ok()?)?.node;
                    Some((row[0], node as f64))
                })
                .collect()
        })
        .collect()
}

/// The last time at which every series has a sample (all measured threads
/// ran), if any.
pub fn last_common_time(series: &[Vec<(f64, f64)>]) -> Option<f64> {
    let first = series.first()?;
    first
        .iter()
        .rev()
        .map(|(t, _)| *t)
        .find(|t| series.iter().all(|s| s.iter().any(|(u, _)| u == t)))
}

/// A thread's final share: at `at` when given (see [`last_common_time`]),
/// else its last sample.
pub fn final_share(series: &[(f64, f64)], at: Option<f64>) -> Option<f64> {
    match at {
        Some(t) => series.iter().find(|(u, _)| *u == t).map(|(_, s)| *s),
        None => series.last().map(|(_, s)| *s),
    }
}

/// First time a series reaches [`LOCAL`].
pub fn first_local(series: &[(f64, f64)]) -> Option<f64> {
    series.iter().find(|(_, s)| *s >= LOCAL).map(|(t, _)| *t)
}

/// Where a thread's memory ended up: "local" when most of it is on the
/// thread's node, else "remote".
pub fn placement(share: Option<f64>) -> &'static str {
    match share {
        None => "-",
        Some(s) if s > 0.5 => "local",
        Some(_) => "remote",
    }
}

/// Do two counts differ by more than 2x? (0 against anything non-zero
/// does.)
pub fn differs_2x(a: f64, b: f64) -> bool {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    hi > 2.0 * lo
}

/// The run cgroup's memory.stat entry `name`.
pub fn memcg(r: &RunRecord, name: &str) -> Option<f64> {
    r.cgroups
        .get("/")
        .and_then(|c| c.memory_stat.get(name))
        .map(|&v| v as f64)
}
