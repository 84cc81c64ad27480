//! Unit tests of proposal 3 (`numalab.interleave_numa_balancing`,
//! MPOL_INTERLEAVE | MPOL_F_NUMA_BALANCING): the policy is accepted only
//! with the switch, its memory is scanned and its faults are accounted but
//! never migrate a page, and the as-posted variant's two defects
//! (NUMA_TASK_MIG == node 1 in `do_numa_page`; the THP path not updated).

use super::tests::fx;
use super::*;
use crate::kernel::mm::mempolicy::{mpol_new, MemPolicy};
use crate::kernel::mm::mempolicy::{MpolMode, MpolRequest};
use crate::kernel::stats::Vm;
use crate::kernel::sysctl::knob;
use crate::kernel::{MmId, TaskId};
use numalab_knobs::knob::InterleaveNumaBalancing as Il;

fn flagged_spec(nodes: &[usize]) -> MpolRequest {
    MpolRequest {
        mode: MpolMode::Interleave,
        nodes: nodes.to_vec(),
        numa_balancing: true,
    }
}

/// tiny-2n with the switch at `word`; one VMA of `n` pages (THP or not)
/// under flagged interleave over both nodes, every page on `on`; one task
/// on CPU 0 (node 0).
fn setup(word: &str, thp: bool, n: usize, on: usize) -> (Kernel, MmId, TaskId) {
    let set = format!("numalab.interleave_numa_balancing={word}");
    let mut k = fx::kernel("tiny-2n", &[&set]);
    let il = k.knobs.get(knob::INTERLEAVE_NUMA_BALANCING);
    let pol = mpol_new(&flagged_spec(&[0, 1]), 2, il).expect("accepted");
    let bytes = if thp {
        n as u64 * (2 << 20)
    } else {
        fx::pages(n as u64)
    };
    let mm = fx::add_mm(&mut k, bytes, thp, Some(pol));
    fx::populate(&mut k, mm, 0, n, fx::n(on));
    let t = fx::add_task(&mut k, mm, fx::c(0));
    (k, mm, t)
}

#[test]
fn flagged_interleave_is_einval_when_off_and_names_the_switch() {
    let e = mpol_new(&flagged_spec(&[0, 1]), 2, Il::Off).unwrap_err();
    assert!(e.0.contains("MPOL_F_NUMA_BALANCING"), "{e:?}");
    assert!(e.0.contains("numalab.interleave_numa_balancing"), "{e:?}");
    // Plain interleave stays legal and unscanned.
    let plain = MpolRequest {
        numa_balancing: false,
        ..flagged_spec(&[0, 1])
    };
    assert!(!mpol_new(&plain, 2, Il::Off).unwrap().mof);
}

#[test]
fn flagged_interleave_is_accepted_over_any_nodemask_when_on() {
    for il in [Il::On, Il::AsPosted] {
        for nodes in [&[0usize][..], &[1], &[0, 1], &[0, 2, 3]] {
            let p = mpol_new(&flagged_spec(nodes), 4, il).unwrap();
            assert!(p.mof && p.moft, "{il:?} {nodes:?}");
            assert!(!p.moron, "MOFT, not MORON: pages are not pulled");
        }
        // Other modes keep mainline's rule.
        let pref = MpolRequest {
            mode: MpolMode::Preferred,
            nodes: vec![0],
            numa_balancing: true,
        };
        assert!(mpol_new(&pref, 2, il).is_err());
        // Bind with the flag is unchanged: MOF|MORON, no MOFT.
        let bind = MpolRequest {
            mode: MpolMode::Bind,
            ..flagged_spec(&[0])
        };
        let b = mpol_new(&bind, 2, il).unwrap();
        assert!(b.mof && b.moron && !b.moft);
    }
}

#[test]
fn flagged_interleave_is_scanned_and_its_remote_faults_move_no_page() {
    let (mut k, mm, t) = setup("on", false, 64, 1);
    k.now = 2_000_000_000;
    k.task_numa_work(t, fx::c(0));
    assert!(
        k.vmstat.get(Vm::NumaPteUpdates) > 0,
        "flagged memory is scanned"
    );
    let nn = k.m.nr_nodes();
    for i in 0..64 {
        fx::mark(&mut k, mm, i);
        k.do_numa_page(t, fx::c(0), fx::V0, i);
    }
    assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 64);
    assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), 0);
    assert_eq!(k.vmstat.get(Vm::PgmigrateSuccess), 0);
    assert!(k.mem.mms[mm].vmas[fx::V0]
        .pages
        .iter()
        .all(|p| p.node_id() == fx::n(1)));
    // Accounted on the page's node (private: last_cpupid never set), so
    // placement sees node 1.
    let f = &k.tasks[t].numa.faults;
    assert_eq!(f[faults_idx(nn, NUMA_MEMBUF, fx::n(1), 1)], 64);
    assert_eq!(f[faults_idx(nn, NUMA_MEMBUF, fx::n(0), 1)], 0);
    assert!(cpupid_pid_unset(
        k.mem.mms[mm].vmas[fx::V0].pages[0].last_cpupid
    ));
}

#[test]
fn flagged_thp_does_not_migrate_as_intended_but_does_as_posted() {
    let (mut k, mm, t) = setup("on", true, 2, 0);
    fx::mark(&mut k, mm, 0);
    k.do_numa_page(t, fx::c(2), fx::V0, 0);
    assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), 0);
    // As posted: do_huge_pmd_numa_page takes NUMA_TASK_MIG (1) as a node.
    let (mut k, mm, t) = setup("as-posted", true, 2, 0);
    fx::mark(&mut k, mm, 0);
    k.do_numa_page(t, fx::c(0), fx::V0, 0);
    assert_eq!(
        k.mem.mms[mm].vmas[fx::V0].pages[0].node_id(),
        fx::n(1),
        "the huge page went to node 1 though the task is on node 0"
    );
    assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), 512);
    assert_eq!(k.vmstat.get(Vm::ThpMigrationSuccess), 1);
}

#[test]
fn as_posted_never_migrates_a_4k_page_to_node_1_under_the_default_policy() {
    for (word, want) in [("off", 1), ("on", 1), ("as-posted", 0)] {
        let set = format!("numalab.interleave_numa_balancing={word}");
        let mut k = fx::kernel("tiny-2n", &[&set]);
        let mm = fx::add_mm(&mut k, fx::pages(4), false, None::<MemPolicy>);
        fx::populate(&mut k, mm, 0, 4, fx::n(0));
        // A new task on node 1: its first fault migrates at once.
        let t = fx::add_task(&mut k, mm, fx::c(2));
        fx::mark(&mut k, mm, 0);
        k.do_numa_page(t, fx::c(2), fx::V0, 0);
        assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), want, "{word}");
        // The other way (node 1 -> node 0) is unaffected.
        let mm1 = fx::add_mm(&mut k, fx::pages(4), false, None::<MemPolicy>);
        let v = &mut k.mem.mms[mm1].vmas[fx::V0];
        v.set_page_node(0, fx::n(1));
        k.mem.nodes[fx::n(1)].free_pages -= 1;
        let t0 = fx::add_task(&mut k, mm1, fx::c(0));
        k.mem.mms[mm1].vmas[fx::V0].set_protnone(0, true);
        k.do_numa_page(t0, fx::c(0), fx::V0, 0);
        assert_eq!(
            k.mem.mms[mm1].vmas[fx::V0].pages[0].node_id(),
            fx::n(0),
            "{word}"
        );
    }
}
