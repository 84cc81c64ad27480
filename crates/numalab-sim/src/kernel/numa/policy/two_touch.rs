//! The `two-touch` policy, the example of docs/policies.md: a page
//! migrates only on the second of two consecutive hinting faults from the
//! same node. Mainline's two-stage filter asks the same, except that early
//! in a task's life (its first two passes, or before it has a preferred
//! node) and for a page nobody has faulted on yet it migrates on the
//! first fault; this policy drops that exception and leaves every other
//! decision to mainline.
//!
//! Left out: counting touches beyond the page's one `last_cpupid` (a
//! third node in between restarts the count, as in the kernel's filter).

use super::mainline::MAINLINE;
use super::ops::NumaPolicyOps;
use crate::kernel::numa::{cpupid_pid_unset, cpupid_to_cpu};
use crate::kernel::{CpuId, Kernel, NodeId, TaskId, VmaId};

/// Mainline, with pages moving only on a second touch from one node.
pub const TWO_TOUCH: NumaPolicyOps = NumaPolicyOps {
    name: "two-touch",
    description: "migrate a page only on the second consecutive hinting fault from the same node (no early first-touch migration)",
    should_numa_migrate_memory: two_touch_should_numa_migrate_memory,
    ..MAINLINE
};

/// `should_numa_migrate_memory` of two-touch: the previous fault on the
/// page (its `last_cpupid`, read before mainline records this one) must
/// have come from the destination node, and mainline must agree.
fn two_touch_should_numa_migrate_memory(
    k: &mut Kernel,
    t: TaskId,
    vma: VmaId,
    idx: usize,
    src_nid: NodeId,
    dst_cpu: CpuId,
) -> bool {
    let mm = k.tasks[t].mm;
    let last = k.mem.folio_last_cpupid(mm, vma, idx);
    let dst_nid = k.cpu_node(dst_cpu);
    let second_touch = !cpupid_pid_unset(last)
        && k.m.cpus.get(cpupid_to_cpu(last).index()).map(|c| c.node) == Some(dst_nid.index());
    // Mainline runs either way: it records this fault in the page.
    let mainline = Kernel::mainline_should_numa_migrate_memory(k, t, vma, idx, src_nid, dst_cpu);
    second_touch && mainline
}

#[cfg(test)]
mod tests {
    use crate::kernel::numa::tests::fx;
    use crate::kernel::numa::cpu_pid_to_cpupid;
    use crate::{Knobs, RunOptions, Sim};

    /// Mainline migrates a young task's first remote touch at once;
    /// two-touch waits for the second touch from the same node, and a
    /// touch from another node in between starts the count again.
    #[test]
    fn a_page_moves_on_the_second_touch_from_one_node() {
        for (policy, first_moves) in [("mainline", true), ("two-touch", false)] {
            let set = format!("numalab.policy={policy}");
            let (mut k, mm, t) = fx::remote_task(&[&set]);
            let (page, src) = (3, fx::n(1));
            let first = k.should_numa_migrate_memory(t, fx::V0, page, src, fx::c(0));
            assert_eq!(first, first_moves, "{policy}: first touch");
            assert!(
                k.should_numa_migrate_memory(t, fx::V0, page, src, fx::c(0)),
                "{policy}: second touch from node 0"
            );
            // Last touched from node 1 (CPU 2 of tiny-2n) by this task:
            // for two-touch the fault from node 0 is a first touch again;
            // mainline moves a young task's own page at once.
            let pid = k.tasks[t].pid;
            k.mem.mms[mm].vmas[fx::V0].pages[page].last_cpupid = cpu_pid_to_cpupid(fx::c(2), pid);
            let again = k.should_numa_migrate_memory(t, fx::V0, page, src, fx::c(0));
            assert_eq!(again, first_moves, "{policy}: touch after node 1's");
        }
    }

    /// numa02 on tiny-2n, scaled to one scan pass: the scan and its faults
    /// are mainline's (the policy decides nothing before a fault), but no
    /// page moves on its first touch.
    #[test]
    fn in_one_pass_only_the_migrations_change() {
        let run = |policy: &str| {
            let m = numalab_topology::presets::load("tiny-2n").expect("machine");
            let spec = numalab_workload::presets::load("numa02").expect("workload");
            let w = numalab_workload::spec::resolve(&spec, &m, 1, 0.2).expect("resolve");
            let knobs = Knobs::from_sets(&[format!("numalab.policy={policy}")]).expect("knobs");
            let opts = RunOptions {
                scale: 0.2,
                ..Default::default()
            };
            let r = Sim::new(m, w, knobs, opts).expect("sim").run(&mut |_| {});
            r.expect("run").vmstat
        };
        let (main, two) = (run("mainline"), run("two-touch"));
        assert!(main["numa_pages_migrated"] > 0);
        assert!(two["numa_pages_migrated"] < main["numa_pages_migrated"]);
        for same in ["numa_pte_updates", "numa_hint_faults", "numa_hint_faults_local"] {
            assert!(main[same] > 0, "{same}");
            assert_eq!(two[same], main[same], "{same}");
        }
    }
}
