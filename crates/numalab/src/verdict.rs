//! Verdicts: how a modeled figure stands against the published one, by
//! one rule for every figure of every reproduction ([`judge`]).
//!
//! Every published figure of a reproduction declares a tolerance with the
//! reason for its width (run-to-run noise of the benchmark, a figure read
//! off a chart, a counter that only its order of magnitude means). The
//! verdict is then one of:
//! - within tolerance;
//! - right direction, off by N x: outside the tolerance, and the posting
//!   and the model both changed beyond the tolerance, the same way,
//!   against the reference (the base configuration's figure, or the
//!   neutral value of a change or ratio);
//! - no change, off by N x: the posting changed beyond the tolerance, the
//!   model did not (a ratio of 1.000 against a published 0.54);
//! - wrong direction: both changed, opposite ways;
//! - off by N x: outside the tolerance, no direction to judge (a figure
//!   of the base configuration, or a posting that saw no change beyond
//!   the tolerance);
//! - no modeled figure: NaN or infinite where the runs could model it;
//! - not modeled at this scale: the runs could not model it (NUMA
//!   balancing never updated a PTE in a run at a `--scale` below 1);
//!   neither a pass nor a miss.
//!
//! A figure the model is known to miss carries the mechanism behind the
//! miss and where it is documented; `--check` fails on misses that are not
//! declared, on missing figures, and on declared misses that hold at the
//! scale they are declared for (reproduce_check.rs), so it catches
//! regressions without hiding known gaps or keeping stale ones.
//! Left out: statistical tests over iterations (a published figure is
//! usually one mean with no spread to test against).

/// How close a modeled figure must come to a published one, and why.
#[derive(Clone, Copy, Debug)]
pub enum Tolerance {
    /// Within this fraction of the published value (0.1 = ±10 %).
    Rel(f64, &'static str),
    /// Within this absolute distance (figures published as 0 or near it).
    Abs(f64, &'static str),
    /// At least the published value (a figure published as "more than").
    AtLeast(&'static str),
}

impl Tolerance {
    /// Whether `modeled` is within tolerance of `published`.
    pub fn holds(&self, published: f64, modeled: f64) -> bool {
        match *self {
            Tolerance::Rel(f, _) => (modeled - published).abs() <= f * published.abs(),
            Tolerance::Abs(d, _) => (modeled - published).abs() <= d,
            Tolerance::AtLeast(_) => modeled >= published,
        }
    }

    /// The tolerance as a column entry (`±10%`, `±0.5`).
    pub fn label(&self) -> String {
        match *self {
            Tolerance::Rel(f, _) => format!("±{}%", trim(f * 100.0)),
            Tolerance::Abs(d, _) => format!("±{}", trim(d)),
            Tolerance::AtLeast(_) => ">=".to_string(),
        }
    }

    /// Why the tolerance is as wide as it is.
    pub fn reason(&self) -> &'static str {
        match *self {
            Tolerance::Rel(_, r) | Tolerance::Abs(_, r) | Tolerance::AtLeast(r) => r,
        }
    }
}

/// A number without trailing zeros.
fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The judgement of one figure.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Within the declared tolerance.
    Within,
    /// Outside it; the posting and the model both changed beyond the
    /// tolerance against the reference, the same way. The factor is >= 1.
    RightDirection(f64),
    /// Outside it; the posting changed beyond the tolerance, the model did
    /// not (a ratio of 1.000 against a published 0.54). The factor is >= 1.
    NoChange(f64),
    /// Outside it; the posting and the model changed beyond the tolerance,
    /// opposite ways.
    WrongDirection,
    /// Outside it, no direction to judge (a base configuration's figure,
    /// or a posting whose own change is within the tolerance); the factor
    /// is >= 1.
    Off(f64),
    /// The model gave no number (NaN, or infinite: a ratio over 0) though
    /// its runs could model the figure.
    NoFigure,
    /// The runs behind the figure could not model it ([`Coverage::NoScan`]):
    /// neither a pass nor a miss.
    NotModeled,
}

impl Verdict {
    /// Whether the figure missed its tolerance (what a known miss
    /// declares and `--check` counts). [`Verdict::NotModeled`] is not a
    /// miss, nor a pass.
    pub fn is_miss(&self) -> bool {
        !matches!(self, Verdict::Within | Verdict::NotModeled)
    }

    /// The verdict column's text.
    pub fn text(&self) -> String {
        match self {
            Verdict::Within => "within tolerance".into(),
            Verdict::RightDirection(f) => format!("right direction, off by {f:.2}x"),
            Verdict::NoChange(f) => format!("no change, off by {f:.2}x"),
            Verdict::WrongDirection => "wrong direction".into(),
            Verdict::Off(f) => format!("off by {f:.2}x"),
            Verdict::NoFigure => "no modeled figure".into(),
            Verdict::NotModeled => "not modeled at this scale".into(),
        }
    }
}

/// Whether the runs behind a figure could model it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// They could: the figure is judged, and a NaN is a missing figure.
    Modeled,
    /// The figure measures NUMA balancing, and at a `--scale` below 1 a
    /// run behind it (of its configuration, or of the configuration it is
    /// a ratio or change against) never updated a PTE: the run was over
    /// before balancing acted. Whatever the number (often 0/0), it says
    /// nothing about the published one.
    NoScan,
}

/// The reference a figure's direction is judged against: the published
/// and modeled values it changes from.
#[derive(Clone, Copy, Debug)]
pub struct Reference {
    /// Published reference value.
    pub published: f64,
    /// Modeled reference value.
    pub modeled: f64,
}

/// Judges `modeled` against `published` with `tol`, and against
/// `reference` for the direction when the figure has one. The one rule
/// for every figure of every reproduction:
/// - runs that could not model the figure ([`Coverage::NoScan`]): not
///   modeled, whatever the number;
/// - NaN or infinite: no modeled figure (a miss);
/// - within the tolerance: within;
/// - otherwise the direction: a change from the reference counts only
///   when it is larger than the tolerance (measured at the reference), so
///   a ratio of 1.000 and one of 0.9999 are both no change, and the
///   posting's own change must clear its tolerance to have a direction.
pub fn judge(
    published: f64,
    modeled: f64,
    tol: &Tolerance,
    reference: Option<Reference>,
    coverage: Coverage,
) -> Verdict {
    if coverage == Coverage::NoScan {
        return Verdict::NotModeled;
    }
    if !modeled.is_finite() {
        return Verdict::NoFigure;
    }
    if tol.holds(published, modeled) {
        return Verdict::Within;
    }
    let factor = off_factor(published, modeled);
    let Some(r) = reference else {
        return Verdict::Off(factor);
    };
    if !r.modeled.is_finite() {
        return Verdict::Off(factor);
    }
    let want = change(tol, r.published, published);
    let got = change(tol, r.modeled, modeled);
    match (want, got) {
        // The posting saw no change: nothing to judge a direction by.
        (0, _) => Verdict::Off(factor),
        (_, 0) => Verdict::NoChange(factor),
        (w, g) if w == g => Verdict::RightDirection(factor),
        _ => Verdict::WrongDirection,
    }
}

/// The direction of a change from `from` to `to` (-1, 0, 1): 0 when it
/// is within `tol` measured at `from` (a relative tolerance is a share of
/// `from`; "at least" has no width, so only equal values are no change).
fn change(tol: &Tolerance, from: f64, to: f64) -> i8 {
    let width = match *tol {
        Tolerance::Rel(f, _) => f * from.abs(),
        Tolerance::Abs(d, _) => d,
        Tolerance::AtLeast(_) => 0.0,
    };
    if (to - from).abs() <= width {
        0
    } else if to > from {
        1
    } else {
        -1
    }
}

/// How many times one value is off the other (>= 1); infinite when one
/// of them is 0 and the other is not, or when they differ in sign.
fn off_factor(published: f64, modeled: f64) -> f64 {
    if published == modeled {
        return 1.0;
    }
    if published == 0.0 || modeled == 0.0 || published.signum() != modeled.signum() {
        return f64::INFINITY;
    }
    let r = modeled / published;
    r.max(1.0 / r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Coverage::{Modeled, NoScan};

    const TEN: Tolerance = Tolerance::Rel(0.1, "test");

    /// A ratio's reference: 1 published, 1 modeled.
    const RATIO: Option<Reference> = Some(Reference {
        published: 1.0,
        modeled: 1.0,
    });

    fn j(published: f64, modeled: f64, tol: &Tolerance, r: Option<Reference>) -> Verdict {
        judge(published, modeled, tol, r, Modeled)
    }

    #[test]
    fn within_relative_tolerance() {
        assert_eq!(j(100.0, 109.0, &TEN, None), Verdict::Within);
        assert_eq!(j(100.0, 91.0, &TEN, None), Verdict::Within);
        assert_eq!(j(100.0, 120.0, &TEN, None), Verdict::Off(1.2));
    }

    #[test]
    fn absolute_tolerance_judges_a_published_zero() {
        let t = Tolerance::Abs(0.5, "test");
        assert_eq!(j(0.0, 0.4, &t, None), Verdict::Within);
        assert_eq!(j(0.0, 0.6, &t, None), Verdict::Off(f64::INFINITY));
    }

    #[test]
    fn direction_is_judged_against_the_reference() {
        // Published 213 -> 114 (faster); modeled 109 -> 67 is faster too.
        let r = Reference {
            published: 213.0,
            modeled: 109.0,
        };
        let v = j(114.0, 67.0, &TEN, Some(r));
        let Verdict::RightDirection(f) = v else {
            panic!("{v:?}");
        };
        assert!((f - 114.0 / 67.0).abs() < 1e-9);
        // Modeled slower than its own base: the wrong way.
        assert_eq!(j(114.0, 150.0, &TEN, Some(r)), Verdict::WrongDirection);
    }

    #[test]
    fn no_published_change_means_no_direction() {
        let r = Reference {
            published: 16300.0,
            modeled: 10000.0,
        };
        assert_eq!(
            j(16300.0, 12000.0, &TEN, Some(r)),
            Verdict::Off(16300.0 / 12000.0)
        );
        // A published change within the tolerance is no change either:
        // 0.95 against 1 at +-10 % has no direction to miss.
        assert_eq!(j(0.95, 1.5, &TEN, RATIO), Verdict::Off(1.5 / 0.95));
    }

    #[test]
    fn a_ratio_of_exactly_one_is_no_change_whichever_way_the_posting_went() {
        let v = j(0.54, 1.0, &TEN, RATIO);
        assert_eq!(v, Verdict::NoChange(1.0 / 0.54));
        assert_eq!(v.text(), "no change, off by 1.85x");
        assert!(v.is_miss());
        assert_eq!(j(1.5, 1.0, &TEN, RATIO), Verdict::NoChange(1.5));
        // A hair off 1 is the same verdict: the rule is the tolerance, not
        // the sign of a rounding error.
        assert_eq!(
            j(0.54, 0.99997, &TEN, RATIO).text(),
            j(0.54, 1.00003, &TEN, RATIO).text()
        );
        assert!(matches!(
            j(0.54, 0.99997, &TEN, RATIO),
            Verdict::NoChange(_)
        ));
        // Beyond the tolerance the model has a direction.
        assert!(matches!(
            j(0.54, 0.8, &TEN, RATIO),
            Verdict::RightDirection(_)
        ));
        assert_eq!(j(0.54, 1.2, &TEN, RATIO), Verdict::WrongDirection);
        assert_eq!(j(1.5, 0.8, &TEN, RATIO), Verdict::WrongDirection);
    }

    #[test]
    fn a_change_in_points_is_judged_against_zero_with_the_absolute_width() {
        let two = Tolerance::Abs(2.0, "points");
        let zero = Some(Reference {
            published: 0.0,
            modeled: 0.0,
        });
        // +0.02 % against +7.88 %: the model's score did not move.
        let Verdict::NoChange(f) = j(7.88, 0.02, &two, zero) else {
            panic!("{:?}", j(7.88, 0.02, &two, zero));
        };
        assert!((f - 394.0).abs() < 1e-9, "{f}");
        assert!(matches!(
            j(7.88, 12.0, &two, zero),
            Verdict::RightDirection(_)
        ));
        assert_eq!(j(7.88, -3.0, &two, zero), Verdict::WrongDirection);
    }

    #[test]
    fn nan_and_infinity_are_no_figure_where_the_runs_could_model_it() {
        for m in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(j(1.0, m, &TEN, None), Verdict::NoFigure, "{m}");
            assert_eq!(j(0.54, m, &TEN, RATIO), Verdict::NoFigure, "{m}");
        }
        assert!(Verdict::NoFigure.is_miss());
        assert!(!Verdict::Within.is_miss());
    }

    #[test]
    fn a_figure_the_runs_could_not_model_is_neither_pass_nor_miss() {
        // 0/0 (numa_hint_faults / numa_pte_updates of a run that never
        // scanned), and even a number that happens to be within.
        for m in [f64::NAN, 0.69, 1.0, f64::INFINITY] {
            let v = judge(0.69, m, &TEN, RATIO, NoScan);
            assert_eq!(v, Verdict::NotModeled, "{m}");
            assert!(!v.is_miss());
        }
        assert_eq!(Verdict::NotModeled.text(), "not modeled at this scale");
    }

    #[test]
    fn at_least_holds_from_the_bound_up() {
        let t = Tolerance::AtLeast("more than");
        assert_eq!(j(20000.0, 25000.0, &t, None), Verdict::Within);
        assert_eq!(j(20000.0, 100.0, &t, None), Verdict::Off(200.0));
    }

    #[test]
    fn labels() {
        assert_eq!(TEN.label(), "±10%");
        assert_eq!(Tolerance::Abs(0.5, "x").label(), "±0.5");
    }
}
