//! What `numalab reproduce --check` makes of one judged published figure
//! ([`Standing`]): whether it holds, is a declared known miss, or fails the
//! check, and the text the table and the failure list give it.
//!
//! Known misses are declared for the published experiment itself,
//! `--scale` [`DECLARED_SCALE`]: docs/reproductions.md gives each miss's
//! figures and mechanism at full scale. So:
//! - a miss not declared fails, at any scale;
//! - a missing figure (NaN, infinite, or no run to read it from) fails at
//!   any scale, declared or not: a known miss explains a number, not its
//!   absence;
//! - a declared miss that holds at [`DECLARED_SCALE`] fails until its
//!   declaration is removed, so a later regression of that figure fails
//!   `--check` again;
//! - a declared miss that holds at another scale is reported, not failed:
//!   a scaled-down run is a shorter experiment, and its pass says nothing
//!   about the declaration.
//!
//! Left out: the verdict itself (verdict.rs) and which figures a scale
//! judges at all (reproduce.rs: below 1, only shares and ratios of runs
//! in which balancing acted).

use crate::verdict::Verdict;

/// The `--scale` the known misses of the reproduction files are declared
/// for: the published experiment.
pub const DECLARED_SCALE: f64 = 1.0;

/// Where one judged published figure leaves `--check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Within tolerance, no miss declared.
    Holds,
    /// A miss, declared known.
    KnownMiss,
    /// Declared a known miss and within tolerance, at a scale other than
    /// [`DECLARED_SCALE`]: the declaration is not about this scale.
    DeclaredForOtherScale,
    /// A miss not declared known: fails.
    Undeclared,
    /// No modeled figure where the runs could model it: fails, declared or
    /// not.
    Missing,
    /// Declared a known miss and within tolerance at [`DECLARED_SCALE`]:
    /// fails until the declaration is removed.
    NoLongerMissed,
}

impl Standing {
    /// The standing of a figure judged `verdict` at `scale`, declared a
    /// known miss or not; None for a figure the runs could not model
    /// ([`Verdict::NotModeled`]: neither judged nor failed).
    pub fn of(verdict: &Verdict, declared: bool, scale: f64) -> Option<Standing> {
        Some(match (verdict, declared) {
            (Verdict::NotModeled, _) => return None,
            (Verdict::NoFigure, _) => Standing::Missing,
            (v, true) if v.is_miss() => Standing::KnownMiss,
            (v, false) if v.is_miss() => Standing::Undeclared,
            (_, false) => Standing::Holds,
            (_, true) if scale == DECLARED_SCALE => Standing::NoLongerMissed,
            (_, true) => Standing::DeclaredForOtherScale,
        })
    }

    /// Whether `--check` fails on it.
    pub fn fails(self) -> bool {
        matches!(
            self,
            Standing::Undeclared | Standing::Missing | Standing::NoLongerMissed
        )
    }

    /// What the verdict column adds to the verdict's own text; a known
    /// miss adds its footnote, `[k]`, given here as `note`.
    pub fn suffix(self, note: Option<usize>) -> String {
        match self {
            Standing::Holds => String::new(),
            Standing::KnownMiss => match note {
                Some(k) => format!(" (known miss [{k}])"),
                None => " (known miss)".to_string(),
            },
            Standing::Undeclared | Standing::Missing => " (MISS)".to_string(),
            Standing::NoLongerMissed => {
                " (declared a known miss: no longer one, remove the declaration)".to_string()
            }
            Standing::DeclaredForOtherScale => {
                format!(" (declared a known miss for --scale {DECLARED_SCALE})")
            }
        }
    }

    /// Why `--check` fails on figure `figure` (reproduction, configuration
    /// and metric) with verdict text `verdict`; None when it does not.
    pub fn failure(self, figure: &str, verdict: &str, declared: bool) -> Option<String> {
        match self {
            Standing::Undeclared => Some(format!(
                "{figure}: {verdict}, and it is not declared a known miss"
            )),
            Standing::Missing if declared => Some(format!(
                "{figure}: no modeled figure (NaN, infinite, or no run to read it from); its known-miss declaration explains a number, not a missing one"
            )),
            Standing::Missing => Some(format!(
                "{figure}: no modeled figure (NaN, infinite, or no run to read it from)"
            )),
            Standing::NoLongerMissed => Some(format!(
                "{figure}: within tolerance at --scale {DECLARED_SCALE}, the scale its known miss is declared for: no longer a miss, remove its known_miss declaration from its file in crates/numalab/reproductions/"
            )),
            Standing::Holds | Standing::KnownMiss | Standing::DeclaredForOtherScale => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MISSES: [Verdict; 5] = [
        Verdict::RightDirection(2.0),
        Verdict::NoChange(2.0),
        Verdict::WrongDirection,
        Verdict::Off(2.0),
        Verdict::NoFigure,
    ];

    #[test]
    fn an_undeclared_miss_fails_at_every_scale_and_a_declared_one_at_none() {
        for v in &MISSES[..4] {
            for scale in [0.05, 1.0, 2.0] {
                let s = Standing::of(v, false, scale).unwrap();
                assert_eq!(s, Standing::Undeclared, "{v:?}");
                assert!(s.fails());
                let s = Standing::of(v, true, scale).unwrap();
                assert_eq!(s, Standing::KnownMiss, "{v:?}");
                assert!(!s.fails());
            }
        }
    }

    #[test]
    fn a_missing_figure_fails_declared_or_not() {
        for declared in [false, true] {
            for scale in [0.05, 1.0] {
                let s = Standing::of(&Verdict::NoFigure, declared, scale).unwrap();
                assert_eq!(s, Standing::Missing);
                assert!(s.fails());
                let why = s.failure("r: c m", "no modeled figure", declared).unwrap();
                assert!(why.starts_with("r: c m: no modeled figure"), "{why}");
            }
        }
    }

    #[test]
    fn a_declared_miss_that_holds_fails_only_at_the_scale_it_is_declared_for() {
        let s = Standing::of(&Verdict::Within, true, DECLARED_SCALE).unwrap();
        assert_eq!(s, Standing::NoLongerMissed);
        assert!(s.fails());
        let why = s.failure("r: c m", "within tolerance", true).unwrap();
        assert!(
            why.contains("r: c m") && why.contains("remove its known_miss declaration"),
            "{why}"
        );
        for scale in [0.05, 0.25, 2.0] {
            let s = Standing::of(&Verdict::Within, true, scale).unwrap();
            assert_eq!(s, Standing::DeclaredForOtherScale);
            assert!(!s.fails());
            assert_eq!(s.failure("r: c m", "within tolerance", true), None);
            assert_eq!(s.suffix(None), " (declared a known miss for --scale 1)");
        }
    }

    #[test]
    fn a_figure_the_runs_could_not_model_has_no_standing() {
        for declared in [false, true] {
            assert_eq!(Standing::of(&Verdict::NotModeled, declared, 0.05), None);
        }
        let s = Standing::of(&Verdict::Within, false, 1.0).unwrap();
        assert_eq!(
            (s, s.fails(), s.suffix(None)),
            (Standing::Holds, false, String::new())
        );
    }

    #[test]
    fn suffixes_mark_misses_and_known_misses() {
        assert_eq!(Standing::Undeclared.suffix(None), " (MISS)");
        assert_eq!(Standing::Missing.suffix(None), " (MISS)");
        assert_eq!(Standing::KnownMiss.suffix(Some(2)), " (known miss [2])");
        assert!(Standing::NoLongerMissed
            .suffix(None)
            .contains("no longer one, remove the declaration"));
    }
}
