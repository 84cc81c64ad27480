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
//! Proposal 2's asynchronous scan (async_scan.rs) has the same race one
//! step later: each due thread's tick queues an item, and the kworker that
//! runs first takes `numa_next_scan`. The items go to the kworkers in the
//! same order ([`Kernel::take_numa_async_queued`]), not by CPU number.
//!
//! Left out: a scan queued by a task that the tick preempts runs at once
//! here, where the kernel runs it when the task next returns to user
//! space; the time the softirqs themselves take (a CPU that balances
//! leaves its interrupt later than the spread says).

use crate::kernel::numa::async_scan::AsyncItem;
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
    pub(crate) fn run_numa_task_work(&mut self) {
        if self.numa.work_pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.numa.work_pending);
        self.sort_by_tick_exit(&mut pending, |&(_, cpu)| cpu);
        for &(t, cpu) in &pending {
            self.task_numa_work(t, cpu);
        }
        pending.clear();
        self.numa.work_pending = pending;
    }

    /// Takes the `numa_async_work` items this tick's `task_tick_numa`
    /// calls queued (proposal 2), for the engine to hand to the kworkers:
    /// in the order their CPUs' ticks reach the workqueue (earliest
    /// `softirq_start` first), or in CPU order with
    /// `numalab.numa_work_after_tick=0`.
    pub(crate) fn take_numa_async_queued(&mut self) -> Vec<AsyncItem> {
        let mut items = std::mem::take(&mut self.numa.async_scan.queued);
        if self.knobs.get(knob::NUMA_WORK_AFTER_TICK) {
            self.sort_by_tick_exit(&mut items, |it| it.cpu);
        }
        items
    }

    /// Sorts one tick's `items` by when the CPU each came from (`cpu_of`)
    /// leaves its tick interrupt: earliest `softirq_start` first, CPU
    /// number only to break an exact tie.
    fn sort_by_tick_exit<T>(&self, items: &mut [T], cpu_of: impl Fn(&T) -> CpuId) {
        items.sort_by_cached_key(|it| {
            let cpu = cpu_of(it);
            (self.softirq_start(cpu).to_bits(), cpu)
        });
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

    /// The CPUs of the asynchronous items the four threads' ticks queue at
    /// tick `jiffy`, in the order the kworkers get them, each with its
    /// CPU's `softirq_start` at that tick.
    fn async_order(sets: &[&str], jiffy: u64) -> Vec<(CpuId, f64)> {
        let mut all = vec!["kernel.numa_balancing_scan_async=1"];
        all.extend_from_slice(sets);
        let (mut k, threads) = four_threads(&all);
        k.now += jiffy * k.tick_ns;
        for &(t, cpu) in &threads {
            k.queue_numa_async_work(t, cpu);
        }
        k.take_numa_async_queued()
            .iter()
            .map(|it| (it.cpu, k.softirq_start(it.cpu)))
            .collect()
    }

    #[test]
    fn asynchronous_items_reach_the_kworkers_in_the_order_cpus_leave_the_tick() {
        let (_, threads) = four_threads(&[]);
        let mut firsts = Vec::new();
        for jiffy in 0..24 {
            let order = async_order(&[], jiffy);
            assert_eq!(order.len(), threads.len());
            assert!(order.windows(2).all(|w| w[0].1 <= w[1].1), "{order:?}");
            firsts.push(order[0].0);
        }
        firsts.sort_unstable();
        firsts.dedup();
        assert_eq!(
            firsts.len(),
            threads.len(),
            "each CPU's item comes first at some tick"
        );
        // Off: CPU order, as the tick pass queued them.
        let off: Vec<CpuId> = async_order(&["numalab.numa_work_after_tick=0"], 3)
            .iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(off, threads.iter().map(|e| e.1).collect::<Vec<_>>());
    }

    #[test]
    fn inside_the_tick_pass_the_lowest_cpu_always_took_the_scan() {
        let (_, threads) = four_threads(&[]);
        let won = winners(&["numalab.numa_work_after_tick=0"], 8);
        assert!(won.iter().all(|e| e.0 == threads[0].0), "{won:?}");
    }
}
