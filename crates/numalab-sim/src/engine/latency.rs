//! Per-access latency as pmbench measures it (proposal 2, lab switch
//! `numalab.access_latency`): each thread times every access (`rdtsc`
//! before and after) and counts it in a log2 histogram, reads and writes
//! apart (pmbench by Jisoo Yang, UNLV: blakecaldwell/pmbench on GitHub,
//! its v0.9 man page and access.c).
//!
//! Accesses are not simulated one by one. A thread's accesses come at the
//! rate the physics gives its operation; each takes the per-access latency
//! Little's law gives at that rate (misses in flight / accesses per ns:
//! for pmbench's dependent loads, one in flight, so the latency is the
//! inverse of the rate, loaded latency and shared-line transfers included).
//!
//! A stall (kernel work the task pays: a hinting fault with its migration
//! and lock waits, its own scan work, TLB-shootdown interrupts, wakeup
//! and context-switch costs; or time spent preempted on a runqueue) stops
//! the thread between two instructions. pmbench is a closed loop: one access
//! in flight, the next issued only when it completes. So a stall of length
//! S is seen by exactly one timed access, which takes S plus its memory
//! latency; no access is issued during the stall, so none other is delayed.
//! (An open-loop source, issuing at rate r regardless, would see about r*S
//! accesses delayed by amounts uniform on (0, S], r*max(0, S - T) of them
//! above T; that is not what a timing loop measures.) The count above a
//! threshold T is therefore the number of stalls with S + latency >= T,
//! exact given the stalls; kernel work charged in one fault, or within
//! one tick outside any fault (a scan, interrupts, race debts), makes one
//! stall.
//!
//! Left out: the share of the loop spent outside the timed window (taken as
//! none: a stall always lands in a timed access); the delayed access is
//! also counted once at its plain memory latency (totals are high by the
//! number of stalls, a negligible share); stalls while the thread runs a
//! compute phase are not timed; wakeup latency of sleeping threads; cache
//! hits (every access is a miss at the op's latency).

use numalab_record::AccessLatency;

/// Log2 bins: bin `i` holds latencies in `[2^i, 2^(i+1))` ns (bin 0 also
/// holds anything below 2 ns); the last bin holds everything above.
pub const NR_BINS: usize = 40;

/// The bin of a latency, ns.
pub fn bin(ns: f64) -> usize {
    // log2 of the whole ns, read off the exponent of the value clamped to
    // [1, 2^NR_BINS]: for x >= 1, x and its integer part lie between the
    // same powers of two. (The float-to-integer conversion it replaces
    // was a fifth of the time of closing a stall.)
    let x = ns.max(1.0).min((1u64 << NR_BINS) as f64);
    let exponent = ((x.to_bits() >> 52) & 0x7ff) as usize - 1023;
    exponent.min(NR_BINS - 1)
}

/// One task's access latencies. The bins are inline: every op step of
/// every task adds to them, and a pointer to a heap vector per task was a
/// cache miss per step.
#[derive(Clone, Debug)]
pub struct TaskLatency {
    /// Any access counted yet.
    counted: bool,
    /// Expected read accesses per bin (fractional: rate x time).
    reads: [f64; NR_BINS],
    /// Expected write accesses per bin.
    writes: [f64; NR_BINS],
    /// Reads and writes at or above the threshold.
    over: [f64; 2],
    /// Slowest access seen, ns.
    max_ns: f64,
    /// Latency of the task's last timed access, ns (0 before any).
    cur_ns: f64,
    /// Write share of its current operation.
    cur_write: f64,
    /// Write share carried between stalls: a stall's one access is a write
    /// once this passes 1 (deterministic, right in proportion).
    write_credit: f64,
}

impl Default for TaskLatency {
    fn default() -> Self {
        TaskLatency {
            counted: false,
            reads: [0.0; NR_BINS],
            writes: [0.0; NR_BINS],
            over: [0.0; 2],
            max_ns: 0.0,
            cur_ns: 0.0,
            cur_write: 0.0,
            write_credit: 0.0,
        }
    }
}

impl TaskLatency {
    /// `count` accesses at `lat_ns` each, a share `write` of them writes.
    pub fn add(&mut self, lat_ns: f64, count: f64, write: f64, threshold_ns: f64) {
        if count <= 0.0 || !lat_ns.is_finite() {
            return;
        }
        self.counted = true;
        let b = bin(lat_ns);
        self.reads[b] += count * (1.0 - write);
        self.writes[b] += count * write;
        if lat_ns >= threshold_ns {
            self.over[0] += count * (1.0 - write);
            self.over[1] += count * write;
        }
        self.max_ns = self.max_ns.max(lat_ns);
        self.cur_ns = lat_ns;
        self.cur_write = write;
    }

    /// One access delayed by a stall of `stall_ns`.
    pub fn add_stall(&mut self, stall_ns: f64, threshold_ns: f64) {
        if stall_ns <= 0.0 {
            return;
        }
        self.write_credit += self.cur_write;
        let write = if self.write_credit >= 1.0 {
            self.write_credit -= 1.0;
            1.0
        } else {
            0.0
        };
        let lat = stall_ns + self.cur_ns;
        let w = self.cur_write;
        self.add(lat, 1.0, write, threshold_ns);
        // `add` set the current op's figures to the stalled access's.
        self.cur_ns = lat - stall_ns;
        self.cur_write = w;
    }

    /// True once any access was counted.
    pub fn is_empty(&self) -> bool {
        !self.counted
    }

    /// Accesses counted, all bins.
    pub fn total(&self) -> f64 {
        self.reads.iter().chain(&self.writes).sum()
    }

    /// Accesses at or above the threshold.
    pub fn over_total(&self) -> f64 {
        self.over[0] + self.over[1]
    }

    /// Adds another task's histogram into this one.
    pub fn merge(&mut self, o: &TaskLatency) {
        if o.is_empty() {
            return;
        }
        self.counted = true;
        for i in 0..NR_BINS {
            self.reads[i] += o.reads[i];
            self.writes[i] += o.writes[i];
        }
        self.over[0] += o.over[0];
        self.over[1] += o.over[1];
        self.max_ns = self.max_ns.max(o.max_ns);
    }

    /// The Run record's form: counts rounded, trailing empty bins cut.
    pub fn figures(&self, threshold_us: u64) -> Option<AccessLatency> {
        if self.is_empty() {
            return None;
        }
        let round = |v: &[f64]| -> Vec<u64> {
            let mut x: Vec<u64> = v.iter().map(|c| c.round() as u64).collect();
            while x.last() == Some(&0) {
                x.pop();
            }
            x
        };
        Some(AccessLatency {
            reads: round(&self.reads),
            writes: round(&self.writes),
            threshold_us,
            reads_over: self.over[0].round() as u64,
            writes_over: self.over[1].round() as u64,
            max_ns: self.max_ns.round() as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_log2_of_nanoseconds() {
        assert_eq!(bin(0.5), 0);
        assert_eq!(bin(100.0), 6);
        assert_eq!(bin(1_000_000.0), 19);
        assert_eq!(bin(1_048_576.0), 20);
        assert_eq!(bin(1e30), NR_BINS - 1);
        assert_eq!(bin(f64::INFINITY), NR_BINS - 1);
        assert_eq!(bin(f64::NAN), 0);
        assert_eq!(bin(-5.0), 0);
    }

    #[test]
    fn bins_are_the_log2_of_the_whole_nanoseconds() {
        // Against ilog2 of the integer part, around every power of two
        // and in between.
        let by_integer = |ns: f64| {
            let n = ns.max(1.0).min(u64::MAX as f64 / 2.0) as u64;
            (n.max(1).ilog2() as usize).min(NR_BINS - 1)
        };
        for k in 0..70 {
            let p = 2f64.powi(k);
            for x in [p, p.next_down(), p.next_up(), p * 1.5, p - 0.5, p + 0.5] {
                assert_eq!(bin(x), by_integer(x), "{x}");
            }
        }
        let mut x = 0.3;
        while x < 1e15 {
            assert_eq!(bin(x), by_integer(x), "{x}");
            x *= 1.37;
        }
    }

    #[test]
    fn a_stall_delays_exactly_one_access_by_its_length() {
        let mut l = TaskLatency::default();
        l.add(100.0, 1e6, 0.5, 1e6);
        l.add_stall(2e6, 1e6);
        l.add_stall(5e5, 1e6);
        let f = l.figures(1000).unwrap();
        // 1e6 plain accesses split evenly, two delayed ones.
        assert_eq!(f.reads[6] + f.writes[6], 1_000_000);
        assert_eq!(f.reads_over + f.writes_over, 1, "only the 2 ms stall");
        assert_eq!(f.max_ns, 2_000_100);
        assert_eq!(
            f.reads.iter().sum::<u64>() + f.writes.iter().sum::<u64>(),
            1_000_002
        );
        // The write credit: one of two stalls at a write share of 0.5.
        assert_eq!(f.reads[bin(2_000_100.0)], 1, "credit 0.5: a read");
        assert_eq!(f.writes[bin(500_100.0)], 1, "credit 1.0: a write");
    }
}
