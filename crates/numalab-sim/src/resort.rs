//! Sorting again a list that was sorted before and has moved a little
//! since: the streams of one region from tick to tick, as the shared-line
//! index (physics/sharing.rs) and a fault's race read (engine/fault.rs)
//! sort them. Each element is first put back at the rank its id had in the
//! previous order; an insertion sort then finishes what a tick's moves
//! disordered, handing over to `sort_unstable` on a list far out of order.
//!
//! Only the cost depends on the previous order: for a total order (every
//! caller's elements differ) the result is the one `sort_unstable` gives.

/// What a re-sort keeps between sorts: its scratch, so that sorting a list
/// every tick does not allocate.
#[derive(Clone, Debug)]
pub(crate) struct Resort<T> {
    /// By id: 1 + its rank in the previous order (0: none); all zero
    /// between sorts.
    rank: Vec<u32>,
    /// Elements placed at their id's previous rank.
    slots: Vec<Option<T>>,
    /// Elements with no previous rank, or whose rank was taken.
    spill: Vec<T>,
}

impl<T> Default for Resort<T> {
    fn default() -> Self {
        Resort {
            rank: Vec::new(),
            slots: Vec::new(),
            spill: Vec::new(),
        }
    }
}

impl<T: Ord + Copy> Resort<T> {
    /// Sorts `v`, the id of each element given by `id`, starting from
    /// `last`: the ids in the order the previous sort left them.
    pub(crate) fn sort(&mut self, v: &mut Vec<T>, last: &[usize], id: impl Fn(&T) -> usize) {
        if let Some(top) = v.iter().map(&id).chain(last.iter().copied()).max() {
            if self.rank.len() <= top {
                self.rank.resize(top + 1, 0);
            }
        }
        for (k, &i) in last.iter().enumerate() {
            self.rank[i] = k as u32 + 1;
        }
        self.slots.clear();
        self.slots.resize(last.len(), None);
        self.spill.clear();
        for &x in v.iter() {
            match self.rank[id(&x)] {
                0 => self.spill.push(x),
                r => match &mut self.slots[r as usize - 1] {
                    slot @ None => *slot = Some(x),
                    Some(_) => self.spill.push(x),
                },
            }
        }
        for &i in last {
            self.rank[i] = 0;
        }
        v.clear();
        v.extend(self.slots.iter().flatten());
        v.extend_from_slice(&self.spill);
        let budget = 4 * v.len();
        insertion_sort_or_hand_over(v, budget);
    }
}

/// Sorts `v` by insertion while that has shifted at most `budget`
/// elements, then by `sort_unstable`: linear on a list a few places out of
/// order, and on any other list a sort plus at most `budget + v.len()`
/// wasted shifts (the check comes after each element's insertion).
pub(crate) fn insertion_sort_or_hand_over<T: Ord + Copy>(v: &mut [T], budget: usize) {
    let mut shifted = 0;
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
        shifted += i - j;
        if shifted > budget {
            v.sort_unstable();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// From any previous order (ids repeated, missing or new), the
        /// list comes out as `sort_unstable` gives it, and the rank
        /// scratch is left all zero for the next sort.
        #[test]
        fn a_resort_is_a_sort_from_any_previous_order(
            v in proptest::collection::vec((0u64..100, 0usize..30), 0..60),
            last in proptest::collection::vec(0usize..40, 0..60),
        ) {
            let mut r = Resort::default();
            let mut got = v.clone();
            r.sort(&mut got, &last, |&(_, id)| id);
            let mut want = v;
            want.sort_unstable();
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert!(r.rank.iter().all(|&k| k == 0));
        }

        /// The hand-over keeps it a sort however small the budget.
        #[test]
        fn insertion_with_hand_over_sorts(
            mut v in proptest::collection::vec(0u32..50, 0..80),
            budget in 0usize..200,
        ) {
            let mut want = v.clone();
            want.sort_unstable();
            insertion_sort_or_hand_over(&mut v, budget);
            proptest::prop_assert_eq!(v, want);
        }
    }
}
