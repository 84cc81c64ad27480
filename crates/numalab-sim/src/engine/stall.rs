//! Where a task's access-latency histogram (latency.rs) meets the engine:
//! accesses counted at the rate the physics gives, and stalls (kernel work
//! charged to the task, or time preempted) closed into one delayed access,
//! only while the task is in a timed memory operation. Its own file so that
//! the histogram does not import the executor that owns it. Left out: what
//! the histogram models and omits (latency.rs).

use super::exec::Op;
use super::Sim;
use crate::kernel::TaskId;

impl Sim {
    /// Whether per-access latencies are recorded for task `t`.
    fn lat_on(&self, t: TaskId) -> bool {
        self.lat_threshold_ns > 0.0 && !self.k.tasks[t].kthread
    }

    /// `count` accesses of task `t` at `lat_ns` each over `run_ns` of its
    /// time, a share `write` of them writes; on a QEMU guest, plus one
    /// delayed access per host cut of that time (engine/host_cuts.rs).
    pub(crate) fn lat_accesses(
        &mut self,
        t: TaskId,
        count: f64,
        lat_ns: f64,
        write: f64,
        run_ns: f64,
    ) {
        if self.lat_on(t) {
            let th = self.lat_threshold_ns;
            let lat = &mut self.exec[t].lat;
            lat.add(lat_ns, count, write, th);
            if let Some(cuts) = self.host_cuts.as_mut() {
                cuts.draw(run_ns, |d| lat.add_stall(d, th));
            }
        }
    }

    /// Closes task `t`'s stall: the kernel time charged to it since the
    /// last close delays one timed access when `timed` (the task is in a
    /// memory operation).
    pub(crate) fn close_stall(&mut self, t: TaskId, timed: bool) {
        let s = std::mem::take(&mut self.k.owed[t].stall_ns);
        if timed && s > 0.0 && self.lat_on(t) {
            let th = self.lat_threshold_ns;
            self.exec[t].lat.add_stall(s, th);
        }
    }

    /// A stall of `ns` that is not kernel work (time preempted).
    pub(crate) fn wait_stall(&mut self, t: TaskId, ns: f64) {
        let timed = matches!(self.exec[t].op, Op::Random { .. } | Op::Stream { .. });
        if timed && ns > 0.0 && self.lat_on(t) {
            let th = self.lat_threshold_ns;
            self.exec[t].lat.add_stall(ns, th);
        }
    }

    /// Closes every task's open stall (at a tick, after the tick's kernel
    /// work).
    pub(crate) fn close_stalls(&mut self) {
        for t in TaskId::range(self.k.tasks.len()) {
            if self.k.owed[t].stall_ns > 0.0 {
                let timed = matches!(self.exec[t].op, Op::Random { .. } | Op::Stream { .. });
                self.close_stall(t, timed);
            }
        }
    }
}
