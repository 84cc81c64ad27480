//! The NUMA hinting fault: `do_numa_page` / `do_huge_pmd_numa_page`
//! (mm/memory.c, mm/huge_memory.c), `numa_migrate_check`, the policy's
//! verdict (`mpol_misplaced`, mm/mempolicy.c), the two-stage filter
//! (`should_numa_migrate_memory`, kernel/sched/fair.c) and the migration of
//! the misplaced folio (`migrate_misplaced_folio_prepare`,
//! `migrate_misplaced_folio`, mm/migrate.c).
//!
//! A fault costs the faulting task `HINT_FAULT_NS`; a migration adds what
//! `migrate_pages` does ([`Kernel::migrate_cost`]: isolation under the LRU
//! lock, unmap, the copy at the faulting core's bandwidth to both nodes,
//! remap), and a failed one its partial work (`numalab.migrate_cost`; off:
//! `MIGRATE_PAGE_FIXED_NS` plus the copy at the core's local bandwidth). Counters: `numa_hint_faults` (vmstat and memory.stat),
//! `numa_hint_faults_local`, `numa_pages_migrated` (vmstat and
//! memory.stat), `pgmigrate_success`/`pgmigrate_fail` (base pages),
//! `thp_migration_success`.
//!
//! Failure, as in the kernel, has two places. `migrate_misplaced_folio_
//! prepare` refuses a destination whose free memory would fall below its
//! high watermark (`migrate_balanced_pgdat`): the fault is flagged
//! `TNF_MIGRATE_FAIL` and no pgmigrate counter moves. `migrate_pages`
//! itself fails when the node-exact allocation fails, here when the
//! destination is outside the task's cpuset.mems (`__GFP_HARDWALL`) or
//! has no room: `pgmigrate_fail` counts the pages.
//!
//! Proposal 3 (`numalab.interleave_numa_balancing`, not mainline): flagged
//! interleave (MPOL_F_MOFT) makes `mpol_misplaced` answer NUMA_TASK_MIG, so
//! its faults place tasks and move no page; `as-posted` adds the posting's
//! two defects (NUMA_TASK_MIG is node 1: the 4 KiB path skips every
//! migration to node 1; the THP path takes it as a target).
//!
//! Left out: memory tiering (promotion by hotness), file folios (exec
//! shared and dirty ones are never migrated), `folio_isolate_lru`
//! failing, PTE batching of large folios other than
//! PMD THPs, the mm_migrate_pages_start event, `thp_migration_fail`.

use super::{
    cpu_pid_to_cpupid, cpupid_match_pid, cpupid_pid_unset, cpupid_to_cpu, faults_idx, hash_32,
    ACTIVE_NODE_FRACTION, MIN_FREE_KBYTES_RANGE, NUMA_CPU, NUMA_EARLY_SCAN_SEQ, NUMA_MEM,
    TNF_FAULT_LOCAL, TNF_MIGRATED, TNF_MIGRATE_FAIL, TNF_SHARED, VMA_PID_HASH_BITS,
    WATERMARK_SCALE_FACTOR,
};
use crate::kernel::ids::NodeMaskExt;
use crate::kernel::mm::mempolicy::MpolMode;
use crate::kernel::mm::page_alloc::alloc_pages_on;
use crate::kernel::mm::MmState;
use crate::kernel::stats::Vm;
use crate::kernel::sysctl::knob;
use crate::kernel::{CpuId, Kernel, NodeId, TaskId, VmaId};
use crate::physics::costs;
use numalab_knobs::knob::InterleaveNumaBalancing;

/// Integer square root (`int_sqrt`).
fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// NUMA_TASK_MIG as posted in proposal 3 (include/linux/numa.h `(1)`): the
/// "move the task, not the page" answer of `mpol_misplaced`, which is also
/// node 1.
pub const NUMA_TASK_MIG_AS_POSTED: NodeId = NodeId::new(1);

impl Kernel {
    /// `do_numa_page` / `do_huge_pmd_numa_page` (mm/memory.c): task `t` on
    /// `cpu` touched PROT_NONE page `idx` of VMA `vma`. Restores the
    /// mapping, asks whether the folio is misplaced, migrates it if so, and
    /// accounts the fault (`task_numa_fault`). Returns the CPU time the
    /// fault cost (ns). Threads racing on the same page are handled by
    /// the caller (kernel/mm/fault.rs): they find `!pte_same` and retry.
    pub fn do_numa_page(&mut self, t: TaskId, cpu: CpuId, vma: VmaId, idx: usize) -> f64 {
        self.do_numa_page_timed(t, cpu, vma, idx).0
    }

    /// [`Kernel::do_numa_page`], also returning how long the migration it
    /// did held the folio (ns; 0 without one): a racing fault waits that
    /// long on the migration entry (`migration_entry_wait`).
    pub fn do_numa_page_timed(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
    ) -> (f64, f64) {
        let mm = self.tasks[t].mm;
        let page = self.mem.mms[mm].vmas[vma].pages[idx];
        let nr_pages = self.mem.mms[mm].vmas[vma].nr_base_pages();
        // pte_modify(old_pte, vma->vm_page_prot): the page is accessible
        // again whatever happens below.
        self.mem.mms[mm].vmas[vma].set_protnone(idx, false);
        if self.trace.is_some() {
            let v = &self.mem.mms[mm].vmas[vma];
            let addr = v.start + idx as u64 * v.page_size();
            // exc_page_fault → trace_page_fault_user. The model has no
            // instruction pointer (ip=0x0) and no read/write split: the
            // error code is X86_PF_USER|X86_PF_PROT of a read.
            self.trace(Some(t), cpu, "page_fault_user", || {
                format!("address=0x{addr:x} ip=0x0 error_code=0x5")
            });
        }
        let mut cost = costs::HINT_FAULT_NS * self.hint_fault_rescale();
        let mut held = 0.0;
        let mut flags = 0u32;
        // Flag if the folio is shared between multiple address spaces
        // (`folio_likely_mapped_shared` on a VM_SHARED mapping): later
        // used when deciding whether to group tasks together
        // (`numalab.tnf_shared=0`: never, an ablation).
        if self.mem.folio_likely_mapped_shared(mm, vma, idx) && self.knobs.get(knob::TNF_SHARED) {
            flags |= TNF_SHARED;
        }
        let mut nid = page.node_id();
        let (target, last_cpupid) = self.numa_migrate_check(t, cpu, vma, idx, &mut flags);
        // Proposal 3 as posted: `do_numa_page` treats a target equal to
        // NUMA_TASK_MIG (defined as 1, a valid node id) as "move the task"
        // and skips the migration, under any policy; `do_huge_pmd_numa_page`
        // was not changed, so a PMD THP still migrates to it.
        let target = target.filter(|&n| {
            self.knobs.get(knob::INTERLEAVE_NUMA_BALANCING) != InterleaveNumaBalancing::AsPosted
                || self.mem.mms[mm].vmas[vma].is_thp()
                || n != NUMA_TASK_MIG_AS_POSTED
        });
        if let Some(target) = target {
            let (c, moved) = self.numa_migrate_misplaced(t, vma, idx, target, nr_pages, &mut flags);
            cost += c;
            if moved {
                nid = target;
                held = c;
            }
        }
        self.task_numa_fault(t, cpu, last_cpupid, nid, nr_pages, flags);
        (cost, held)
    }

    /// The hinting fault's migration of page `idx` of `vma` (`nr_pages`
    /// base pages) to `target`: `migrate_misplaced_folio_prepare`, then
    /// `migrate_misplaced_folio`. Adds `TNF_MIGRATED` or `TNF_MIGRATE_FAIL`
    /// to `flags`; returns the work's cost (ns) and whether the page moved.
    pub(super) fn numa_migrate_misplaced(
        &mut self,
        t: TaskId,
        vma: VmaId,
        idx: usize,
        target: NodeId,
        nr_pages: u64,
        flags: &mut u32,
    ) -> (f64, bool) {
        if !self.mem.migrate_misplaced_folio_prepare(target, nr_pages) {
            *flags |= TNF_MIGRATE_FAIL;
            return (0.0, false);
        }
        match self.migrate_misplaced_folio(t, vma, idx, target) {
            Ok(c) => {
                *flags |= TNF_MIGRATED;
                (c, true)
            }
            Err(c) => {
                *flags |= TNF_MIGRATE_FAIL;
                (c, false)
            }
        }
    }

    /// What turns the hinting fault path's native costs (the fault's own
    /// work and its migration's, not the page copy, which runs at the
    /// machine's bandwidth) into the units [`Kernel::charge_sys`] takes:
    /// `hint_fault_cost_scale / cost_scale` when the machine gives one
    /// (`[kernel] hint_fault_cost_scale`), else 1.
    pub(super) fn hint_fault_rescale(&self) -> f64 {
        let k = &self.m.kernel;
        k.hint_fault_cost_scale.map_or(1.0, |f| f / k.cost_scale)
    }

    /// `numa_migrate_check` (mm/memory.c): reads `last_cpupid`, marks the
    /// VMA accessed by this pid, counts the fault (`numa_hint_faults`,
    /// `numa_hint_faults_local`) and returns `mpol_misplaced`'s target with
    /// the old `last_cpupid` (the folio's: a shared mapping's is the
    /// object's, kernel/mm/shmem.rs). Left out: `TNF_NO_GROUP` (every PTE
    /// here is writable).
    pub fn numa_migrate_check(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
        flags: &mut u32,
    ) -> (Option<NodeId>, u32) {
        let mm = self.tasks[t].mm;
        let last_cpupid = self.mem.folio_last_cpupid(mm, vma, idx);
        // vma_set_access_pid_bit
        let bit = hash_32(self.tasks[t].pid as u32, VMA_PID_HASH_BITS);
        if let Some(ns) = self.mem.mms[mm].vmas[vma].numab.as_mut() {
            ns.pids_active[1] |= 1u64 << bit;
        }
        self.count_memcg_event(t, Vm::NumaHintFaults, 1);
        if self.mem.mms[mm].vmas[vma].pages[idx].node_id() == self.cpu_node(cpu) {
            self.vmstat.add(Vm::NumaHintFaultsLocal, 1);
            *flags |= TNF_FAULT_LOCAL;
            self.numa_local_fault_record_v1(t, cpu, vma, idx);
        }
        (self.mpol_misplaced(t, cpu, vma, idx), last_cpupid)
    }

    /// `mpol_misplaced` (mm/mempolicy.c): the node page `idx` should move
    /// to, or None. Needs MPOL_F_MOF. The default policy
    /// (`preferred_node_policy[]`, MPOL_PREFERRED of the faulting node with
    /// MOF|MORON) keeps local pages and targets the faulting node; BIND and
    /// PREFERRED_MANY with MPOL_F_NUMA_BALANCING target the faulting node
    /// only inside their nodemask; MORON passes through
    /// `should_numa_migrate_memory`. Proposal 3's MPOL_F_MOFT (flagged
    /// interleave, `numalab.interleave_numa_balancing`) answers
    /// NUMA_TASK_MIG before any of that: the fault is accounted to the
    /// page's node, so the task may move, but no page migrates and the
    /// page's `last_cpupid` is never updated (so every such fault is a
    /// first, private one). As intended that is None here; as posted it is
    /// node 1 ([`NUMA_TASK_MIG_AS_POSTED`]), which only the 4 KiB path
    /// skips. Plain INTERLEAVE has no MOF and answers None.
    pub fn mainline_mpol_misplaced(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
    ) -> Option<NodeId> {
        let mm = self.tasks[t].mm;
        let pol = self.vma_policy(t, vma);
        if !pol.mof {
            return None;
        }
        if pol.moft {
            return match self.knobs.get(knob::INTERLEAVE_NUMA_BALANCING) {
                InterleaveNumaBalancing::AsPosted => {
                    Some(NUMA_TASK_MIG_AS_POSTED).filter(|n| n.index() < self.m.nr_nodes())
                }
                _ => None,
            };
        }
        let curnid = self.mem.mms[mm].vmas[vma].pages[idx].node_id();
        let thisnid = self.cpu_node(cpu);
        let polnid = match pol.mode {
            MpolMode::Default => {
                if curnid == thisnid {
                    return None;
                }
                thisnid
            }
            MpolMode::Local => thisnid,
            MpolMode::Preferred => {
                if pol.nodes.has(curnid) {
                    return None;
                }
                NodeId::new(pol.nodes.first()?)
            }
            MpolMode::Interleave => return None,
            MpolMode::Bind | MpolMode::PreferredMany => {
                if pol.moron {
                    if !pol.nodes.has(thisnid) {
                        return None;
                    }
                    thisnid
                } else {
                    if pol.nodes.has(curnid) {
                        return None;
                    }
                    *self.mem.zonelists[thisnid]
                        .iter()
                        .find(|&&n| pol.nodes.has(n))?
                }
            }
        };
        let polnid = if pol.moron {
            if !self.should_numa_migrate_memory(t, vma, idx, curnid, cpu) {
                return None;
            }
            thisnid
        } else {
            polnid
        };
        (curnid != polnid).then_some(polnid)
    }

    /// `should_numa_migrate_memory` (fair.c): swaps this task's cpupid into
    /// the page and decides. Early in a task's life first and private
    /// faults migrate at once; otherwise the two-stage filter refuses a
    /// page whose previous fault came from another node; private faults
    /// migrate; shared ones follow the group's CPU and memory use with 3/4
    /// hysteresis. Left out: memory tiering's hotness test.
    pub fn mainline_should_numa_migrate_memory(
        &mut self,
        t: TaskId,
        vma: VmaId,
        idx: usize,
        src_nid: NodeId,
        dst_cpu: CpuId,
    ) -> bool {
        let mm = self.tasks[t].mm;
        let dst_nid = self.cpu_node(dst_cpu);
        if self.mem.nodes[dst_nid].total_pages == 0 {
            return false;
        }
        let pid = self.tasks[t].pid;
        let this_cpupid = cpu_pid_to_cpupid(dst_cpu, pid);
        let last_cpupid = self.mem.folio_xchg_last_cpupid(mm, vma, idx, this_cpupid);
        let n = &self.tasks[t].numa;
        // Without preferred nodes (3.9) "no preferred node yet" would hold
        // for good; only the task's early passes skip the filter then.
        let no_pref = n.preferred_nid.is_none() && self.numa_preferred_node_on();
        if (no_pref || n.scan_seq <= NUMA_EARLY_SCAN_SEQ)
            && (cpupid_pid_unset(last_cpupid) || cpupid_match_pid(pid, last_cpupid))
        {
            return true;
        }
        // Two-stage filter: the previous fault must have come from the
        // same node.
        if !cpupid_pid_unset(last_cpupid) {
            let last_cpu = cpupid_to_cpu(last_cpupid);
            let last_nid = self
                .m
                .cpus
                .get(last_cpu.index())
                .map(|c| NodeId::new(c.node));
            if last_nid != Some(dst_nid) {
                return false;
            }
        }
        if cpupid_match_pid(pid, last_cpupid) {
            return true;
        }
        let Some(g) = self.numa_group(t) else {
            return true;
        };
        let nn = self.m.nr_nodes();
        let cpu_f = |nid: NodeId| {
            g.faults[faults_idx(nn, NUMA_CPU, nid, 0)] + g.faults[faults_idx(nn, NUMA_CPU, nid, 1)]
        };
        let mem_f = |nid: NodeId| {
            g.faults[faults_idx(nn, NUMA_MEM, nid, 0)] + g.faults[faults_idx(nn, NUMA_MEM, nid, 1)]
        };
        if cpu_f(dst_nid) > cpu_f(src_nid) * ACTIVE_NODE_FRACTION {
            return true;
        }
        cpu_f(dst_nid) * mem_f(src_nid) * 3 > cpu_f(src_nid) * mem_f(dst_nid) * 4
    }

    /// `migrate_misplaced_folio` (mm/migrate.c → `migrate_pages`,
    /// MIGRATE_ASYNC, MR_NUMA_MISPLACED): moves page `idx` of VMA `vma` to
    /// `nid`. The destination folio is allocated node-exact
    /// (`alloc_misplaced_dst_folio`: `__GFP_THISNODE`, hardwalled by the
    /// task's cpuset.mems, no reclaim). Returns the cost (ns) on success,
    /// the cost of the partial work on failure (`pgmigrate_fail`); see
    /// [`Kernel::migrate_cost`]. Left out: splitting (NUMA migration never
    /// splits a THP), retries.
    pub fn migrate_misplaced_folio(
        &mut self,
        t: TaskId,
        vma: VmaId,
        idx: usize,
        nid: NodeId,
    ) -> Result<f64, f64> {
        let mm = self.tasks[t].mm;
        let v = &self.mem.mms[mm].vmas[vma];
        let nr = v.nr_base_pages();
        let thp = v.is_thp();
        let bytes = v.page_size() as f64;
        let src = v.pages[idx].node_id();
        let allowed = self.task_mems(t).has(nid);
        let ok = allowed && alloc_pages_on(&mut self.mem.nodes, &[nid], nr).is_some();
        let thp_n = u64::from(thp);
        if !ok {
            let cost = self.migrate_cost(t, src, nid, nr, bytes, false);
            self.vmstat.add(Vm::PgmigrateFail, nr);
            self.trace(Some(t), self.tasks[t].cpu, "mm_migrate_pages", || {
                format!(
                    "nr_succeeded=0 nr_failed={nr} nr_thp_succeeded=0 nr_thp_failed={thp_n} nr_thp_split=0 nr_split=0 mode=MIGRATE_ASYNC reason=numa_misplaced"
                )
            });
            return Err(cost);
        }
        self.mem.nodes[src].free_pages += nr;
        // folio_migrate_flags copies last_cpupid; set_page_node keeps it.
        self.mem.mms[mm].vmas[vma].set_page_node(idx, nid);
        // The other mms mapping a shared folio follow it.
        self.mem.remove_migration_ptes(mm, vma, idx, nid);
        self.vmstat.add(Vm::PgmigrateSuccess, nr);
        // The destination folio (`alloc_misplaced_dst_folio`:
        // `__folio_alloc_node(__GFP_THISNODE)`) is an allocation like any
        // other: zone_statistics counts a hit on `nid`, local when the
        // migrating CPU is on it (the guest: numa_hit = first touches +
        // numa_pages_migrated, validate/kernel).
        let here = u64::from(self.cpu_node(self.tasks[t].cpu) == nid);
        self.zone_statistics(true, false, here, 1 - here);
        if thp {
            self.vmstat.add(Vm::ThpMigrationSuccess, 1);
        }
        self.count_memcg_event(t, Vm::NumaPagesMigrated, nr);
        self.trace(Some(t), self.tasks[t].cpu, "mm_migrate_pages", || {
            format!(
                "nr_succeeded={nr} nr_failed=0 nr_thp_succeeded={thp_n} nr_thp_failed=0 nr_thp_split=0 nr_split=0 mode=MIGRATE_ASYNC reason=numa_misplaced"
            )
        });
        Ok(self.migrate_cost(t, src, nid, nr, bytes, true))
    }

    /// What `migrate_pages` costs the faulting task for one folio of `nr`
    /// base pages (`bytes`) from `src` to `dst` (ns). With
    /// `numalab.migrate_cost`:
    /// - isolation: `folio_isolate_lru` under the source lruvec's
    ///   `lru_lock` (in `migrate_misplaced_folio_prepare`);
    /// - the destination folio from the faulting CPU's per-CPU list for
    ///   `dst` (`zone->lock` on a refill) and `migrate_folio`'s work;
    /// - unmap: `try_to_migrate` installing the migration entry. The old
    ///   PTE is PROT_NONE, not `pte_accessible`, so no TLB flush
    ///   (kernel/mm/tlb.rs);
    /// - the copy, `folio_copy` on the faulting CPU: every line read from
    ///   `src` and written to `dst` (a write allocates the line first),
    ///   each at that core's bandwidth to the node (its line-fill buffers
    ///   over the latency to the node: `core_gbps` scaled by local over
    ///   remote latency);
    /// - remap: `remove_migration_ptes`, and the source folio freed to the
    ///   per-CPU list for `src`.
    ///
    /// A failed one (no destination folio) costs the isolation, the
    /// attempt and the putback (`lru_lock` again). Without the switch: a
    /// success costs `MIGRATE_PAGE_FIXED_NS` plus the bytes at the core's
    /// local bandwidth, a failure nothing.
    pub fn migrate_cost(
        &mut self,
        t: TaskId,
        src: NodeId,
        dst: NodeId,
        nr: u64,
        bytes: f64,
        ok: bool,
    ) -> f64 {
        let work = self.hint_fault_rescale();
        if !self.mem.locks.on.migrate_cost {
            return if ok {
                costs::MIGRATE_PAGE_FIXED_NS * work + self.bytes_cost_ns(bytes)
            } else {
                0.0
            };
        }
        let cpu = self.tasks[t].cpu;
        let isolate = self.lru_lock(cpu, src);
        if !ok {
            return (isolate + costs::MIGRATE_ALLOC_NS + self.lru_lock(cpu, src)) * work;
        }
        let alloc = costs::MIGRATE_ALLOC_NS + self.pcp_alloc(cpu, dst, nr);
        let cn = self.cpu_node(cpu).index();
        let local = self.m.latency_ns[cn][cn];
        let lat = |n: NodeId| self.m.latency_ns[cn][n.index()];
        let copy = self.bytes_cost_ns(bytes) * (lat(src) + lat(dst)) / local;
        let remap = costs::MIGRATE_REMAP_NS + self.pcp_free(cpu, src, nr);
        isolate * work + alloc * work + costs::MIGRATE_UNMAP_NS * work + copy + remap * work
    }
}

impl MmState {
    /// `high_wmark_pages` of node `nid`: `min_free_kbytes` (the square root
    /// of 16 x memory in KiB, clamped) shared among nodes by size, plus
    /// twice `max(min/4, watermark_scale_factor of the node)`. Left out:
    /// zones, lowmem reserves, watermark boosting.
    pub fn high_wmark_pages(&self, nid: NodeId) -> u64 {
        let (min, tmp) = self.wmark_parts(nid);
        min + 2 * tmp
    }

    /// `low_wmark_pages` of node `nid`: the min watermark plus one step
    /// (see [`MmState::high_wmark_pages`]).
    pub fn low_wmark_pages(&self, nid: NodeId) -> u64 {
        let (min, tmp) = self.wmark_parts(nid);
        min + tmp
    }

    /// The min watermark of `nid` and the step between watermarks
    /// (`__setup_per_zone_wmarks`), as the kernel sets them at boot.
    fn wmark_parts(&self, nid: NodeId) -> (u64, u64) {
        self.wmarks.get_or_init(|| {
            NodeId::range(self.nodes.len())
                .map(|n| self.wmark_parts_at_boot(n))
                .collect()
        })[nid]
    }

    /// [`MmState::wmark_parts`] worked out from the nodes' sizes.
    fn wmark_parts_at_boot(&self, nid: NodeId) -> (u64, u64) {
        let total_pages: u64 = self.nodes.iter().map(|n| n.total_pages).sum();
        if total_pages == 0 {
            return (0, 0);
        }
        let kbytes = total_pages * (Kernel::page_bytes() / 1024);
        let (lo, hi) = MIN_FREE_KBYTES_RANGE;
        let min_free_kbytes = int_sqrt(kbytes * 16).clamp(lo, hi);
        let node_pages = self.nodes[nid].total_pages;
        let min = min_free_kbytes / (Kernel::page_bytes() / 1024) * node_pages / total_pages;
        let tmp = (min / 4).max(node_pages * WATERMARK_SCALE_FACTOR / 10_000);
        (min, tmp)
    }

    /// `migrate_misplaced_folio_prepare` (mm/migrate.c): may `nr` pages be
    /// migrated to `nid`? Refuses a node whose free memory would not stay
    /// above its high watermark (`migrate_balanced_pgdat`), without
    /// counting a migration failure. Left out: file folios, LRU isolation
    /// failing, waking kswapd (tiering only).
    pub fn migrate_misplaced_folio_prepare(&self, nid: NodeId, nr: u64) -> bool {
        self.nodes[nid].free_pages > self.high_wmark_pages(nid) + nr
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fx;
    use super::super::*;
    use crate::kernel::mm::mempolicy::MemPolicy;
    use crate::kernel::mm::mempolicy::MpolMode;
    use crate::kernel::stats::Vm;
    use crate::kernel::{CgroupId, MmId, TaskId};
    use numalab_topology::NodeMask;

    /// tiny-2n (CPUs 0-1 on node 0, 2-3 on node 1); one task on CPU 0 and
    /// 16 pages on node 1.
    fn setup(policy: Option<MemPolicy>) -> (Kernel, MmId, TaskId) {
        let mut k = fx::kernel("tiny-2n", &[]);
        let mm = fx::add_mm(&mut k, fx::pages(16), false, policy);
        fx::populate(&mut k, mm, 0, 16, fx::n(1));
        let t = fx::add_task(&mut k, mm, fx::c(0));
        (k, mm, t)
    }

    fn node_of(k: &Kernel, mm: MmId, idx: usize) -> usize {
        k.mem.mms[mm].vmas[fx::V0].pages[idx].node_id().index()
    }

    #[test]
    fn hint_fault_cost_scale_rescales_the_fault_and_migration_work_but_not_the_copy() {
        let migrating_fault = |cost: f64, hint: Option<f64>| {
            let (mut k, mm, t) = setup(None);
            k.m.kernel.cost_scale = cost;
            k.m.kernel.hint_fault_cost_scale = hint;
            fx::mark(&mut k, mm, 0);
            let ns = k.do_numa_page(t, fx::c(0), fx::V0, 0);
            assert_eq!(node_of(&k, mm, 0), 0, "migrated");
            // What charge_sys makes of it.
            ns * cost
        };
        let native = migrating_fault(1.0, None);
        let (k, _, _) = setup(None);
        // tiny-2n: the copy reads node 1 and writes node 0.
        let lat = &k.m.latency_ns;
        let copy = 4096.0 / k.m.bandwidth.core_gbps * (lat[0][1] + lat[0][0]) / lat[0][0];
        assert!(native > copy);
        let slow = migrating_fault(180.0, None);
        assert!(
            ((slow - copy) / (native - copy) - 180.0).abs() < 1e-6,
            "{slow} {native}"
        );
        let calibrated = migrating_fault(180.0, Some(60.0));
        assert!(
            ((calibrated - copy) / (native - copy) - 60.0).abs() < 1e-6,
            "{calibrated}"
        );
    }

    #[test]
    fn a_migration_leaves_the_page_read_only_for_a_write_protect_fault() {
        // The first hinting fault of a new task migrates the page (below):
        // the PTE comes back read-only, so a write retried faults again.
        // Returns the faults counted (vmstat, memory.stat) and the cost.
        let fault = |sets: &[&str], write: bool| {
            let mut k = fx::kernel("tiny-2n", sets);
            let mm = fx::add_mm(&mut k, fx::pages(16), false, None);
            fx::populate(&mut k, mm, 0, 16, fx::n(1));
            let t = fx::add_task(&mut k, mm, fx::c(0));
            fx::mark(&mut k, mm, 0);
            let c = k
                .handle_mm_fault_racing(t, fx::c(0), fx::V0, 0, write, Default::default())
                .expect("fault");
            assert_eq!(node_of(&k, mm, 0), 0, "migrated");
            let memcg = k.cgroups.all[CgroupId::new(0)].stat.get(Vm::PgFault);
            (k.vmstat.get(Vm::PgFault), memcg, c.cpu_ns)
        };
        let (read, read_memcg, read_ns) = fault(&[], false);
        assert_eq!((read, read_memcg), (1, 1), "the hinting fault");
        let (write, write_memcg, write_ns) = fault(&[], true);
        assert_eq!((write, write_memcg), (2, 2), "and the write-protect fault");
        let wp = write_ns - read_ns;
        assert!(
            wp > 0.0 && wp < crate::physics::costs::HINT_FAULT_NS,
            "{wp}"
        );
        // 3.8-3.13's _PAGE_NUMA kept the write bit.
        let (old, _, old_ns) = fault(&["numalab.migration_wp_fault=0"], true);
        assert_eq!((old, old_ns), (read, read_ns));
    }

    #[test]
    fn first_fault_of_a_new_task_migrates_at_once() {
        let (mut k, mm, t) = setup(None);
        fx::mark(&mut k, mm, 0);
        let cost = k.do_numa_page(t, fx::c(0), fx::V0, 0);
        assert_eq!(
            node_of(&k, mm, 0),
            0,
            "no preferred node yet: the page follows at once"
        );
        assert!(!k.mem.mms[mm].vmas[fx::V0].pages[0].protnone);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 1);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaultsLocal), 0);
        assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), 1);
        assert_eq!(k.vmstat.get(Vm::PgmigrateSuccess), 1);
        assert_eq!(
            k.cgroups.all[CgroupId::new(0)]
                .stat
                .get(Vm::NumaPagesMigrated),
            1
        );
        assert_eq!(k.tasks[t].numa.pages_migrated, 1);
        assert!(
            cost > crate::physics::costs::HINT_FAULT_NS
                + crate::physics::costs::MIGRATE_PAGE_FIXED_NS
        );
        // Accounted on the node the page went to; a first touch is private.
        let nn = k.m.nr_nodes();
        assert_eq!(
            k.tasks[t].numa.faults[faults_idx(nn, NUMA_MEMBUF, fx::n(0), 1)],
            1
        );
        k.check_invariants().unwrap();
    }

    #[test]
    fn two_stage_filter_refuses_the_first_remote_fault_and_accepts_the_second() {
        let (mut k, mm, t) = setup(None);
        // A settled task: it has a preferred node and is past its first passes.
        k.sched_setnuma(t, Some(fx::n(0)));
        k.tasks[t].numa.scan_seq = NUMA_EARLY_SCAN_SEQ + 1;
        // Its previous fault on this page came from node 1 (CPU 2).
        let pid = k.tasks[t].pid;
        k.mem.mms[mm].vmas[fx::V0].pages[3].last_cpupid = cpu_pid_to_cpupid(fx::c(2), pid);
        fx::mark(&mut k, mm, 3);
        k.do_numa_page(t, fx::c(0), fx::V0, 3);
        assert_eq!(node_of(&k, mm, 3), 1, "first fault from node 0 is refused");
        assert_eq!(
            k.mem.mms[mm].vmas[fx::V0].pages[3].last_cpupid,
            cpu_pid_to_cpupid(fx::c(0), pid)
        );
        fx::mark(&mut k, mm, 3);
        k.do_numa_page(t, fx::c(0), fx::V0, 3);
        assert_eq!(node_of(&k, mm, 3), 0, "second fault from node 0 migrates");
        assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), 1);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 2);
    }

    #[test]
    fn a_shared_page_last_used_from_another_node_stays_put() {
        let (mut k, mm, t) = setup(None);
        k.sched_setnuma(t, Some(fx::n(0)));
        k.tasks[t].numa.scan_seq = NUMA_EARLY_SCAN_SEQ + 1;
        // Another pid faulted it last, from node 1.
        k.mem.mms[mm].vmas[fx::V0].pages[5].last_cpupid = cpu_pid_to_cpupid(fx::c(3), 77);
        fx::mark(&mut k, mm, 5);
        k.do_numa_page(t, fx::c(0), fx::V0, 5);
        assert_eq!(node_of(&k, mm, 5), 1);
    }

    #[test]
    fn local_faults_do_not_migrate_and_count_as_local() {
        let (mut k, mm, _) = setup(None);
        let t2 = fx::add_task(&mut k, mm, fx::c(2));
        fx::mark(&mut k, mm, 1);
        k.do_numa_page(t2, fx::c(2), fx::V0, 1);
        assert_eq!(node_of(&k, mm, 1), 1);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaultsLocal), 1);
        assert_eq!(k.tasks[t2].numa.faults_locality, [0, 1, 0]);
        // mpol_misplaced returns before should_numa_migrate_memory.
        assert!(cpupid_unset(
            k.mem.mms[mm].vmas[fx::V0].pages[1].last_cpupid
        ));
    }

    #[test]
    fn migration_to_a_nearly_full_node_fails_in_prepare_without_pgmigrate_fail() {
        let (mut k, mm, t) = setup(None);
        // Node 0 has no more than its high watermark free.
        let wm = k.mem.high_wmark_pages(fx::n(0));
        assert!(wm > 0);
        k.mem.nodes[fx::n(0)].free_pages = wm;
        fx::mark(&mut k, mm, 0);
        k.do_numa_page(t, fx::c(0), fx::V0, 0);
        assert_eq!(node_of(&k, mm, 0), 1);
        assert_eq!(k.tasks[t].numa.faults_locality[2], 1, "TNF_MIGRATE_FAIL");
        assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), 0);
        // migrate_misplaced_folio_prepare refuses before migrate_pages:
        // mainline counts no pgmigrate_fail for it.
        assert_eq!(k.vmstat.get(Vm::PgmigrateFail), 0);
        assert_eq!(k.mem.nodes[fx::n(0)].free_pages, wm);
    }

    #[test]
    fn migration_outside_cpuset_mems_fails_in_migrate_pages_and_counts_pgmigrate_fail() {
        let (mut k, mm, t) = setup(None);
        let cg = k
            .cgroups
            .mkdir("/m1", None, Some(NodeMask::single(1)))
            .unwrap();
        k.tasks[t].cgroup = cg;
        fx::mark(&mut k, mm, 0);
        k.do_numa_page(t, fx::c(0), fx::V0, 0);
        assert_eq!(node_of(&k, mm, 0), 1);
        assert_eq!(k.vmstat.get(Vm::PgmigrateFail), 1);
        assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), 0);
        assert_eq!(k.tasks[t].numa.faults_locality[2], 1);
        k.check_invariants().unwrap();
    }

    #[test]
    fn a_thp_migrates_as_one_folio_of_512_pages() {
        let mut k = fx::kernel("tiny-2n", &[]);
        let mm = fx::add_mm(&mut k, 4 << 20, true, None);
        fx::populate(&mut k, mm, 0, 2, fx::n(1));
        let t = fx::add_task(&mut k, mm, fx::c(0));
        fx::mark(&mut k, mm, 1);
        k.do_numa_page(t, fx::c(0), fx::V0, 1);
        assert_eq!(node_of(&k, mm, 1), 0);
        assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), 512);
        assert_eq!(k.vmstat.get(Vm::PgmigrateSuccess), 512);
        assert_eq!(k.vmstat.get(Vm::ThpMigrationSuccess), 1);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 1);
        k.check_invariants().unwrap();
    }

    #[test]
    fn bind_with_numa_balancing_migrates_only_inside_its_nodes() {
        let bind0 = MemPolicy {
            mode: MpolMode::Bind,
            nodes: NodeMask::single(0),
            mof: true,
            moron: true,
            moft: false,
        };
        let (mut k, mm, t) = setup(Some(bind0));
        fx::mark(&mut k, mm, 0);
        k.do_numa_page(t, fx::c(0), fx::V0, 0);
        assert_eq!(node_of(&k, mm, 0), 0, "node 0 is inside the mask");
        // A fault from node 1 on a node-0 page: node 1 is outside the mask.
        let t2 = fx::add_task(&mut k, mm, fx::c(2));
        fx::mark(&mut k, mm, 0);
        k.do_numa_page(t2, fx::c(2), fx::V0, 0);
        assert_eq!(node_of(&k, mm, 0), 0);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 2);
        // Plain bind (no MPOL_F_NUMA_BALANCING) never migrates on fault.
        let plain = MemPolicy {
            mof: false,
            moron: false,
            ..bind0
        };
        let (mut k, mm, t) = setup(Some(plain));
        fx::mark(&mut k, mm, 0);
        k.do_numa_page(t, fx::c(0), fx::V0, 0);
        assert_eq!(node_of(&k, mm, 0), 1);
    }

    #[test]
    fn high_watermark_is_small_but_grows_with_the_node() {
        let k = fx::kernel("tiny-2n", &[]);
        let w = k.mem.high_wmark_pages(fx::n(0));
        // ~5 MB of a 1 GiB node.
        assert!(w > 512 && w < 4096, "{w}");
        let big = fx::kernel("spr-4n", &[]);
        assert!(big.mem.high_wmark_pages(fx::n(0)) > 50 * w);
    }
}
