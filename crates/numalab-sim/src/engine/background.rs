//! Running the machine's background activity (`[kernel] background`, see
//! numalab-topology `kernel_spec.rs` and kernel/sched/background.rs): each
//! background task is a kernel thread whose program is "wake, run
//! `runtime_us` x `cost_scale` of CPU work, sleep until the next period",
//! forever. Its first wakeup is at a seeded random point of its period
//! (a PRNG stream of its own, so the workload's stream is unchanged).
//! Switched off by `numalab.background=0`.
//!
//! A background task whose spec has `mm_refs` (validate's coordinator,
//! which reads every process's `/proc/PID/numa_maps`) holds a reference on
//! each workload process's mm while its work runs: the walk's
//! `mmget_not_zero` (fs/proc/task_mmu.c `m_start`), so a single-threaded
//! process's `mm_users` is 2 meanwhile and its scan marks pages already
//! on its node too (`change_pte_range`'s `target_node` test; lab switch
//! `numalab.proc_mm_refs`).
//!
//! Left out: timer slack and `round_jiffies` alignment of the wakeups;
//! the period restarts when the work ends (as `queue_delayed_work` from
//! the work itself does), so a delayed run drifts the next ones. A reader
//! holds every process's mm for its whole run, where the coordinator walks
//! one process after another.

use super::exec::ThreadExec;
use super::{Ev, Sim};
use crate::kernel::sched::background::FIRST_KTHREAD_PID;
use crate::kernel::sysctl::knob;
use crate::kernel::CpuId;
use crate::kernel::{MmId, TaskId};
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
                let mut ex = ThreadExec::new(proc_index, programs.len(), self.k.m.nr_nodes());
                if b.mm_refs && self.k.knobs.get(knob::PROC_MM_REFS) {
                    ex.mm_refs = Some(Vec::new());
                }
                self.exec.push(ex);
                programs.push(program.clone());
                let first = rng.gen_range(0..period_ns.max(1));
                self.push(self.k.now + first, Ev::Wakeup { task: t });
            }
        }
        self.threads.push(programs);
    }

    /// A `/proc` reader `t` takes (`take`: its work starts) or drops (it
    /// goes to sleep) its references on the workload's live mms.
    pub(super) fn proc_mm_refs(&mut self, t: TaskId, take: bool) {
        let Some(held) = self.exec[t].mm_refs.take() else {
            return;
        };
        for &mm in &held {
            let m = &mut self.k.mem.mms[mm];
            m.refs = m.refs.saturating_sub(1);
        }
        let mut now: Vec<MmId> = Vec::new();
        if take {
            for p in &self.procs {
                let live = p
                    .tasks
                    .iter()
                    .flatten()
                    .find(|&&x| self.k.tasks[x].state != crate::kernel::sched::TaskState::Dead);
                if let Some(&x) = live {
                    let mm = self.k.tasks[x].mm;
                    if !now.contains(&mm) {
                        now.push(mm);
                    }
                }
            }
            for &mm in &now {
                self.k.mem.mms[mm].refs += 1;
            }
        }
        self.exec[t].mm_refs = Some(now);
    }
}
