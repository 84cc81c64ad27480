//! Searching a sorted slice from a guess: the partition point of a
//! monotone test found by galloping out from where the last answer was, at
//! the log of the distance to the new one instead of the log of the
//! slice's length. The physics' shared-line windows and the fault path's
//! racers ask such searches thousands of times a tick with answers that
//! barely move. Leaves out everything but the search.

/// `s.partition_point(pred)` searched from `guess`: the same answer from
/// any guess (`pred` holds on a prefix of `s`), two probes when the guess
/// is it, and the log of the distance to it otherwise.
pub(crate) fn partition_point_from<T>(s: &[T], guess: usize, pred: impl Fn(&T) -> bool) -> usize {
    let g = guess.min(s.len());
    if g == 0 || pred(&s[g - 1]) {
        gallop_up(s, g, pred)
    } else {
        gallop_down(s, g - 1, pred)
    }
}

/// `s.partition_point(pred)` when `pred` holds for all of `s[..from]`:
/// steps of 1, 2, 4, ... up from `from`, then a binary search in the last
/// step. Costs the log of the distance to the answer, not of `s.len()`.
pub(crate) fn gallop_up<T>(s: &[T], from: usize, pred: impl Fn(&T) -> bool) -> usize {
    let (mut lo, mut step) = (from, 1);
    let hi = loop {
        let probe = lo + step;
        if probe > s.len() {
            break s.len();
        }
        if pred(&s[probe - 1]) {
            lo = probe;
            step *= 2;
        } else {
            break probe - 1;
        }
    };
    lo + s[lo..hi].partition_point(pred)
}

/// `s.partition_point(pred)` when `pred` fails for all of `s[to..]`:
/// [`gallop_up`] going down from `to`.
pub(crate) fn gallop_down<T>(s: &[T], to: usize, pred: impl Fn(&T) -> bool) -> usize {
    let (mut hi, mut step) = (to, 1);
    let lo = loop {
        if step > hi {
            break 0;
        }
        let probe = hi - step;
        if pred(&s[probe]) {
            break probe + 1;
        }
        hi = probe;
        step *= 2;
    };
    lo + s[lo..hi].partition_point(pred)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Galloping from a known side of the answer finds what a binary
        /// search over the whole slice finds.
        #[test]
        fn gallops_find_the_partition_point(
            mut v in proptest::collection::vec(0u64..50, 0..60),
            x in 0u64..50,
            at in 0usize..61,
        ) {
            v.sort_unstable();
            let want = v.partition_point(|&p| p <= x);
            // Any start at or before the answer for the way up, at or after
            // it for the way down.
            let from = at.min(want);
            proptest::prop_assert_eq!(gallop_up(&v, from, |&p| p <= x), want);
            let to = want + at.min(v.len() - want);
            proptest::prop_assert_eq!(gallop_down(&v, to, |&p| p <= x), want);
            // From any guess at all, in range or past the end.
            proptest::prop_assert_eq!(partition_point_from(&v, at, |&p| p <= x), want);
        }
    }
}
