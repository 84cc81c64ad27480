//! Request fast-forward: whole iterations of a request loop in one step.
//!
//! A task looping over a transaction body with no sleep in it (SPECjbb's
//! warehouse threads: three random-access ops and a compute, 25 us a
//! transaction) starts the same ops hundreds of times a tick. Within a tick
//! nothing those ops depend on changes while no page of their ranges needs
//! a fault: the rates come from the tick's solve (remembered per task in
//! exec.rs `TaskMemo`), the node mixes from the pages, which only a fault
//! moves. So once a task has run one whole iteration this tick and is at
//! the end of one, `k` more iterations cost `k` times one: the time, the
//! bytes per node and the latency histogram counts scale, the request and
//! iteration counters advance by `k`.
//!
//! Conditions, all checked at the end of an iteration: the body is only
//! random-access and compute phases; no page of any random op's range is
//! special (absent or marked for a hinting fault), so no access could
//! fault; the task owes no kernel work; every random op's rate is already
//! in the task's memo (one iteration ran this tick since the solve). The
//! last, partial iteration of the tick runs op by op as before.
//!
//! What differs from op-by-op: random ops over a VMA with special pages
//! elsewhere draw a Poisson count of accesses per op even when the range
//! has none to fault; skipped here, so later draws differ (results agree in
//! expectation, not byte for byte), and sums are formed in another order.
//! Lab switch `numalab.request_fast_forward` (0: op by op).
//!
//! Left out: bodies with streams, sleeps, nested repeats or phases with
//! side effects (policy, affinity, control), which run op by op.

use super::exec::{page_span, RateKey};
use super::Sim;
use crate::kernel::{CpuId, TaskId, VmaId};
use crate::physics::CACHE_LINE;
use numalab_workload::Phase;

/// One random op of the body, resolved for this tick.
#[derive(Clone, Copy, Debug)]
pub(super) struct BodyAccess {
    vma: VmaId,
    offset: u64,
    len: u64,
    accesses: f64,
    /// Accesses per ns at this tick's rate.
    per_ns: f64,
    mlp: f64,
    write: f64,
}

/// Whether any repeat in `phases` (at any depth) has a body of only random
/// accesses and compute: threads without one never try to fast-forward.
fn has_fast_body(phases: &[Phase]) -> bool {
    phases.iter().any(|ph| match ph {
        Phase::Repeat { body, .. } => {
            body.iter()
                .all(|b| matches!(b, Phase::Random { .. } | Phase::Compute { .. }))
                || has_fast_body(body)
        }
        _ => false,
    })
}

impl Sim {
    /// Task `t` on `cpu` has just finished an iteration of its innermost
    /// repeat with `left` ns of the tick to go: runs as many more whole
    /// iterations as fit (leaving at least one for the op-by-op path) and
    /// returns the time they took, 0 when the conditions above do not hold.
    pub(super) fn fast_forward_iterations(&mut self, t: TaskId, cpu: CpuId, left: f64) -> f64 {
        if !self.fast_forward || self.k.owed[t].debt_ns > 0.0 || left <= 0.0 {
            return 0.0;
        }
        let ex = &self.exec[t];
        let fast_body = match ex.fast_body {
            Some(b) => b,
            None => {
                let b = has_fast_body(&self.threads[ex.proc][ex.thread]);
                self.exec[t].fast_body = Some(b);
                b
            }
        };
        if !fast_body {
            return 0.0;
        }
        let ex = &self.exec[t];
        let depth = ex.frames.len();
        if depth < 2 {
            return 0.0;
        }
        let frame = &ex.frames[depth - 1];
        let body = Sim::phase_list(&self.threads[ex.proc][ex.thread], &ex.frames);
        if frame.pc != body.len() || frame.left < 2 {
            return 0.0;
        }
        // Cheap refusals first: a body with anything but random accesses
        // and compute (OLTP's sleep) is never fast-forwarded.
        if !body
            .iter()
            .all(|ph| matches!(ph, Phase::Random { .. } | Phase::Compute { .. }))
        {
            return 0.0;
        }
        let max_k = frame.left - 1;
        let mm = self.k.tasks[t].mm;
        let mut accesses = std::mem::take(&mut self.ff_body);
        accesses.clear();
        let smt_factor = self.smt_factor(cpu);
        let smt = smt_factor.to_bits();
        let mut period = 0.0;
        let mut ok = true;
        for ph in body {
            match *ph {
                Phase::Compute { ns } => {
                    // A compute op's rate is its SMT share (op_demand).
                    period += ns as f64 / smt_factor.max(1e-9);
                }
                Phase::Random {
                    region,
                    offset,
                    len,
                    accesses: n,
                    mlp,
                    write_fraction,
                    ..
                } => {
                    if n == 0 || len == 0 {
                        continue;
                    }
                    let vma = VmaId::new(region);
                    let v = &self.k.mem.mms[mm].vmas[vma];
                    let (from, to) = page_span(offset, len, v.page_shift);
                    // The chunk bitmap skips settled chunks 64 at a time.
                    if v.next_special(from, to).is_some() {
                        ok = false;
                        break;
                    }
                    let mlp = mlp.max(1.0);
                    let write = write_fraction.clamp(0.0, 1.0);
                    let key = RateKey::random(vma, offset, len, mlp, write, v.version, smt);
                    let Some(rate) = ex.memo.rate(&key) else {
                        ok = false;
                        break;
                    };
                    let per_ns = rate.max(1e-9) / CACHE_LINE;
                    period += n as f64 / per_ns;
                    accesses.push(BodyAccess {
                        vma,
                        offset,
                        len,
                        accesses: n as f64,
                        per_ns,
                        mlp,
                        write,
                    });
                }
                _ => unreachable!("refused above"),
            }
        }
        let k = if ok && period > 0.0 {
            ((left / period).floor() as u64).min(max_k)
        } else {
            0
        };
        if k > 0 {
            let kf = k as f64;
            for a in &accesses {
                let n = kf * a.accesses;
                self.lat_accesses(t, n, a.mlp / a.per_ns, a.write, n / a.per_ns);
                self.account_bytes(t, cpu, a.vma, a.offset, a.len, n * CACHE_LINE);
            }
            let ex = &mut self.exec[t];
            let frame = &mut ex.frames[depth - 1];
            frame.left -= k;
            if frame.request {
                ex.requests += k;
                self.requests += k;
            }
        }
        self.ff_body = accesses;
        k as f64 * period
    }
}
