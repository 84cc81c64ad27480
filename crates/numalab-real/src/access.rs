//! Where random accesses go: seeded samplers for the workload's
//! distributions over the pages of a range.
//!
//! A run's random phases draw from one PCG stream per thread, seeded from
//! the run seed, the process index and the thread index, so two runs with
//! the same seed touch the same pages in the same order (what the kernel
//! then does with them is, of course, not repeatable). Zipf uses
//! rejection-inversion sampling (Hörmann and Derflinger, 1996), which needs
//! no table and works for any exponent > 0.
//!
//! Left out: memory-level parallelism (`mlp`): a real CPU overlaps misses
//! as it can, and the run does not try to shape that.

use numalab_workload::model::Distribution;
use rand::Rng;
use rand::SeedableRng;
use rand_pcg::Pcg64;

/// The PRNG of one thread: `seed` mixed with the process and thread index.
pub fn thread_rng(seed: u64, process: usize, thread: usize) -> Pcg64 {
    let mix = seed
        ^ (process as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (thread as u64)
            .wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
            .rotate_left(17);
    Pcg64::seed_from_u64(mix)
}

/// Zipf over `1..=n` with exponent `s` > 0, by rejection-inversion.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

impl Zipf {
    /// A sampler over `1..=n` (n >= 1) with exponent `s` (> 0).
    pub fn new(n: u64, s: f64) -> Zipf {
        let n = n.max(1) as f64;
        let s = if s > 0.0 { s } else { 1e-9 };
        let mut z = Zipf {
            n,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(n + 0.5);
        z.cut = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.s) * lx) * lx
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp()
    }

    /// Draws a rank in `1..=n` (1 is the most frequent).
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        loop {
            let u = self.h_n + rng.gen::<f64>() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// Draws page indices in `0..pages` following a [`Distribution`].
#[derive(Clone, Debug)]
pub enum PageSampler {
    /// Every page equally likely.
    Uniform {
        /// Pages.
        pages: u64,
    },
    /// Zipf, page 0 hottest.
    Zipf(Zipf),
    /// A hot prefix drawn with probability `p`, else the cold rest.
    Hot {
        /// Pages.
        pages: u64,
        /// Pages in the hot prefix (>= 1).
        hot: u64,
        /// Probability of the hot prefix.
        p: f64,
    },
}

impl PageSampler {
    /// A sampler over `pages` pages (>= 1).
    pub fn new(d: &Distribution, pages: u64) -> PageSampler {
        let pages = pages.max(1);
        match d {
            Distribution::Uniform => PageSampler::Uniform { pages },
            Distribution::Zipf { s } => PageSampler::Zipf(Zipf::new(pages, *s)),
            Distribution::Hot {
                fraction,
                probability,
            } => {
                let hot =
                    ((pages as f64 * fraction.clamp(0.0, 1.0)).round() as u64).clamp(1, pages);
                PageSampler::Hot {
                    pages,
                    hot,
                    p: probability.clamp(0.0, 1.0),
                }
            }
        }
    }

    /// Draws one page index.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        match self {
            PageSampler::Uniform { pages } => rng.gen_range(0..*pages),
            PageSampler::Zipf(z) => z.sample(rng) - 1,
            PageSampler::Hot { pages, hot, p } => {
                if *hot >= *pages || rng.gen::<f64>() < *p {
                    rng.gen_range(0..*hot)
                } else {
                    rng.gen_range(*hot..*pages)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_pages() {
        let s = PageSampler::new(&Distribution::Uniform, 1000);
        let mut a = thread_rng(42, 0, 1);
        let mut b = thread_rng(42, 0, 1);
        let mut c = thread_rng(42, 0, 2);
        let va: Vec<u64> = (0..100).map(|_| s.sample(&mut a)).collect();
        let vb: Vec<u64> = (0..100).map(|_| s.sample(&mut b)).collect();
        let vc: Vec<u64> = (0..100).map(|_| s.sample(&mut c)).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
        assert!(va.iter().all(|&p| p < 1000));
    }

    #[test]
    fn zipf_favours_low_ranks_like_the_law() {
        let z = PageSampler::new(&Distribution::Zipf { s: 1.0 }, 1000);
        let mut r = thread_rng(1, 0, 0);
        let mut counts = vec![0u64; 1000];
        let n = 200_000;
        for _ in 0..n {
            counts[z.sample(&mut r) as usize] += 1;
        }
        // P(rank 1) = 1 / H(1000) ~ 0.1336; P(rank 2) is half of it.
        let p1 = counts[0] as f64 / n as f64;
        assert!((p1 - 0.1336).abs() < 0.01, "p1 = {p1}");
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((ratio - 2.0).abs() < 0.15, "ratio = {ratio}");
        assert!(counts[999] < counts[9]);
    }

    #[test]
    fn hot_prefix_gets_its_share() {
        let h = PageSampler::new(
            &Distribution::Hot {
                fraction: 0.1,
                probability: 0.9,
            },
            1000,
        );
        let mut r = thread_rng(3, 1, 1);
        let n = 100_000;
        let hot = (0..n).filter(|_| h.sample(&mut r) < 100).count();
        let share = hot as f64 / n as f64;
        assert!((share - 0.9).abs() < 0.01, "share = {share}");
        // One page only: always page 0.
        let one = PageSampler::new(&Distribution::Zipf { s: 0.8 }, 1);
        assert_eq!(one.sample(&mut r), 0);
    }
}
