//! `numalab real run`'s coordinator in the model: the process that
//! samples the workload once a second (numa_maps, memory.stat, each
//! thread's stat) and polls its workers every 50 ms is background work on
//! the guest's CPUs, and in a QEMU guest a sample holds a vCPU for
//! hundreds of milliseconds: the workload thread sharing that vCPU waits,
//! and the balancer may move it (docs/real.md M3). So validate runs the
//! model with the coordinator as two background threads, costed as the
//! saved boots measured them (`real.sample_cpu_ms`, `real.poll_cpu_us`:
//! numalab-real coordinator_cpu.rs), or, for boots that did not, as
//! estimated from the workload's size.
//!
//! Left out: the sample's cost varying over the run (the median is
//! used), and the coordinator's own memory traffic.

use numalab_real::coordinator_cpu::median;
use numalab_record::{lab, RunRecord};
use numalab_topology::{Background, BackgroundPer};
use numalab_workload::model::Workload;

/// The coordinator's CPU cost on the machine it ran on (guest time).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoordinatorCost {
    /// CPU ms per sample.
    pub sample_ms: f64,
    /// CPU us per 50 ms poll.
    pub poll_us: f64,
}

/// The coordinator's cost as `boots` recorded it: the median over the
/// boots that did (`None` if none did).
pub fn coordinator_cost(boots: &[RunRecord]) -> Option<CoordinatorCost> {
    let med = |key: &lab::LabFigure| median(boots.iter().filter_map(|b| b.lab.get(key)));
    Some(CoordinatorCost {
        sample_ms: med(&lab::REAL_SAMPLE_CPU_MS)?,
        poll_us: med(&lab::REAL_POLL_CPU_US)?,
    })
}

/// The coordinator as background work of the model's machine
/// (numalab-real `run.rs::sample_loop`): it wakes at least every 50 ms to
/// poll the workers' reports (`poll_reports`), and every `interval_s`
/// takes a sample: /proc/vmstat, memory.stat, the tracepoint counters,
/// each process's /proc/PID/numa_maps (a walk of every mapped page,
/// `show_numa_map` → `gather_pte_stats`) and each thread's
/// /proc/PID/task/TID/stat. With `measured`, each costs what the boots
/// measured (guest time, so divided by `cost_scale`, which the model
/// multiplies background work by). Without, native estimates (a modeling
/// choice): 5 us per poll, 50 us for a sample's fixed reads, 10 us per
/// thread and the numa_maps walk at `NUMA_MAPS_PAGE_NS` (10 ns,
/// physics/costs.rs) per mapped page (THP: per 2 MiB page), all regions
/// counted as mapped; in three traced guest-4n boots these came within
/// 2x of what the coordinator spent, too low with 4 KiB regions and too
/// high with a large idle one (docs/real.md M3).
pub fn real_run_sampler(
    w: &Workload,
    interval_s: f64,
    measured: Option<CoordinatorCost>,
    cost_scale: f64,
) -> Vec<Background> {
    let (poll_us, sample_us) = match measured {
        Some(c) => (c.poll_us / cost_scale, c.sample_ms * 1e3 / cost_scale),
        None => (5.0, estimated_sample_us(w)),
    };
    vec![
        Background {
            name: "numalab-real-poll".into(),
            per: BackgroundPer::Machine,
            period_ms: 50.0,
            runtime_us: poll_us,
            mm_refs: false,
        },
        Background {
            name: "numalab-real-sample".into(),
            per: BackgroundPer::Machine,
            period_ms: interval_s * 1000.0,
            runtime_us: sample_us,
            // Its numa_maps walks hold each process's mm.
            mm_refs: true,
        },
    ]
}

/// A sample's native cost estimated from the workload's threads and pages.
fn estimated_sample_us(w: &Workload) -> f64 {
    let threads: usize = w.processes.iter().map(|p| p.threads.len()).sum();
    let pages: f64 = w
        .processes
        .iter()
        .flat_map(|p| &p.regions)
        .map(|r| {
            let psize = match r.page_size {
                numalab_workload::PageSize::Thp2M => 2u64 << 20,
                _ => 4096,
            };
            r.bytes.div_ceil(psize) as f64
        })
        .sum();
    50.0 + 10.0 * threads as f64 + pages * numalab_sim::physics::costs::NUMA_MAPS_PAGE_NS / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot(sample_ms: Option<f64>, poll_us: f64) -> RunRecord {
        let mut r = RunRecord::empty(numalab_record::RunKind::Real);
        if let Some(ms) = sample_ms {
            r.lab.set(lab::REAL_SAMPLE_CPU_MS, ms);
            r.lab.set(lab::REAL_POLL_CPU_US, poll_us);
        }
        r
    }

    #[test]
    fn the_boots_measurement_is_their_median_and_costs_guest_time() {
        let boots = [
            boot(Some(300.0), 400.0),
            boot(None, 0.0),
            boot(Some(200.0), 600.0),
            boot(Some(250.0), 500.0),
        ];
        let c = coordinator_cost(&boots).expect("three boots measured it");
        assert_eq!(
            c,
            CoordinatorCost {
                sample_ms: 250.0,
                poll_us: 500.0
            }
        );
        assert_eq!(coordinator_cost(&boots[1..2]), None);
        let m = crate::validate::machine(None).expect("the built-in guest");
        let s = &crate::validate::SCENARIOS[0];
        let w = crate::validate::resolve(s, &m, 1, 1.0).expect("a built-in scenario");
        let bg = real_run_sampler(&w, 1.0, Some(c), 180.0);
        // 250 ms of the guest's time is 250 ms / 180 of native work.
        assert!((bg[1].runtime_us - 250e3 / 180.0).abs() < 1e-9);
        assert!((bg[0].runtime_us - 500.0 / 180.0).abs() < 1e-9);
        assert_eq!(real_run_sampler(&w, 1.0, None, 180.0)[0].runtime_us, 5.0);
    }
}
