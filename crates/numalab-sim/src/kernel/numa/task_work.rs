//! When the scans `task_tick_numa` asks for run, and so which thread of an
//! mm takes its `numa_next_scan` (`numalab.numa_work_after_tick`).
//!
//! In the kernel `task_tick_numa` only queues `task_numa_work` as task
//! work (`task_work_add(..., TWA_RESUME)`); it runs on the way back to user
//! space after the tick interrupt and its softirqs. Every CPU's tick fires
//! at the same moment (no `skew_tick=`), so the threads of one mm whose
//! check passed in the same tick all reach `task_numa_work` within
//! microseconds, and the first to `try_cmpxchg` `numa_next_scan` scans;
//! the others find it moved and return. Which one is first depends on how
//! long each CPU's interrupt took, not on its number. The model queues the
//! scans during the tick pass and runs them after it, in the order the
//! CPUs leave their tick interrupt: the deterministic per-CPU, per-tick
//! spread of `softirq_start` (kernel/sched/serialize.rs). Off, each scan
//! runs inside the tick pass, which visits CPUs from 0, so the lowest
//! due CPU's thread always won the mm's scan.
//!
//! Left out: a scan queued by a task that the tick preempts runs at once
//! here, where the kernel runs it when the task next returns to user
//! space; the time the softirqs themselves take (a CPU that balances
//! leaves its interrupt later than the spread says).

use crate::kernel::sysctl::knob;
use crate::kernel::{CpuId, Kernel, TaskId};

impl Kernel {
    /// `task_work_add` of `task_numa_work` for task `t` on `cpu`, from
    /// `task_tick_numa`: queued until the tick pass ends
    /// ([`Kernel::run_numa_task_work`]), or run at once with
    /// `numalab.numa_work_after_tick=0`.
    pub(crate) fn queue_task_numa_work(&mut self, t: TaskId, cpu: CpuId) {
        if self.knobs.get(knob::NUMA_WORK_AFTER_TICK) {
            self.numa.work_pending.push((t, cpu));
        } else {
            self.task_numa_work(t, cpu);
        }
    }

    /// Runs the scans this tick queued, in the order their CPUs leave the
    /// tick interrupt (earliest `softirq_start` first; CPU number only to
    /// break an exact tie). The engine calls it once a tick, after every
    /// CPU's `task_tick_numa` and the balancing softirqs.
    pub fn run_numa_task_work(&mut self) {
        if self.numa.work_pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.numa.work_pending);
        let mut keyed: Vec<(f64, CpuId, TaskId)> = pending
            .iter()
            .map(|&(t, cpu)| (self.softirq_start(cpu), cpu, t))
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for &(_, cpu, t) in &keyed {
            self.task_numa_work(t, cpu);
        }
        pending.clear();
        self.numa.work_pending = pending;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fx;
    use crate::kernel::{CpuId, Kernel, TaskId};

    /// A four-thread process with 64 MB on node 0, one thread on each CPU
    /// of tiny-2n, 2 s in: its first scan is due.
    fn four_threads(sets: &[&str]) -> (Kernel, Vec<(TaskId, CpuId)>) {
        let mut k = fx::kernel("tiny-2n", sets);
        let mm = fx::add_mm(&mut k, 64 << 20, false, None);
        let n = k.mem.mms[mm].vmas[fx::V0].pages.len();
        fx::populate(&mut k, mm, 0, n, fx::n(0));
        let threads = (0..k.m.nr_cpus())
            .map(|i| (fx::add_task(&mut k, mm, fx::c(i)), fx::c(i)))
            .collect();
        k.now = 2_000_000_000;
        (k, threads)
    }

    /// For `rounds` ticks a second apart (the mm due again each time), every
    /// thread's check passes at once, as when their periods line up: which
    /// thread scanned (the winner's `node_stamp` is pushed by the scan; the
    /// others' system time grows too, by the scan's TLB shootdown), and the
    /// CPU the spread lets out of its interrupt first.
    fn winners(sets: &[&str], rounds: usize) -> Vec<(TaskId, CpuId)> {
        let (mut k, threads) = four_threads(sets);
        let mut out = Vec::new();
        for _ in 0..rounds {
            let before: Vec<u64> = threads
                .iter()
                .map(|&(t, _)| k.tasks[t].numa.node_stamp)
                .collect();
            for &(t, cpu) in &threads {
                k.queue_task_numa_work(t, cpu);
            }
            let first_out = threads
                .iter()
                .map(|&(_, cpu)| cpu)
                .min_by(|&a, &b| k.softirq_start(a).total_cmp(&k.softirq_start(b)))
                .expect("threads");
            k.run_numa_task_work();
            let scanned: Vec<TaskId> = threads
                .iter()
                .zip(&before)
                .filter(|&(&(t, _), &b)| k.tasks[t].numa.node_stamp != b)
                .map(|(&(t, _), _)| t)
                .collect();
            assert_eq!(scanned.len(), 1, "one scan per mm per tick: {scanned:?}");
            out.push((scanned[0], first_out));
            k.now += 1_000_000_000;
        }
        out
    }

    #[test]
    fn the_thread_whose_cpu_leaves_the_tick_first_takes_the_scan() {
        let (_, threads) = four_threads(&[]);
        let won = winners(&[], 24);
        for &(t, first_out) in &won {
            let on = threads.iter().find(|e| e.0 == t).expect("a thread").1;
            assert_eq!(on, first_out, "{won:?}");
        }
        // Not the lowest CPU every time: over 24 ticks every thread of the
        // four wins some.
        let mut distinct: Vec<TaskId> = won.iter().map(|e| e.0).collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), threads.len(), "{won:?}");
    }

    #[test]
    fn inside_the_tick_pass_the_lowest_cpu_always_took_the_scan() {
        let (_, threads) = four_threads(&[]);
        let won = winners(&["numalab.numa_work_after_tick=0"], 8);
        assert!(won.iter().all(|e| e.0 == threads[0].0), "{won:?}");
    }
}
