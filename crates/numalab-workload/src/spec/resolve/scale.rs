//! Resolve, scaling: how `--scale` shrinks counts and sizes, and how a
//! region is cut into slices. Pure arithmetic on integers, shared by the
//! first pass (which checks that slices are not empty) and the second
//! (which places them in the scaled region). Left out: which quantities
//! scale (that is [`super::resolve`]'s rule).

use crate::spec::limits::{HPAGE, PAGE};

/// `x * f` rounded up, at least 1 unless `x` is 0. Products within 1e-9 of an
/// integer count as that integer, so `50 * 0.1` is 5, not 6.
pub(super) fn scale_up(x: u64, f: f64) -> u64 {
    if x == 0 || f == 1.0 {
        return x;
    }
    let v = x as f64 * f;
    let r = v.round();
    let out = if (v - r).abs() <= 1e-9 * r.max(1.0) {
        r
    } else {
        v.ceil()
    };
    (out as u64).max(1)
}

/// `x * f` rounded down, with the same snapping as [`scale_up`].
pub(super) fn scale_down(x: u64, f: f64) -> u64 {
    if f == 1.0 {
        return x;
    }
    let v = x as f64 * f;
    let r = v.round();
    let out = if (v - r).abs() <= 1e-9 * r.max(1.0) {
        r
    } else {
        v.floor()
    };
    out as u64
}

/// Byte range of slice `index` of `of` of a region of `bytes`: slices are
/// whole pages (2 MiB for a THP region holding at least `of` huge pages,
/// else 4 KiB), split as evenly as integers allow; the last slice also takes
/// any tail smaller than a page. Every byte is in exactly one slice.
pub fn slice_range(bytes: u64, thp: bool, index: u64, of: u64) -> (u64, u64) {
    let g = if thp && bytes / HPAGE >= of {
        HPAGE
    } else {
        PAGE
    };
    let pages = u128::from(bytes / g);
    let at = |k: u64| (u128::from(k) * pages / u128::from(of.max(1))) as u64 * g;
    let start = at(index);
    let end = if index + 1 >= of {
        bytes
    } else {
        at(index + 1)
    };
    (start, end.saturating_sub(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_snaps_float_noise() {
        assert_eq!(scale_up(50, 0.1), 5);
        assert_eq!(scale_up(800, 0.01), 8);
        assert_eq!(scale_up(3, 0.1), 1);
        assert_eq!(scale_up(0, 0.1), 0);
        assert_eq!(scale_up(7, 0.5), 4);
        assert_eq!(scale_down(786_432, 0.1), 78_643);
        assert_eq!(scale_down(30, 0.1), 3);
        assert_eq!(scale_down(7, 0.5), 3);
    }

    #[test]
    fn slices_tile_the_region() {
        for &(bytes, thp, of) in &[
            (1u64 << 30, false, 320u64),
            (1 << 30, true, 320),
            (3 << 30, true, 160),
            (3 << 30, false, 7),
            (5 * HPAGE + 3 * PAGE, true, 4),
            (5 * PAGE, false, 5),
        ] {
            let mut next = 0;
            for k in 0..of {
                let (o, l) = slice_range(bytes, thp, k, of);
                assert_eq!(o, next, "{bytes} {thp} {of} {k}");
                assert!(l > 0);
                next = o + l;
            }
            assert_eq!(next, bytes);
        }
        // THP granularity only when the region holds a huge page per slice.
        assert_eq!(slice_range(8 * HPAGE, true, 1, 4), (2 * HPAGE, 2 * HPAGE));
        assert_eq!(slice_range(3 * HPAGE, true, 1, 4).1 % PAGE, 0);
        assert_ne!(slice_range(3 * HPAGE, true, 1, 4).1 % HPAGE, 0);
    }
}
