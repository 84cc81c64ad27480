//! Page faults (mm/memory.c): first touch of an anonymous page
//! (`do_anonymous_page`, `do_huge_pmd_anonymous_page`) and the dispatch of
//! NUMA hinting faults on PROT_NONE pages to the balancing model.
//!
//! The first touch allocates on the node the governing policy picks
//! (`alloc_pages_mpol`), falling back by distance when it is full, counts
//! `numa_hit`/`numa_miss`/`numa_local`/... like `zone_statistics`, and costs
//! the faulting task a fixed fault cost plus zeroing the page at its core's
//! streaming bandwidth. Left out: fault retries, mmap_lock and page-table
//! lock contention between threads faulting the same range, the zero page
//! for reads.

use super::mempolicy::alloc_order;
use super::page_alloc::alloc_pages_on;
use super::PAGE_SHIFT;
use crate::kernel::stats::Vm;
use crate::kernel::{CpuId, Kernel, TaskId, VmaId};
use crate::physics::costs;
use numalab_workload::PolicyMode;

/// A fault that cannot be satisfied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Oom(pub String);

impl Kernel {
    /// Handles an access by task `t` on `cpu` to page `idx` of VMA `vma`
    /// that is special (not present or PROT_NONE). Returns the CPU time the
    /// fault cost, in ns (charged by the caller's progress loop).
    pub fn handle_mm_fault(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
    ) -> Result<f64, Oom> {
        let mm = self.tasks[t].mm;
        let page = self.mms[mm].vmas[vma].pages[idx];
        if page.nid == super::NO_NODE {
            return self.do_anonymous_page(t, cpu, vma, idx);
        }
        if page.protnone {
            return Ok(self.do_numa_page(t, cpu, vma, idx));
        }
        Ok(0.0)
    }

    /// `do_anonymous_page`: allocate, zero and map page `idx`.
    fn do_anonymous_page(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
    ) -> Result<f64, Oom> {
        let mm = self.tasks[t].mm;
        let pol = self.vma_policy(t, vma);
        let local = self.cpu_node(cpu);
        let v = &self.mms[mm].vmas[vma];
        let nr = v.nr_base_pages();
        let psize = v.page_size();
        // Interleave: VMA policies interleave by page offset
        // (`interleave_nid`), task policies by the task's cursor (`il_prev`).
        let il_index = if pol.mode == PolicyMode::Interleave {
            if v.policy.is_some() {
                idx as u64
            } else {
                let i = self.tasks[t].il_prev;
                self.tasks[t].il_prev += 1;
                i
            }
        } else {
            0
        };
        let mems = self.task_mems(t);
        let order = alloc_order(&pol, local, il_index, mems, &self.topo.zonelists);
        let intended = order.first().copied();
        let Some(nid) = alloc_pages_on(&mut self.nodes, &order, nr) else {
            return Err(Oom(format!(
                "out of memory: task {} could not allocate a {} KiB page on any allowed node ({:?} policy)",
                self.tasks[t].name,
                psize >> 10,
                pol.mode
            )));
        };
        self.mms[mm].vmas[vma].set_page_node(idx, nid);
        // zone_statistics()
        if Some(nid) == intended {
            self.vmstat.add(Vm::NumaHit, nr);
            if pol.mode == PolicyMode::Interleave {
                self.vmstat.add(Vm::NumaInterleave, nr);
            }
        } else {
            self.vmstat.add(Vm::NumaMiss, nr);
            self.vmstat.add(Vm::NumaForeign, nr);
        }
        if nid == local {
            self.vmstat.add(Vm::NumaLocal, nr);
        } else {
            self.vmstat.add(Vm::NumaOther, nr);
        }
        self.vmstat.add(Vm::PgFault, 1);
        let zero_ns = self.bytes_cost_ns(psize as f64);
        Ok(costs::FAULT_ALLOC_NS + zero_ns)
    }

    /// Bytes of a base page.
    pub fn page_bytes() -> u64 {
        1 << PAGE_SHIFT
    }
}
