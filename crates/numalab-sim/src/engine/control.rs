//! Phases that change kernel state only, with no CPU time of their own:
//! numalab's per-task NUMA balancing control (a `PR_SET_NUMA_BALANCING`-like
//! prctl) and writes to cgroup files during a run (proposal 4's
//! `cpu.numa_load_balance`). Both take effect where the kernel reads the
//! state: a task's next scan or hinting fault.
//!
//! Left out: the syscall's own cost (a few hundred ns, not charged);
//! writes of cpuset files during a run (the workload language refuses
//! them: a phase may write only files the registry marks `during_run`).

use super::cgroup_files::apply_cgroup_write;
use super::Sim;
use crate::kernel::numa::cgroup::PrNumaBalancing;
use crate::kernel::TaskId;
use numalab_workload::{NumaBalancingCtl, Phase};

impl From<NumaBalancingCtl> for PrNumaBalancing {
    fn from(c: NumaBalancingCtl) -> Self {
        match c {
            NumaBalancingCtl::Default => PrNumaBalancing::Default,
            NumaBalancingCtl::Enabled => PrNumaBalancing::Enabled,
            NumaBalancingCtl::Disabled => PrNumaBalancing::Disabled,
        }
    }
}

impl Sim {
    /// Runs a control phase of task `t`: the prctl, or the cgroup write.
    pub(crate) fn control_phase(&mut self, t: TaskId, ph: &Phase) -> Result<(), String> {
        match ph {
            Phase::SetNumaBalancing(c) => {
                self.k.prctl_set_numa_balancing(t, (*c).into());
            }
            Phase::CgroupWrite { cgroup, write } => {
                apply_cgroup_write(&mut self.k, cgroup, *write)
                    .map_err(|e| format!("thread {}: cgroup write: {e}", self.k.tasks[t].name))?;
            }
            _ => {}
        }
        Ok(())
    }
}
