//! [`max_min_fair`](super::max_min_fair) when nothing saturates: the rates
//! its rounds give, bit for bit, without their passes over the resources.
//!
//! The general rounds (`progressive_filling`) raise a common level; in a
//! round the level rises to the nearer of the smallest cap left and the
//! first resource to fill. When every resource's demand at the flows' caps
//! (the sum of share x cap over the flows using it) is below its capacity,
//! a resource's room always outlasts the smallest cap left: the level at
//! the k-th round has used at most that sum, so the resource step is
//! larger than the cap step and `min` returns the cap step itself, and no
//! resource reaches the saturation test. The rounds then only freeze flows
//! at their caps, in the order of the caps, which this walks with the caps
//! sorted: one pass, not one pass over resources and flows per round.
//! pmbench's 64 flows on clx-2s-104 never come near a controller's or a
//! link's capacity, and took 64 rounds of the general loop every tick.
//!
//! Left out: any input where a resource could saturate, a cap is NaN or
//! infinite, or a share is negative or NaN: those take the general rounds.

use super::Demand;
use std::cmp::Ordering;

/// Room kept below each capacity before the shortcut is trusted: the
/// rounds' floating-point sums err by about 1e-13 of a capacity, far
/// below it.
const MARGIN: f64 = 1e-6;

/// The general rounds freeze a flow at `cap - level <= cap * FREEZE`.
const FREEZE: f64 = 1e-9;

/// What [`uncapped_fill`] keeps between calls (engine/mod.rs holds one
/// for the run's solves): its vectors' room, and the flows' order by cap.
#[derive(Clone, Debug, Default)]
pub struct FairScratch {
    /// `(cap bits, flow index)` of the active flows, by cap, at the last
    /// call; the bits of a positive finite cap order as its value does.
    order: Vec<(u64, usize)>,
    /// The flows still rising, `order` less those frozen.
    rising: Vec<(u64, usize)>,
    /// Flows left rising in a round.
    kept: Vec<(u64, usize)>,
    /// Demand at the caps, per resource.
    want: Vec<f64>,
    /// Flows already placed while `order` is rebuilt.
    seen: Vec<bool>,
}

/// Shifts past this many per flow and the nearly sorted start is given up
/// for a full sort (an order that changed a lot).
const SHIFTS_PER_FLOW: usize = 8;

impl FairScratch {
    /// Fills `order` with the active flows of `demands` sorted by (cap,
    /// index): the last call's flows in its order first, then the new
    /// ones, then an insertion sort (a full sort if that takes long).
    fn sort_by_cap(&mut self, demands: &[Demand]) {
        let n = demands.len();
        self.seen.clear();
        self.seen.resize(n, false);
        let active = |i: usize| i < n && demands[i].cap > 0.0;
        let mut k = 0;
        for j in 0..self.order.len() {
            let i = self.order[j].1;
            if active(i) {
                self.order[k] = (demands[i].cap.to_bits(), i);
                self.seen[i] = true;
                k += 1;
            }
        }
        self.order.truncate(k);
        for (i, d) in demands.iter().enumerate() {
            if !self.seen[i] && d.cap > 0.0 {
                self.order.push((d.cap.to_bits(), i));
            }
        }
        let budget = SHIFTS_PER_FLOW * self.order.len();
        let mut shifts = 0;
        for j in 1..self.order.len() {
            let x = self.order[j];
            let mut at = j;
            while at > 0 && self.order[at - 1] > x {
                self.order[at] = self.order[at - 1];
                at -= 1;
            }
            self.order[at] = x;
            shifts += j - at;
            if shifts > budget {
                self.order.sort_unstable();
                return;
            }
        }
    }
}

/// The rates [`super::max_min_fair`]'s rounds give when no resource can
/// saturate, or `None` when one could (or an input is not finite), for
/// the general rounds to take.
///
/// `scratch` keeps the order of the flows by cap from the last call: from
/// one tick to the next most flows keep their caps' order, so the sort
/// starts from it and moves a few (the order found is the same from any
/// start: the keys are distinct).
pub(super) fn uncapped_fill(
    capacity: &[f64],
    demands: &[Demand],
    scratch: &mut FairScratch,
) -> Option<Vec<f64>> {
    let want = &mut scratch.want;
    want.clear();
    want.resize(capacity.len(), 0.0);
    for d in demands {
        if !d.cap.is_finite() {
            return None;
        }
        if d.cap <= 0.0 {
            // Never active in the rounds: rate 0, loads nothing.
            continue;
        }
        for &(r, s) in d.uses.iter() {
            // Negative or NaN.
            if s.is_nan() || s < 0.0 {
                return None;
            }
            want[r] += s * d.cap;
        }
    }
    // Each sum at most its capacity less the margin (NaN on either side
    // is not).
    let within = |w: f64, c: f64| {
        matches!(
            w.partial_cmp(&(c * (1.0 - MARGIN))),
            Some(Ordering::Less | Ordering::Equal)
        )
    };
    if !want.iter().zip(capacity).all(|(&w, &c)| within(w, c)) {
        return None;
    }
    let n = demands.len();
    let mut rate = vec![0.0; n];
    scratch.sort_by_cap(demands);
    // The rounds drop frozen flows from a copy: `order` stays whole for
    // the next call.
    let FairScratch {
        order,
        rising: order_now,
        kept,
        ..
    } = scratch;
    order_now.clear();
    order_now.extend_from_slice(order);
    let order = order_now;
    // order[head..] are the flows still rising, by cap.
    let mut head = 0;
    let mut level = 0.0_f64;
    for _ in 0..=n {
        if head == order.len() {
            break;
        }
        // The rounds' step: the smallest `cap - level` (subtraction keeps
        // the caps' order), the resources' being larger.
        let step = (f64::from_bits(order[head].0) - level).max(0.0);
        level += step;
        // Only caps up to just above the level can pass the freeze test:
        // above level * (1 + 1e-8), cap - level exceeds cap * 1e-9.
        let bound = level * (1.0 + 1e-8);
        let mut end = head;
        while end < order.len() && f64::from_bits(order[end].0) <= bound {
            end += 1;
        }
        kept.clear();
        for &(bits, i) in &order[head..end] {
            let cap = f64::from_bits(bits);
            if cap - level <= cap * FREEZE {
                rate[i] = level.min(cap);
            } else {
                kept.push((bits, i));
            }
        }
        head = end - kept.len();
        order[head..end].copy_from_slice(kept);
    }
    Some(rate)
}

#[cfg(test)]
mod tests {
    use super::super::{progressive_filling, Demand};
    use super::*;

    fn demand(cap: f64, uses: &[(usize, f64)]) -> Demand {
        Demand {
            cap,
            uses: uses.to_vec().into(),
        }
    }

    #[test]
    fn a_resource_that_could_saturate_takes_the_general_rounds() {
        let d = [demand(10.0, &[(0, 1.0)]), demand(10.0, &[(0, 1.0)])];
        assert!(uncapped_fill(&[19.0], &d, &mut FairScratch::default()).is_none());
        assert!(uncapped_fill(&[25.0], &d, &mut FairScratch::default()).is_some());
        assert!(uncapped_fill(
            &[25.0],
            &[demand(f64::NAN, &[])],
            &mut FairScratch::default()
        )
        .is_none());
        assert!(uncapped_fill(
            &[25.0],
            &[demand(1.0, &[(0, -1.0)])],
            &mut FairScratch::default()
        )
        .is_none());
    }

    proptest::proptest! {
        /// Whenever the shortcut answers, it answers as the general
        /// rounds do, bit for bit: caps drawn from a few values (ties),
        /// values a few ulps apart, and spread ones.
        #[test]
        fn uncapped_fill_is_the_general_rounds(
            caps in proptest::collection::vec((0usize..4, 0u64..4, 0.0f64..50.0), 1..80),
            shares in proptest::collection::vec((0usize..5, 0.0f64..2.0), 1..400),
            room in 1.0f64..3.0,
        ) {
            let base: [f64; 4] = [3.5, 7.25, 0.0, 12.0];
            let demands: Vec<Demand> = caps
                .iter()
                .enumerate()
                .map(|(i, &(k, ulps, x))| {
                    let cap = if k == 3 { x } else { f64::from_bits(base[k].to_bits() + ulps) };
                    let uses: Vec<(usize, f64)> = (0..3)
                        .map(|j| shares[(i * 3 + j) % shares.len()])
                        .collect();
                    demand(cap, &uses)
                })
                .collect();
            let mut want = [0.0; 5];
            for d in &demands {
                for &(r, s) in d.uses.iter() {
                    want[r] += s * d.cap.max(0.0);
                }
            }
            let capacity: Vec<f64> = want.iter().map(|w| w * room + 1.0).collect();
            // One scratch over three solves, as the engine's over its
            // ticks: the order kept from the first is wrong for the
            // reversed flows, and names flows the half set lacks.
            let mut scratch = FairScratch::default();
            let reversed: Vec<Demand> = demands.iter().rev().cloned().collect();
            let half = demands[..demands.len() / 2].to_vec();
            for (k, ds) in [&demands, &reversed, &half].into_iter().enumerate() {
                let fast = uncapped_fill(&capacity, ds, &mut scratch);
                proptest::prop_assert!(k > 0 || fast.is_some() || room < 1.01);
                if let Some(fast) = fast {
                    let slow = progressive_filling(&capacity, ds);
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    proptest::prop_assert_eq!(bits(&fast), bits(&slow));
                }
            }
        }
    }
}
