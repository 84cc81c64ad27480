//! Barriers between a process's threads (the workload's `barrier` phase):
//! `pthread_barrier_wait`, so one thread wakes others.
//!
//! A barrier's parties are the process's threads whose phases name it; one
//! that exits stops being a party. A thread that arrives before the others
//! sleeps off its CPU (glibc's barrier waits in `futex_wait`); the last to
//! arrive wakes every sleeper from its own CPU (`futex_wake`, one
//! `try_to_wake_up` each, no WF_SYNC), so each wakeup goes through
//! `select_task_rq_fair` with a waker (kernel/sched/wake_affine.rs), and
//! goes on. Left out: the futex's hash-bucket lock and the barrier's own
//! cache line (each wait is free apart from the wakeup's cost), and glibc's
//! round-based wakeup order (the sleepers wake in the order they arrived).

use super::{ProcInfo, Sim, SimError};
use crate::kernel::sched::TaskState;
use crate::kernel::{CpuId, TaskId};
use numalab_workload::{Phase, Process};

/// One barrier of a process.
#[derive(Clone, Debug)]
pub struct BarrierState {
    /// Its name in the workload.
    pub name: String,
    /// Threads still to arrive at each round: those that name it and have
    /// not exited.
    pub parties: usize,
    /// The threads asleep on it, in the order they arrived.
    pub waiting: Vec<TaskId>,
}

impl BarrierState {
    /// The barriers of process `p`, each with every thread that names it
    /// as a party.
    pub fn of_process(p: &Process) -> Vec<BarrierState> {
        numalab_workload::barrier_parties(&p.threads)
            .into_iter()
            .map(|(name, parties)| BarrierState {
                name: name.to_string(),
                parties,
                waiting: Vec::new(),
            })
            .collect()
    }
}

impl ProcInfo {
    /// The index of barrier `name` in [`ProcInfo::barriers`].
    pub(super) fn barrier_index(&self, name: &str) -> Option<usize> {
        self.barriers.iter().position(|b| b.name == name)
    }
}

impl Sim {
    /// Task `t`, running on `cpu`, reaches barrier `b` of its process. The
    /// last party wakes the others and returns true (it goes on); any other
    /// is left to block and false is returned.
    pub(super) fn barrier_arrive(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        b: usize,
    ) -> Result<bool, SimError> {
        let pi = self.exec[t].proc;
        let bar = &mut self.procs[pi].barriers[b];
        if bar.waiting.len() + 1 < bar.parties {
            bar.waiting.push(t);
            return Ok(false);
        }
        self.barrier_release(pi, b, t, cpu)?;
        Ok(true)
    }

    /// Task `t` exits: it stops being a party of its process's barriers it
    /// names, and a barrier whose other parties all wait is released (by
    /// `t`, from its CPU, as the exit's last act).
    pub(super) fn barrier_party_exits(&mut self, t: TaskId) -> Result<(), SimError> {
        let (pi, ti) = (self.exec[t].proc, self.exec[t].thread);
        if self.procs[pi].barriers.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = Phase::barriers(&self.w.processes[pi].threads[ti].phases)
            .into_iter()
            .map(str::to_string)
            .collect();
        let cpu = self.k.tasks[t].cpu;
        for name in names {
            let Some(b) = self.procs[pi].barrier_index(&name) else {
                continue;
            };
            let bar = &mut self.procs[pi].barriers[b];
            bar.parties -= 1;
            if !bar.waiting.is_empty() && bar.waiting.len() >= bar.parties {
                self.barrier_release(pi, b, t, cpu)?;
            }
        }
        Ok(())
    }

    /// Wakes every sleeper of barrier `b` of process `pi`, woken by `waker`
    /// on `cpu`.
    fn barrier_release(
        &mut self,
        pi: usize,
        b: usize,
        waker: TaskId,
        cpu: CpuId,
    ) -> Result<(), SimError> {
        let sleepers = std::mem::take(&mut self.procs[pi].barriers[b].waiting);
        for w in sleepers {
            debug_assert_eq!(self.k.tasks[w].state, TaskState::Sleeping);
            self.try_to_wake_up(w, Some((waker, cpu)))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Knobs, RunOptions, Sim};

    /// tiny-2n (2 nodes x 2 CPUs) and a workload of two threads that
    /// compute for `a` and `b`, meet at a barrier and compute 1 ms more.
    fn run(a: &str, b: &str, sets: &[&str]) -> numalab_record::RunRecord {
        let m = numalab_topology::presets::load("tiny-2n").unwrap();
        let text = format!(
            "[[process]]\nname = \"p\"\n[[process.region]]\nname = \"buf\"\nsize = \"1MiB\"\n\
             [[process.thread]]\nname = \"a\"\nphases = [{{ compute = \"{a}\" }}, {{ barrier = \"gc\" }}, {{ compute = \"1ms\" }}]\n\
             [[process.thread]]\nname = \"b\"\nphases = [{{ compute = \"{b}\" }}, {{ barrier = \"gc\" }}, {{ compute = \"1ms\" }}]\n"
        );
        let spec = numalab_workload::parse(&text, "t.toml").unwrap();
        let w = numalab_workload::resolve(&spec, &m, 1, 1.0).unwrap();
        let knobs = Knobs::from_sets(sets).unwrap();
        Sim::new(m, w, knobs, RunOptions::default())
            .unwrap()
            .run(&mut |_| {})
            .unwrap()
    }

    fn task<'a>(rec: &'a numalab_record::RunRecord, name: &str) -> &'a numalab_record::TaskFigures {
        rec.tasks.iter().find(|t| t.name == name).unwrap()
    }

    #[test]
    fn the_first_to_arrive_waits_for_the_last_and_both_go_on_together() {
        let rec = run("2ms", "30ms", &[]);
        // Both leave the barrier at about 30 ms and exit 1 ms later.
        for name in ["p/a", "p/b"] {
            let e = task(&rec, name).exit_s;
            assert!((0.0305..0.0335).contains(&e), "{name} exits at {e} s");
        }
        // The early one slept through the wait: its user time is its 3 ms
        // of work, not 30.
        let a = task(&rec, "p/a");
        assert!(a.user_s < 0.005, "a's user time {} s", a.user_s);
    }

    #[test]
    fn a_party_that_exits_does_not_hold_the_others() {
        let m = numalab_topology::presets::load("tiny-2n").unwrap();
        let text = "[[process]]\nname = \"p\"\n[[process.region]]\nname = \"buf\"\nsize = \"1MiB\"\n\
             [[process.thread]]\nname = \"a\"\nphases = [{ compute = \"1ms\" }, { barrier = \"x\" }, { compute = \"1ms\" }]\n\
             [[process.thread]]\nname = \"b\"\nphases = [{ repeat = 0, body = [{ barrier = \"x\" }] }, { compute = \"1ms\" }]\n";
        let spec = numalab_workload::parse(text, "t.toml").unwrap();
        let w = numalab_workload::resolve(&spec, &m, 1, 1.0).unwrap();
        let rec = Sim::new(m, w, Knobs::default(), RunOptions::default())
            .unwrap()
            .run(&mut |_| {})
            .unwrap();
        // b never arrives (its barrier is in a loop of no iterations) and
        // exits at 1 ms; a, waiting since 1 ms, is released then.
        let a = task(&rec, "p/a");
        assert!(
            (0.0019..0.0025).contains(&a.exit_s),
            "a exits at {} s",
            a.exit_s
        );
    }
}
