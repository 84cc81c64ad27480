//! The fluid solve's interval (`numalab.fluid_solve_ticks`): which ticks
//! solve the fluid model, and what a tick without a solve keeps.
//!
//! Models nothing of the machine or the kernel: it is the numerical step
//! of the physics. At 1 (the default) every tick solves, exactly as before
//! the switch. At N only every Nth tick does; between solves each running
//! task keeps the rate the last solve gave it on its CPU, and one that has
//! changed CPU works its rate out again from the last solve's served shares
//! (`quick_rate`, as an op started mid-tick always does). Left out: the
//! loaded latencies, served shares and controller utilisations of the
//! skipped ticks (the last solve's stand), and the change in an SMT
//! sibling's share when its sibling starts or stops running between solves.
//! docs/model.md, "Fluid solve interval", has the convergence measurements.

use super::Sim;
use crate::kernel::CpuId;

impl Sim {
    /// Whether this tick solves the fluid model: the first tick and every
    /// `fluid_solve_ticks`-th after it.
    pub(super) fn solve_due(&self) -> bool {
        (self.ticks - 1).is_multiple_of(self.fluid_solve_ticks)
    }

    /// A tick without a solve: a running task keeps its rate only on the
    /// CPU the last solve gave it for.
    pub(super) fn keep_last_solve(&mut self) {
        for cpu in CpuId::range(self.k.m.nr_cpus()) {
            if let Some(t) = self.k.sched.rq[cpu].curr {
                if self.exec[t].rate_cpu != Some(cpu) {
                    self.exec[t].rate_fresh = false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Knobs, RunOptions, Sim};

    /// NUMA01_THREADLOCAL at a fiftieth of its memory on the 2-node,
    /// 4-CPU preset, balancing on: remote streams whose pages migrate, so
    /// the rates move from tick to tick.
    fn run(sets: &[&str]) -> (f64, crate::engine::RunStats) {
        let m = numalab_topology::presets::load("tiny-2n").unwrap();
        let spec = numalab_workload::presets::load("numa01-threadlocal").unwrap();
        let w = numalab_workload::resolve(&spec, &m, 1, 0.02).unwrap();
        let mut all = vec!["kernel.numa_balancing=1"];
        all.extend_from_slice(sets);
        let knobs = Knobs::from_sets(&all).unwrap();
        let sim = Sim::new(m, w, knobs, RunOptions::default()).unwrap();
        let (rec, _, stats) = sim.run_with_stats(&mut |_| {}).unwrap();
        (rec.elapsed_s, stats)
    }

    #[test]
    fn one_tick_in_n_solves_and_the_run_stays_near_the_exact_one() {
        let (exact, s1) = run(&[]);
        assert_eq!(s1.fluid_solves, s1.ticks, "the default solves every tick");
        let (coarse, s4) = run(&["numalab.fluid_solve_ticks=4"]);
        assert_eq!(s4.fluid_solves, s4.ticks.div_ceil(4), "{s4:?}");
        assert_ne!(coarse, exact, "skipped solves change the run");
        let gap = (coarse - exact).abs() / exact;
        assert!(gap < 0.03, "elapsed {exact} s exact, {coarse} s at N=4");
    }
}
