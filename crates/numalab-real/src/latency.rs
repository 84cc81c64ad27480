//! Per-access latency of a real run's random phases, as pmbench measures it
//! (proposal 2; `--set numalab.access_latency=1`, off by default in a real
//! run): the worker reads the monotonic clock after every access and
//! counts the time since the previous reading in a log2 histogram, reads
//! and writes apart, in the same bins and with the same outlier threshold
//! as the model (numalab-sim `engine/latency.rs`), so the Run records of
//! model and kernel compare bin by bin.
//!
//! One reading per access, not two: the interval between two readings is
//! the access plus the loop's own few instructions (page and line draws),
//! which is what a closed loop's stall lengthens; a stall (a hinting fault,
//! the task's own scan, being preempted) lands in exactly one interval.
//! The worker restarts the interval after its own bookkeeping (the
//! `move_pages` query every 4096 accesses, the stop check), so that is
//! never counted.
//!
//! Left out: streaming phases (their chunks are not timed), `rdtsc` (the
//! vDSO clock costs ~20 ns natively, more under TCG, where it adds to every
//! interval alike), and compute phases.

use numalab_record::AccessLatency;

/// Log2 bins: bin `i` holds latencies in `[2^i, 2^(i+1))` ns, bin 0 also
/// anything below 2 ns, the last everything above (as the model's).
pub const NR_BINS: usize = 40;

/// The bin of a latency, ns.
pub fn bin(ns: u64) -> usize {
    (ns.max(1).ilog2() as usize).min(NR_BINS - 1)
}

/// One thread's timed accesses.
#[derive(Clone, Debug)]
pub struct AccessTimer {
    reads: [u64; NR_BINS],
    writes: [u64; NR_BINS],
    over: [u64; 2],
    max_ns: u64,
    threshold_ns: u64,
}

impl AccessTimer {
    /// An empty timer counting accesses at or above `threshold_us` apart.
    pub fn new(threshold_us: u64) -> AccessTimer {
        AccessTimer {
            reads: [0; NR_BINS],
            writes: [0; NR_BINS],
            over: [0; 2],
            max_ns: 0,
            threshold_ns: threshold_us.saturating_mul(1000),
        }
    }

    /// One access that took `ns`.
    pub fn record(&mut self, ns: u64, write: bool) {
        let w = usize::from(write);
        if write {
            self.writes[bin(ns)] += 1;
        } else {
            self.reads[bin(ns)] += 1;
        }
        if ns >= self.threshold_ns {
            self.over[w] += 1;
        }
        self.max_ns = self.max_ns.max(ns);
    }

    /// The Run record's form (trailing empty bins cut); `None` when nothing
    /// was timed.
    pub fn figures(&self) -> Option<AccessLatency> {
        let cut = |v: &[u64]| -> Vec<u64> {
            let mut x = v.to_vec();
            while x.last() == Some(&0) {
                x.pop();
            }
            x
        };
        let reads = cut(&self.reads);
        let writes = cut(&self.writes);
        if reads.is_empty() && writes.is_empty() {
            return None;
        }
        Some(AccessLatency {
            reads,
            writes,
            threshold_us: self.threshold_ns / 1000,
            reads_over: self.over[0],
            writes_over: self.over[1],
            max_ns: self.max_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_land_in_log2_bins_and_the_slow_ones_are_counted() {
        let mut t = AccessTimer::new(1000);
        assert_eq!(t.figures(), None);
        t.record(100, false);
        t.record(150, true);
        t.record(2_000_000, false);
        t.record(999_999, true);
        let f = t.figures().unwrap();
        assert_eq!(f.reads[6], 1);
        assert_eq!(f.writes[7], 1);
        assert_eq!(f.reads.len(), 21, "2 ms is bin 20");
        assert_eq!((f.reads_over, f.writes_over), (1, 0));
        assert_eq!(f.max_ns, 2_000_000);
        assert_eq!(f.threshold_us, 1000);
        assert_eq!(bin(0), 0);
        assert_eq!(bin(u64::MAX), NR_BINS - 1);
    }
}
