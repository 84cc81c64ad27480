//! `mm->mmap_lock`, the rwsem of an address space.
//!
//! In the model only `task_numa_work` takes it: `mmap_read_trylock`, which
//! never sleeps, and `mmap_read_unlock`; each is one atomic on the rwsem's
//! count line, served by the discrete face of the line model (the scan
//! runs once per scan period per mm, from the tick, so its requests are
//! ordered by time). Faults use the per-VMA lock instead (see
//! [`super::ptl`]).
//!
//! Left out: writers. VMA changes (`mmap`, `munmap`, `mprotect`, `mbind`)
//! take the lock for write and make readers sleep; no workload modeled
//! changes its VMAs after it starts, so no writer ever holds it. The one
//! fault per anonymous VMA that falls back to `mmap_read_lock` to set up
//! its `anon_vma` is left out too.

use super::Locks;
use crate::kernel::{CpuId, MmId};
use crate::physics::line::Line;
use numalab_topology::Machine;

impl Locks {
    /// `mmap_read_trylock` + `mmap_read_unlock` of `mm` by `cpu` at `now`
    /// (ns) on machine `m`: two atomics on the count line. Returns their CPU time (ns): wait and
    /// transfer; 0 with `numalab.fault_locks` off (inside the scan's fixed
    /// cost).
    pub fn mmap_read_trylock_unlock(&mut self, m: &Machine, now: u64, cpu: CpuId, mm: MmId) -> f64 {
        if !self.on.fault_locks {
            return 0.0;
        }
        let i = mm.index();
        if self.mmap_lock.len() <= i {
            self.mmap_lock.resize_with(i + 1, Line::new);
        }
        let now = now as f64;
        let model = self.model;
        let line = &mut self.mmap_lock[i];
        let a = line.request(&model, m, now, cpu);
        let b = line.request(&model, m, a.done_ns, cpu);
        (a.done_ns - now) + (b.done_ns - a.done_ns)
    }
}
