//! TLB shootdowns (arch/x86/mm/tlb.c).
//!
//! `flush_tlb_mm_range` flushes a range of an address space: the
//! initiating CPU flushes its own TLB (`flush_tlb_func`, local), then, if
//! any other CPU is in the mm's cpumask, `native_flush_tlb_multi` sends
//! each a call-function IPI and waits until all have run `flush_tlb_func`
//! (`on_each_cpu_cond_mask(..., wait = true)`). A range of more than
//! `tlb_single_page_flush_ceiling` (33) pages is a full flush; otherwise
//! each page is invalidated with `invlpg`.
//!
//! Who calls it here: `change_prot_numa` (its `tlb_finish_mmu` flushes the
//! range whose PTEs it changed, one flush per call that changed any), and
//! a migration's unmap when the old PTE was accessible. A NUMA hinting
//! fault migrates a folio whose PTE is PROT_NONE: `try_to_migrate_one`
//! defers the flush to `set_tlb_ubc_flush_pending`, which returns at once
//! for a PTE that is not `pte_accessible` (x86: not present and no flush
//! pending on the mm), so those migrations send no IPI.
//!
//! Costs: the initiator pays its local flush, one IPI send per target and
//! the wait for the acknowledgements; each receiver pays the interrupt and
//! its flush, charged to the task it interrupts. Counters as the kernel
//! counts them: `nr_tlb_remote_flush` once per shootdown,
//! `nr_tlb_remote_flush_received` per receiving CPU,
//! `nr_tlb_local_flush_all` or `nr_tlb_local_flush_one` (pages) on the
//! initiator.
//!
//! The mm's cpumask is the set of CPUs running one of its tasks now
//! ([`Kernel::mm_cpumask`]). Left out: lazy-TLB CPUs (skipped by the IPI
//! unless page tables were freed), the TLB refill after a flush, the
//! `tlb_gen` catch-up that turns a partial flush into a full one, INVLPGB
//! broadcast flushes (AMD Zen 3+, not on the Intel presets).

use crate::kernel::stats::Vm;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::physics::costs;

/// `tlb_single_page_flush_ceiling`: ranges of more pages are flushed whole.
pub const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;

impl Kernel {
    /// `flush_tlb_mm_range(mm, start, end, stride_shift)` from `cpu`,
    /// which runs a task of `mm`. Returns the initiator's CPU time (ns);
    /// each receiving CPU is charged its interrupt. Nothing with
    /// `numalab.tlb_shootdown` off.
    pub fn flush_tlb_mm_range(
        &mut self,
        cpu: CpuId,
        mm: MmId,
        start: u64,
        end: u64,
        stride_shift: u32,
    ) -> f64 {
        if !self.mem.locks.on.tlb_shootdown || end <= start {
            return 0.0;
        }
        let nr = (end - start) >> stride_shift;
        let full = nr > TLB_SINGLE_PAGE_FLUSH_CEILING;
        let flush_ns = if full {
            costs::TLB_FLUSH_ALL_NS
        } else {
            nr as f64 * costs::TLB_FLUSH_ONE_NS
        };
        // Local: the initiator has the mm loaded.
        let mut cost = flush_ns;
        if full {
            self.vmstat.add(Vm::NrTlbLocalFlushAll, 1);
        } else {
            self.vmstat.add(Vm::NrTlbLocalFlushOne, nr);
        }
        let others: Vec<CpuId> = self
            .mm_cpumask(mm)
            .into_iter()
            .filter(|&c| c != cpu)
            .collect();
        if others.is_empty() {
            return cost;
        }
        self.vmstat.add(Vm::NrTlbRemoteFlush, 1);
        self.vmstat
            .add(Vm::NrTlbRemoteFlushReceived, others.len() as u64);
        cost += others.len() as f64 * costs::TLB_IPI_SEND_NS + costs::TLB_SHOOTDOWN_WAIT_NS;
        for c in others {
            self.charge_cpu(c, costs::TLB_IPI_RECEIVE_NS + flush_ns);
        }
        cost
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::numa::tests::fx;
    use crate::kernel::stats::Vm;

    #[test]
    fn shootdown_counts_and_charges_like_the_kernel() {
        let mut k = fx::kernel("tiny-2n", &[]);
        let mm = fx::add_mm(&mut k, fx::pages(64), false, None);
        let a = fx::add_task(&mut k, mm, fx::c(0));
        let b = fx::add_task(&mut k, mm, fx::c(2));
        k.sched.set_curr(fx::c(0), Some(a));
        k.sched.set_curr(fx::c(2), Some(b));
        // 4 pages: flushed one by one, one IPI to CPU 2.
        let small = k.flush_tlb_mm_range(fx::c(0), mm, 0, 4 << 12, 12);
        assert_eq!(k.vmstat.get(Vm::NrTlbLocalFlushOne), 4);
        assert_eq!(k.vmstat.get(Vm::NrTlbRemoteFlush), 1);
        assert_eq!(k.vmstat.get(Vm::NrTlbRemoteFlushReceived), 1);
        assert!(k.tasks[b].sys_ns > 0.0);
        // 34 pages: over the ceiling, a full flush.
        k.flush_tlb_mm_range(fx::c(0), mm, 0, 34 << 12, 12);
        assert_eq!(k.vmstat.get(Vm::NrTlbLocalFlushAll), 1);
        assert_eq!(k.vmstat.get(Vm::NrTlbLocalFlushOne), 4);
        // Alone on the machine: no IPI, cheaper.
        k.sched.set_curr(fx::c(2), None);
        let alone = k.flush_tlb_mm_range(fx::c(0), mm, 0, 4 << 12, 12);
        assert_eq!(k.vmstat.get(Vm::NrTlbRemoteFlush), 2);
        assert!(alone < small);
    }
}
