//! Running the machine's background activity (`[kernel] background`, see
//! numalab-topology `kernel_spec.rs` and kernel/sched/background.rs): each
//! background task is a kernel thread whose program is "wake, run
//! `runtime_us` x `cost_scale` of CPU work, sleep until the next period",
//! forever. Its first wakeup is at a seeded random point of its period
//! (a PRNG stream of its own, so the workload's stream is unchanged).
//! Switched off by `numalab.background=0`.
//!
//! Left out: timer slack and `round_jiffies` alignment of the wakeups;
//! the period restarts when the work ends (as `queue_delayed_work` from
//! the work itself does), so a delayed run drifts the next ones.

use super::exec::ThreadExec;
use super::{Ev, Sim};
use crate::kernel::sched::background::FIRST_KTHREAD_PID;
use crate::kernel::sysctl::knob;
use crate::kernel::CpuId;
use numalab_topology::{BackgroundPer, CpuSet};
use numalab_workload::Phase;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

impl Sim {
    /// Creates the background kernel threads, sleeping until their first
    /// wakeup. Called once, after the workload's first threads exist.
    pub(super) fn start_background(&mut self) {
        if !self.k.knobs.get(knob::BACKGROUND) {
            return;
        }
        let mut rng = Pcg64Mcg::seed_from_u64(self.opts.seed ^ 0x6b74_6872_6561_6473);
        let scale = self.k.m.kernel.cost_scale;
        let specs = self.k.m.kernel.background.clone();
        let proc_index = self.threads.len();
        let mut programs = Vec::new();
        let mut pid = FIRST_KTHREAD_PID;
        for b in &specs {
            let run_ns = (b.runtime_us * 1e3 * scale).round() as u64;
            let period_ns = (b.period_ms * 1e6).round() as u64;
            let program = vec![Phase::Repeat {
                times: u64::MAX,
                body: vec![
                    Phase::Compute { ns: run_ns },
                    Phase::Sleep {
                        ns: period_ns.saturating_sub(run_ns).max(1),
                    },
                ],
                request: false,
            }];
            let places: Vec<(String, CpuSet)> = match b.per {
                BackgroundPer::Cpu => self
                    .k
                    .cpu_ids()
                    .map(|c| {
                        (
                            format!("{}/{}", b.name, c.index()),
                            std::iter::once(c.index()).collect(),
                        )
                    })
                    .collect(),
                BackgroundPer::Node => self
                    .k
                    .m
                    .nodes
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| !n.cpus.is_empty())
                    .map(|(i, n)| (format!("{}{i}", b.name), n.cpus.clone()))
                    .collect(),
                BackgroundPer::Machine => vec![(b.name.clone(), self.k.m.all_cpus())],
            };
            for (name, cpus) in places {
                let cpu = CpuId::new(cpus.first().unwrap_or(0));
                let t = self.k.kthread_create(pid, &name, cpus, cpu);
                pid += 1;
                self.exec.push(ThreadExec::new(
                    proc_index,
                    programs.len(),
                    self.k.m.nr_nodes(),
                ));
                programs.push(program.clone());
                let first = rng.gen_range(0..period_ns.max(1));
                self.push(self.k.now + first, Ev::Wakeup { task: t });
            }
        }
        self.threads.push(programs);
    }
}
