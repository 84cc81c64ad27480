//! Unit tests of memory shared between processes (kernel/mm/shmem.rs) as
//! NUMA balancing sees it: one folio behind two mms' PTEs, each mm
//! marking and faulting its own, `TNF_SHARED` joining tasks of two
//! processes into one numa group (and no join without it), and a
//! migration moving the page for both mms.

use super::tests::fx;
use super::*;
use crate::kernel::mm::NO_NODE;
use crate::kernel::stats::Vm;
use crate::kernel::{MmId, TaskId};

/// tiny-2n (CPUs 0-1 on node 0, 2-3 on node 1): two mms of 16 pages each,
/// mapping one shared object when `shared`, else each its own private
/// memory; task `a` of the first on CPU 0, task `b` of the second on
/// CPU 2; knobs `sets`.
fn two_procs(shared: bool, sets: &[&str]) -> (Kernel, [MmId; 2], [TaskId; 2]) {
    let mut k = fx::kernel("tiny-2n", sets);
    let mms = [0, 1].map(|_| fx::add_mm(&mut k, fx::pages(16), false, None));
    if shared {
        for mm in mms {
            let mut v = k.mem.mms[mm].vmas[fx::V0].clone();
            k.mem.shmem_attach("shm", mm, fx::V0, &mut v).unwrap();
            k.mem.mms[mm].vmas[fx::V0] = v;
        }
    }
    let a = fx::add_task(&mut k, mms[0], fx::c(0));
    let b = fx::add_task(&mut k, mms[1], fx::c(2));
    (k, mms, [a, b])
}

/// `t` (of `mm`, on `cpu`) touches page `idx`: a first touch, or (marked
/// PROT_NONE first, as its mm's scan would) a hinting fault.
fn touch(k: &mut Kernel, t: TaskId, mm: MmId, cpu: usize, idx: usize) {
    if k.mem.mms[mm].vmas[fx::V0].pages[idx].nid != NO_NODE {
        fx::mark(k, mm, idx);
    }
    k.handle_mm_fault(t, fx::c(cpu), fx::V0, idx)
        .expect("fault");
}

fn free(k: &Kernel, n: usize) -> u64 {
    k.mem.nodes()[fx::n(n)].free_pages
}

#[test]
fn one_folio_two_ptes_each_mm_faults_its_own() {
    let (mut k, [ma, mb], [a, b]) = two_procs(true, &[]);
    let (free0, free1) = (free(&k, 0), free(&k, 1));
    // a's first touch allocates on node 0; b's PTE is still empty.
    touch(&mut k, a, ma, 0, 3);
    assert_eq!(free(&k, 0), free0 - 1);
    assert_eq!(k.mem.mms[mb].vmas[fx::V0].pages[3].nid, NO_NODE);
    assert_eq!(k.mem.folio_mapcount(ma, fx::V0, 3), 1);
    // b's touch maps the same folio: no allocation, a minor fault.
    touch(&mut k, b, mb, 2, 3);
    assert_eq!((free(&k, 0), free(&k, 1)), (free0 - 1, free1));
    assert_eq!(k.mem.mms[mb].vmas[fx::V0].pages[3].node_id(), fx::n(0));
    assert_eq!(k.mem.folio_mapcount(mb, fx::V0, 3), 2);
    assert_eq!(k.vmstat.get(Vm::PgFault), 2);
    assert_eq!(k.vmstat.get(Vm::NumaHit), 1, "one allocation");
    // Each mm's mark is its own PTE's.
    fx::mark(&mut k, ma, 3);
    assert!(k.mem.mms[ma].vmas[fx::V0].pages[3].protnone);
    assert!(!k.mem.mms[mb].vmas[fx::V0].pages[3].protnone);
    // b's hinting fault (remote: node 0 from CPU 2) stamps the folio's one
    // last_cpupid, which a's mapping reads; a's mark is not b's fault.
    fx::mark(&mut k, mb, 3);
    k.handle_mm_fault(b, fx::c(2), fx::V0, 3).unwrap();
    let stamp = cpu_pid_to_cpupid(fx::c(2), k.tasks[b].pid);
    assert_eq!(k.mem.folio_last_cpupid(ma, fx::V0, 3), stamp);
    assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 1);
    let _ = a;
    k.check_invariants().unwrap();
}

/// Each task faults on a page the other faulted last. Only a shared
/// mapping (TNF_SHARED) lets the two processes' tasks join one group;
/// knobs `sets`.
fn cross_faults(shared: bool, sets: &[&str]) -> Kernel {
    let (mut k, [ma, mb], [a, b]) = two_procs(shared, sets);
    for (t, mm, cpu) in [(a, ma, 0), (b, mb, 2)] {
        for idx in [3, 4] {
            touch(&mut k, t, mm, cpu, idx);
        }
    }
    let stamp = |k: &Kernel, t: TaskId, cpu: usize| cpu_pid_to_cpupid(fx::c(cpu), k.tasks[t].pid);
    // Page 3 last faulted by a, page 4 by b (a private mm's page is set by
    // hand: no fault of the other process can reach it).
    let (sa, sb) = (stamp(&k, a, 0), stamp(&k, b, 2));
    k.mem.folio_xchg_last_cpupid(ma, fx::V0, 3, sa);
    k.mem.folio_xchg_last_cpupid(mb, fx::V0, 3, sa);
    k.mem.folio_xchg_last_cpupid(ma, fx::V0, 4, sb);
    k.mem.folio_xchg_last_cpupid(mb, fx::V0, 4, sb);
    // b meets a's stamp (a has no group yet: b only makes its own), then
    // a meets b's and joins b's group of the same size (tie: by address).
    touch(&mut k, b, mb, 2, 3);
    touch(&mut k, a, ma, 0, 4);
    k.check_invariants().unwrap();
    k
}

#[test]
fn tasks_of_two_processes_join_one_group_only_on_a_shared_mapping() {
    let k = cross_faults(true, &[]);
    let (a, b) = (TaskId::new(0), TaskId::new(1));
    assert_ne!(k.task_numa_group_id(a), 0);
    assert_eq!(k.task_numa_group_id(a), k.task_numa_group_id(b));
    assert_eq!(k.numa_group(a).map(|g| g.nr_tasks), Some(2));
    let k = cross_faults(false, &[]);
    assert_ne!(k.task_numa_group_id(a), k.task_numa_group_id(b));
    // The ablation: a shared mapping without TNF_SHARED joins nobody.
    let k = cross_faults(true, &["numalab.tnf_shared=0"]);
    assert_ne!(k.task_numa_group_id(a), k.task_numa_group_id(b));
}

#[test]
fn a_migration_moves_the_page_for_both_mms() {
    let (mut k, [ma, mb], [a, b]) = two_procs(true, &[]);
    touch(&mut k, a, ma, 0, 5);
    touch(&mut k, b, mb, 2, 5);
    let (free0, free1) = (free(&k, 0), free(&k, 1));
    // a's mm has the page marked when b's fault migrates it.
    fx::mark(&mut k, ma, 5);
    // b's first hinting fault: a young task, nobody's stamp on the folio
    // yet: the page follows b at once.
    touch(&mut k, b, mb, 2, 5);
    assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), 1);
    for mm in [ma, mb] {
        let p = k.mem.mms[mm].vmas[fx::V0].pages[5];
        assert_eq!(p.node_id(), fx::n(1), "mm {mm}: its PTE follows the folio");
        assert!(!p.protnone, "mm {mm}: remove_migration_pte drops the mark");
    }
    // One folio moved: one page freed on node 0, one taken on node 1.
    assert_eq!((free(&k, 0), free(&k, 1)), (free0 + 1, free1 - 1));
    k.check_invariants().unwrap();
}
