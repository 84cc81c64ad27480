//! Verdicts: how a modeled figure stands against the published one.
//!
//! Every published figure of a reproduction declares a tolerance with the
//! reason for its width (run-to-run noise of the benchmark, a figure read
//! off a chart, a counter that only its order of magnitude means). The
//! verdict is then one of:
//! - within tolerance;
//! - right direction, off by N x: outside the tolerance, but the change
//!   against the reference (the base configuration's figure, or the neutral
//!   value of a change or ratio) has the published sign;
//! - wrong direction: the change has the other sign;
//! - off by N x: outside the tolerance, no direction to judge (a figure
//!   of the base configuration).
//!
//! A figure the model is known to miss carries the mechanism behind the
//! miss and where it is documented; `--check` fails only on misses that
//! are not declared, so it catches regressions without hiding known gaps.
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
    /// Outside it, with the published direction; the factor is >= 1.
    RightDirection(f64),
    /// Outside it, against the published direction.
    WrongDirection,
    /// Outside it, no direction to judge; the factor is >= 1.
    Off(f64),
    /// The model gave no number (NaN), e.g. a counter the run lacks.
    NoFigure,
}

impl Verdict {
    /// Whether the figure missed its tolerance.
    pub fn is_miss(&self) -> bool {
        !matches!(self, Verdict::Within)
    }

    /// The verdict column's text.
    pub fn text(&self) -> String {
        match self {
            Verdict::Within => "within tolerance".into(),
            Verdict::RightDirection(f) => format!("right direction, off by {f:.2}x"),
            Verdict::WrongDirection => "wrong direction".into(),
            Verdict::Off(f) => format!("off by {f:.2}x"),
            Verdict::NoFigure => "no modeled figure".into(),
        }
    }
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
/// `reference` for the direction when the figure has one.
pub fn judge(
    published: f64,
    modeled: f64,
    tol: &Tolerance,
    reference: Option<Reference>,
) -> Verdict {
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
    let want = (published - r.published).signum();
    let got = (modeled - r.modeled).signum();
    if published == r.published || !r.modeled.is_finite() {
        // The posting saw no change: nothing to judge a direction by.
        Verdict::Off(factor)
    } else if want == got {
        Verdict::RightDirection(factor)
    } else {
        Verdict::WrongDirection
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

    const TEN: Tolerance = Tolerance::Rel(0.1, "test");

    #[test]
    fn within_relative_tolerance() {
        assert_eq!(judge(100.0, 109.0, &TEN, None), Verdict::Within);
        assert_eq!(judge(100.0, 91.0, &TEN, None), Verdict::Within);
        assert_eq!(judge(100.0, 120.0, &TEN, None), Verdict::Off(1.2));
    }

    #[test]
    fn absolute_tolerance_judges_a_published_zero() {
        let t = Tolerance::Abs(0.5, "test");
        assert_eq!(judge(0.0, 0.4, &t, None), Verdict::Within);
        assert_eq!(judge(0.0, 0.6, &t, None), Verdict::Off(f64::INFINITY));
    }

    #[test]
    fn direction_is_judged_against_the_reference() {
        // Published 213 -> 114 (faster); modeled 109 -> 67 is faster too.
        let r = Reference {
            published: 213.0,
            modeled: 109.0,
        };
        let v = judge(114.0, 67.0, &TEN, Some(r));
        let Verdict::RightDirection(f) = v else {
            panic!("{v:?}");
        };
        assert!((f - 114.0 / 67.0).abs() < 1e-9);
        // Modeled slower than its own base: the wrong way.
        assert_eq!(judge(114.0, 150.0, &TEN, Some(r)), Verdict::WrongDirection);
    }

    #[test]
    fn no_published_change_means_no_direction() {
        let r = Reference {
            published: 16300.0,
            modeled: 10000.0,
        };
        assert_eq!(
            judge(16300.0, 12000.0, &TEN, Some(r)),
            Verdict::Off(16300.0 / 12000.0)
        );
    }

    #[test]
    fn nan_is_no_figure() {
        assert_eq!(judge(1.0, f64::NAN, &TEN, None), Verdict::NoFigure);
        assert!(Verdict::NoFigure.is_miss());
        assert!(!Verdict::Within.is_miss());
    }

    #[test]
    fn at_least_holds_from_the_bound_up() {
        let t = Tolerance::AtLeast("more than");
        assert_eq!(judge(20000.0, 25000.0, &t, None), Verdict::Within);
        assert_eq!(judge(20000.0, 100.0, &t, None), Verdict::Off(200.0));
    }

    #[test]
    fn labels() {
        assert_eq!(TEN.label(), "±10%");
        assert_eq!(Tolerance::Abs(0.5, "x").label(), "±0.5");
    }
}
