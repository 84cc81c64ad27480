//! mmtests' summary statistics and significance test, as `numalab compare`
//! uses them.
//!
//! Models `MMTests::Stat` and the summary rules of `MMTests::Summarise`:
//! min, max, arithmetic and harmonic means, the sample standard deviation
//! (n-1), the coefficient of variation, the "best N% mean" (`BAmean-N`,
//! `BHmean-N`) and the two percentage-difference operators `pdiff` and
//! `pndiff` whose sign convention makes a positive percentage always mean
//! "better". Significance is Welch's two-sample t-test, two-sided, with the
//! t distribution computed here from a hand-written regularised incomplete
//! beta function (no statistics crate).
//!
//! Left out: mmtests' confidence-interval summaries (`AmeanCI`,
//! `SubAmean`, ...), percentiles, the geometric-mean ratio tables, the
//! harmonic-mean standard deviation of recent mmtests (`HStddev`; the
//! `Stddev` row here is always the plain sample standard deviation, as in
//! the mmtests versions that marked significance with a t-test), and the R
//! subprocesses mmtests uses for quantiles. Where mmtests would print `NaN`
//! (a harmonic mean of non-positive values, statistics of no samples) these
//! functions return `f64::NAN` and the table printer shows `0.00`, as mmtests
//! does.

/// Which direction of a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Lower is better (times, costs). Summarised with the arithmetic mean.
    Lower,
    /// Higher is better (throughput). Summarised with the harmonic mean.
    Higher,
}

/// Significance level of the two-sided test used to mark `*x%*` deltas.
pub const SIGNIFICANCE_ALPHA: f64 = 0.05;

/// Smallest sample, `NaN` for no samples.
pub fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::NAN, f64::min)
}

/// Largest sample, `NaN` for no samples.
pub fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::NAN, f64::max)
}

/// Arithmetic mean, `NaN` for no samples.
pub fn amean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Harmonic mean, `NaN` for no samples or when any sample is not positive
/// (mmtests `calc_hmean`).
pub fn hmean(xs: &[f64]) -> f64 {
    if xs.is_empty() || xs.iter().any(|&x| x <= 0.0 || x.is_nan()) {
        return f64::NAN;
    }
    xs.len() as f64 / xs.iter().map(|x| 1.0 / x).sum::<f64>()
}

/// The mean mmtests uses for a metric: arithmetic when lower is better,
/// harmonic when higher is better.
pub fn mean(xs: &[f64], better: Better) -> f64 {
    match better {
        Better::Lower => amean(xs),
        Better::Higher => hmean(xs),
    }
}

/// Sample standard deviation with n-1 in the denominator; 0 for fewer than
/// two samples.
pub fn stddev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = amean(xs);
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (xs.len() - 1) as f64).sqrt()
}

/// Coefficient of variation in percent: `100 * stddev / amean`; 0 when the
/// mean is 0 or undefined (mmtests `calc_coeffvar`).
pub fn coeffvar(xs: &[f64]) -> f64 {
    let m = amean(xs);
    if m == 0.0 || m.is_nan() {
        return 0.0;
    }
    100.0 * stddev(xs) / m
}

/// The samples sorted best first: ascending when lower is better,
/// descending when higher is better.
pub fn sorted_best_first(xs: &[f64], better: Better) -> Vec<f64> {
    let mut v = xs.to_vec();
    match better {
        Better::Lower => v.sort_by(|a, b| a.total_cmp(b)),
        Better::Higher => v.sort_by(|a, b| b.total_cmp(a)),
    }
    v
}

/// Number of samples `BAmean-pct` averages: `int(n * pct / 100)`, at least 1
/// (0 only when there are no samples).
pub fn best_count(n: usize, pct: u32) -> usize {
    if n == 0 {
        return 0;
    }
    ((n as u64 * pct as u64 / 100) as usize).max(1)
}

/// `BAmean-pct` (lower is better) or `BHmean-pct` (higher is better): the
/// mean of the best `int(n * pct / 100)` samples, at least one.
pub fn best_mean(xs: &[f64], pct: u32, better: Better) -> f64 {
    let sorted = sorted_best_first(xs, better);
    let k = best_count(sorted.len(), pct);
    mean(&sorted[..k], better)
}

/// mmtests `pdiff`: percentage change where higher is better,
/// `new*100/base - 100`; 0 when equal or when `new` is 0, 100 when `base` is 0.
pub fn pdiff(new: f64, base: f64) -> f64 {
    if new == base || new == 0.0 {
        return 0.0;
    }
    if base == 0.0 || base.is_nan() {
        return 100.0;
    }
    new * 100.0 / base - 100.0
}

/// mmtests `pndiff`: percentage change where lower is better,
/// `100 - new*100/base`; 0 when equal, 100 when `new` is 0, -99 when only
/// `base` is 0.
pub fn pndiff(new: f64, base: f64) -> f64 {
    if new == base {
        return 0.0;
    }
    if new == 0.0 {
        return 100.0;
    }
    if base == 0.0 {
        return -99.0;
    }
    100.0 - new * 100.0 / base
}

/// One summary statistic, a row of the compare table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// Smallest sample.
    Min,
    /// Arithmetic (lower is better) or harmonic (higher is better) mean.
    Mean,
    /// Sample standard deviation (n-1).
    Stddev,
    /// Coefficient of variation, percent.
    CoeffVar,
    /// Largest sample.
    Max,
    /// Mean of the best N percent of the samples.
    BestMean(u32),
}

/// The rows mmtests' `SummariseMultiops` prints, in its order.
pub const MULTIOPS_STATS: [Stat; 8] = [
    Stat::Min,
    Stat::Mean,
    Stat::Stddev,
    Stat::CoeffVar,
    Stat::Max,
    Stat::BestMean(50),
    Stat::BestMean(95),
    Stat::BestMean(99),
];

impl Stat {
    /// The row title mmtests prints: `Min`, `Amean`/`Hmean`, `Stddev`,
    /// `CoeffVar`, `Max`, `BAmean-N`/`BHmean-N`.
    pub fn name(self, better: Better) -> String {
        let m = match better {
            Better::Lower => "Amean",
            Better::Higher => "Hmean",
        };
        match self {
            Stat::Min => "Min".to_string(),
            Stat::Mean => m.to_string(),
            Stat::Stddev => "Stddev".to_string(),
            Stat::CoeffVar => "CoeffVar".to_string(),
            Stat::Max => "Max".to_string(),
            Stat::BestMean(p) => format!("B{m}-{p}"),
        }
    }

    /// The statistic of `xs`.
    pub fn value(self, xs: &[f64], better: Better) -> f64 {
        if xs.is_empty() {
            return f64::NAN;
        }
        match self {
            Stat::Min => min(xs),
            Stat::Mean => mean(xs, better),
            Stat::Stddev => stddev(xs),
            Stat::CoeffVar => coeffvar(xs),
            Stat::Max => max(xs),
            Stat::BestMean(p) => best_mean(xs, p, better),
        }
    }

    /// Percentage difference of `new` against `base`, positive when better:
    /// `pndiff` for stddev and coeffvar and for lower-is-better metrics,
    /// `pdiff` otherwise (mmtests `getStatCompareFunc`).
    pub fn delta(self, new: f64, base: f64, better: Better) -> f64 {
        match (self, better) {
            (Stat::Stddev | Stat::CoeffVar, _) | (_, Better::Lower) => pndiff(new, base),
            (_, Better::Higher) => pdiff(new, base),
        }
    }
}

/// All [`MULTIOPS_STATS`] of one sample set.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Smallest sample.
    pub min: f64,
    /// Arithmetic or harmonic mean, per [`Better`].
    pub mean: f64,
    /// Sample standard deviation (n-1), 0 for one sample.
    pub stddev: f64,
    /// Coefficient of variation in percent.
    pub coeffvar: f64,
    /// Largest sample.
    pub max: f64,
    /// Best-50% mean.
    pub bmean50: f64,
    /// Best-95% mean.
    pub bmean95: f64,
    /// Best-99% mean.
    pub bmean99: f64,
}

/// Summarises `xs` the way mmtests' `SummariseMultiops` does.
pub fn summarise(xs: &[f64], better: Better) -> Summary {
    Summary {
        n: xs.len(),
        min: Stat::Min.value(xs, better),
        mean: Stat::Mean.value(xs, better),
        stddev: Stat::Stddev.value(xs, better),
        coeffvar: Stat::CoeffVar.value(xs, better),
        max: Stat::Max.value(xs, better),
        bmean50: Stat::BestMean(50).value(xs, better),
        bmean95: Stat::BestMean(95).value(xs, better),
        bmean99: Stat::BestMean(99).value(xs, better),
    }
}

/// Natural log of the gamma function (Lanczos approximation, g = 7, n = 9;
/// about 15 significant digits for positive arguments).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Gamma(x) Gamma(1-x) = pi / sin(pi x).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction for the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const MAX_ITER: usize = 300;
    const EPS: f64 = 1e-15;
    let qab = a + b;
    let qap = a + 1.0;
    let qam = a - 1.0;
    let mut c = 1.0;
    let mut d = 1.0 / away_from_zero(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=MAX_ITER {
        let m = m as f64;
        let m2 = 2.0 * m;
        // Each iteration takes the even and then the odd term of the fraction.
        h *= lentz_step(m * (b - m) * x / ((qam + m2) * (a + m2)), &mut c, &mut d);
        let del = lentz_step(
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
            &mut c,
            &mut d,
        );
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// Lentz's guard: a denominator this close to zero is replaced by a tiny
/// one so the recurrence never divides by zero.
fn away_from_zero(v: f64) -> f64 {
    const TINY: f64 = 1e-300;
    if v.abs() < TINY {
        TINY
    } else {
        v
    }
}

/// One term `aa` of a continued fraction by modified Lentz: updates the
/// `c` and `d` recurrences and returns the factor the value is multiplied by.
fn lentz_step(aa: f64, c: &mut f64, d: &mut f64) -> f64 {
    *d = 1.0 / away_from_zero(1.0 + aa * *d);
    *c = away_from_zero(1.0 + aa / *c);
    *d * *c
}

/// Regularised incomplete beta function `I_x(a, b)` for `a, b > 0`.
pub fn reg_inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x.is_nan() || a <= 0.0 || b <= 0.0 {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Two-sided tail probability `P(|T| >= |t|)` of Student's t distribution
/// with `df` degrees of freedom.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    reg_inc_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// Outcome of Welch's t-test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    /// The t statistic, `(mean_new - mean_base) / stderr`.
    pub t: f64,
    /// Welch-Satterthwaite degrees of freedom, rounded down to an integer
    /// as mmtests' `calc_welch_test` does.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's two-sample t-test of the means of `base` and `new`, using the
/// mean mmtests uses for `better` (arithmetic or harmonic) and the sample
/// standard deviations. `None` when either side has fewer than 2 samples or
/// both sides have zero variance (no t statistic exists).
pub fn welch_t_test(base: &[f64], new: &[f64], better: Better) -> Option<Welch> {
    let (m, n) = (base.len() as f64, new.len() as f64);
    if base.len() < 2 || new.len() < 2 {
        return None;
    }
    let (mx, my) = (mean(base, better), mean(new, better));
    let (vx, vy) = (stddev(base).powi(2) / m, stddev(new).powi(2) / n);
    let se2 = vx + vy;
    if se2 <= 0.0 || mx.is_nan() || my.is_nan() {
        return None;
    }
    let t = (my - mx) / se2.sqrt();
    let k = (m - 1.0) * (n - 1.0) * se2 * se2 / ((n - 1.0) * vx * vx + (m - 1.0) * vy * vy);
    let df = k.floor().max(1.0);
    Some(Welch {
        t,
        df,
        p: t_two_sided_p(t, df),
    })
}

/// True when the means of `base` and `new` differ significantly at level
/// `alpha` (two-sided Welch's t-test). Never true with fewer than 2 samples
/// on either side. When both sides have zero variance, true exactly when
/// the means differ (mmtests' special case).
pub fn significant(base: &[f64], new: &[f64], better: Better, alpha: f64) -> bool {
    if base.len() < 2 || new.len() < 2 {
        return false;
    }
    match welch_t_test(base, new, better) {
        Some(w) => w.p < alpha,
        None => {
            let (mx, my) = (mean(base, better), mean(new, better));
            !mx.is_nan() && !my.is_nan() && mx != my
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn basic_statistics_of_one_to_four() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(min(&xs), 1.0);
        assert_eq!(max(&xs), 4.0);
        assert_eq!(amean(&xs), 2.5);
        assert!(close(stddev(&xs), 1.2910, 1e-4));
        assert!(close(coeffvar(&xs), 100.0 * 1.290_994_448_7 / 2.5, 1e-6));
        assert!(close(
            hmean(&xs),
            4.0 / (1.0 + 0.5 + 1.0 / 3.0 + 0.25),
            1e-12
        ));
    }

    #[test]
    fn best_means_take_the_best_int_n_pct_samples() {
        let xs = [4.0, 1.0, 3.0, 2.0];
        // n=4: 50% -> 2 samples, 95% -> 3, 99% -> 3.
        assert_eq!(best_mean(&xs, 50, Better::Lower), 1.5);
        assert_eq!(best_mean(&xs, 95, Better::Lower), 2.0);
        assert_eq!(best_mean(&xs, 99, Better::Lower), 2.0);
        // Higher is better: the best are the largest, harmonic mean.
        assert!(close(
            best_mean(&xs, 50, Better::Higher),
            hmean(&[4.0, 3.0]),
            1e-12
        ));
        // At least one sample.
        assert_eq!(best_count(1, 50), 1);
        assert_eq!(best_count(7, 50), 3);
        assert_eq!(best_count(7, 95), 6);
        assert_eq!(best_mean(&[5.0], 50, Better::Lower), 5.0);
    }

    #[test]
    fn one_sample_has_zero_spread() {
        assert_eq!(stddev(&[3.0]), 0.0);
        assert_eq!(coeffvar(&[3.0]), 0.0);
        assert!(amean(&[]).is_nan());
        assert!(hmean(&[1.0, 0.0]).is_nan());
    }

    #[test]
    fn sign_convention_positive_is_better() {
        // Elapsed time fell: better.
        assert!(close(pndiff(104.46, 191.32), 45.40, 0.005));
        // System time rose: worse.
        assert!(close(pndiff(106.73, 69.65), -53.24, 0.005));
        // Throughput rose: better.
        assert!(close(pdiff(110.0, 100.0), 10.0, 1e-9));
        assert_eq!(pndiff(5.0, 5.0), 0.0);
        assert_eq!(pndiff(0.0, 5.0), 100.0);
        assert_eq!(pndiff(5.0, 0.0), -99.0);
        assert_eq!(pdiff(5.0, 0.0), 100.0);
        assert_eq!(pdiff(0.0, 5.0), 0.0);
        // Stddev is always lower-is-better, even for throughput.
        assert!(Stat::Stddev.delta(2.0, 1.0, Better::Higher) < 0.0);
        assert!(Stat::Mean.delta(2.0, 1.0, Better::Higher) > 0.0);
        assert!(Stat::Mean.delta(2.0, 1.0, Better::Lower) < 0.0);
    }

    #[test]
    fn stat_names_follow_mmtests() {
        let lower: Vec<String> = MULTIOPS_STATS
            .iter()
            .map(|s| s.name(Better::Lower))
            .collect();
        assert_eq!(
            lower,
            [
                "Min",
                "Amean",
                "Stddev",
                "CoeffVar",
                "Max",
                "BAmean-50",
                "BAmean-95",
                "BAmean-99"
            ]
        );
        assert_eq!(Stat::Mean.name(Better::Higher), "Hmean");
        assert_eq!(Stat::BestMean(95).name(Better::Higher), "BHmean-95");
    }

    #[test]
    fn t_distribution_matches_tables() {
        // Two-sided 5% critical values.
        assert!(close(t_two_sided_p(12.706_204_736, 1.0), 0.05, 1e-6));
        assert!(close(t_two_sided_p(2.228_138_852, 10.0), 0.05, 1e-6));
        assert!(close(t_two_sided_p(2.042_272_456, 30.0), 0.05, 1e-6));
        assert!(close(t_two_sided_p(0.0, 5.0), 1.0, 1e-12));
        // df = 1 is the Cauchy distribution: P(|T|>1) = 0.5.
        assert!(close(t_two_sided_p(1.0, 1.0), 0.5, 1e-9));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-12
        ));
        assert!(close(ln_gamma(10.0), (362_880.0f64).ln(), 1e-10));
    }

    #[test]
    fn welch_marks_clear_differences_only() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b = [80.0, 81.0, 79.0, 80.5, 79.5];
        assert!(significant(&a, &b, Better::Lower, SIGNIFICANCE_ALPHA));
        assert!(!significant(&a, &a, Better::Lower, SIGNIFICANCE_ALPHA));
        let noisy = [100.0, 120.0, 80.0, 110.0, 90.0];
        let shifted = [101.0, 121.0, 81.0, 111.0, 91.0];
        assert!(!significant(
            &noisy,
            &shifted,
            Better::Lower,
            SIGNIFICANCE_ALPHA
        ));
        // Fewer than 2 samples: never.
        assert!(!significant(
            &[1.0],
            &[100.0],
            Better::Lower,
            SIGNIFICANCE_ALPHA
        ));
        // Zero variance on both sides: significant iff the means differ.
        assert!(significant(
            &[1.0, 1.0],
            &[2.0, 2.0],
            Better::Lower,
            SIGNIFICANCE_ALPHA
        ));
        assert!(!significant(
            &[1.0, 1.0],
            &[1.0, 1.0],
            Better::Lower,
            SIGNIFICANCE_ALPHA
        ));
        let w = welch_t_test(&a, &b, Better::Lower).expect("t statistic");
        assert!(w.t < 0.0 && w.df >= 4.0 && w.p < 1e-6);
    }

    #[test]
    fn summary_collects_every_row() {
        let s = summarise(&[1.0, 2.0, 3.0, 4.0], Better::Lower);
        assert_eq!(s.n, 4);
        assert_eq!((s.min, s.mean, s.max), (1.0, 2.5, 4.0));
        assert_eq!((s.bmean50, s.bmean95, s.bmean99), (1.5, 2.0, 2.0));
    }
}
