//! The workload's `barrier` phase in a real run: the process's barriers,
//! each a round counter under a mutex with a condition variable.
//!
//! As the model's (numalab-sim engine/barrier.rs): a barrier's parties are
//! the process's threads whose phases name it, one that exits stops being a
//! party, the first arrivals sleep, and the last one wakes them all at once
//! (`Condvar::notify_all`, one futex wake) and goes on. Left out: a sleeper
//! also wakes every 20 ms to see the run's stop flag, so a wait longer than
//! that costs the guest a wakeup per 20 ms that the model does not have.

use numalab_workload::model::Thread;
use numalab_workload::Phase;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long a sleeper waits before it looks at the stop flag again.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// One barrier's state.
#[derive(Debug)]
struct Round {
    /// Threads that name it and have not exited.
    parties: usize,
    /// Threads asleep on it in this round.
    arrived: usize,
    /// Rounds completed; a sleeper leaves when it changes.
    round: u64,
}

/// A process's barriers, by name.
#[derive(Debug, Default)]
pub(crate) struct Barriers {
    list: Vec<(String, Mutex<Round>, Condvar)>,
}

/// What a wait ended with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Every party arrived (or the others exited).
    Passed,
    /// The run is stopping.
    Stopped,
}

impl Barriers {
    /// The barriers `threads` name, each with every thread naming it as a
    /// party.
    pub fn new(threads: &[Thread]) -> Barriers {
        let list = numalab_workload::barrier_parties(threads)
            .into_iter()
            .map(|(name, parties)| {
                let round = Round {
                    parties,
                    arrived: 0,
                    round: 0,
                };
                (name.to_string(), Mutex::new(round), Condvar::new())
            })
            .collect();
        Barriers { list }
    }

    fn find(&self, name: &str) -> Option<(MutexGuard<'_, Round>, &Condvar)> {
        let (_, m, cv) = self.list.iter().find(|(n, _, _)| n == name)?;
        Some((m.lock().unwrap_or_else(|e| e.into_inner()), cv))
    }

    /// Waits at barrier `name` until every other party arrives or exits,
    /// or until `stopped` says the run ends.
    pub fn wait(&self, name: &str, stopped: &dyn Fn() -> bool) -> Wait {
        let Some((mut r, cv)) = self.find(name) else {
            return Wait::Passed;
        };
        if r.arrived + 1 >= r.parties {
            r.arrived = 0;
            r.round += 1;
            cv.notify_all();
            return Wait::Passed;
        }
        r.arrived += 1;
        let mine = r.round;
        while r.round == mine {
            if stopped() {
                r.arrived -= 1;
                return Wait::Stopped;
            }
            r = cv
                .wait_timeout(r, STOP_CHECK)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        Wait::Passed
    }

    /// A thread whose phases are `phases` exits: it leaves the barriers it
    /// names, releasing any whose other parties all wait.
    pub fn party_exits(&self, phases: &[Phase]) {
        for name in Phase::barriers(phases) {
            let Some((mut r, cv)) = self.find(name) else {
                continue;
            };
            r.parties = r.parties.saturating_sub(1);
            if r.arrived > 0 && r.arrived >= r.parties {
                r.arrived = 0;
                r.round += 1;
                cv.notify_all();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn thread(phases: Vec<Phase>) -> Thread {
        Thread {
            name: "t".into(),
            affinity: None,
            policy: None,
            start_after: Vec::new(),
            phases,
        }
    }

    fn gc() -> Phase {
        Phase::Barrier { name: "gc".into() }
    }

    /// A thread that waits at barrier `gc` of `b`, never asked to stop.
    fn waiter(b: &Arc<Barriers>) -> std::thread::JoinHandle<Wait> {
        let b = Arc::clone(b);
        std::thread::spawn(move || b.wait("gc", &|| false))
    }

    #[test]
    fn threads_leave_a_barrier_only_when_all_have_arrived() {
        let b = Arc::new(Barriers::new(&[thread(vec![gc()]), thread(vec![gc()])]));
        let first = waiter(&b);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!first.is_finished(), "one of two arrived: it waits");
        assert_eq!(b.wait("gc", &|| false), Wait::Passed);
        assert_eq!(first.join().unwrap(), Wait::Passed);
    }

    #[test]
    fn an_exiting_party_releases_the_waiters_and_a_stop_ends_a_wait() {
        let b = Arc::new(Barriers::new(&[thread(vec![gc()]), thread(vec![gc()])]));
        let first = waiter(&b);
        std::thread::sleep(Duration::from_millis(30));
        b.party_exits(&[gc()]);
        assert_eq!(first.join().unwrap(), Wait::Passed);
        // Now alone: it passes at once. With a second party that never
        // comes, a stop ends the wait.
        assert_eq!(b.wait("gc", &|| false), Wait::Passed);
        let b = Barriers::new(&[thread(vec![gc()]), thread(vec![gc()])]);
        assert_eq!(b.wait("gc", &|| true), Wait::Stopped);
    }
}
