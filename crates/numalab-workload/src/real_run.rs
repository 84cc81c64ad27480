//! The page `numalab real run` shares with every process of a workload
//! (`numalab.real_run_shared_page`), so that the model runs what the guest
//! runs when `numalab validate` compares the two.
//!
//! The runner's coordinator maps one page `MAP_SHARED | MAP_ANONYMOUS`
//! before it forks the workload's processes and writes the run's time
//! origin into it; every thread of every process then reads the page's
//! `stop` flag before each phase and every MiB it streams
//! (crates/numalab-real/src/worker.rs `Shared`, `Exec::stopped`).
//!
//! Why it matters to NUMA balancing: it is one folio mapped by several
//! mms in a `VM_SHARED` VMA whose PTEs are writable (a shmem mapping needs
//! no write notification, so a read fault maps it writable), so a hinting
//! fault on it is `TNF_SHARED` and not `TNF_NO_GROUP` (mm/memory.c
//! `numa_migrate_check`). Each `task_numa_work` that marks it gives one
//! hinting fault to whichever thread of that mm reads it first; a remote
//! one sets the folio's `last_cpupid`, and the next thread of any process
//! to fault there sees another pid and calls `task_numa_group`
//! (kernel/sched/fair.c), which joins the two tasks' numa groups if the
//! other one is running: across processes too, since the fault is
//! `TNF_SHARED`. The 6.12 guest's `threadlocal-like` boots show such a
//! group spanning both processes (docs/real.md).
//!
//! What is added, per process: the page as a 4 KiB shared region (one
//! object for all processes, allocated by the first thread to read it),
//! placed below the libraries' data when the runtime's mappings are there
//! (the coordinator maps it after its exec, before the fork, so the top-down
//! `mmap` puts it below the libraries and above what the child maps later),
//! and one read of one line of it before every phase of every thread, loop
//! bodies included. Left out: the reads every MiB inside a stream (one
//! read per phase stands for them: after a scan marks the page, some
//! thread of the mm faults on it at its next phase rather than within a
//! MiB), the coordinator's own mapping of the page (it never faults on it
//! during a run; in a single-process workload the kernel's folio is still
//! mapped by two mms, the model's by one, which matters only to a join
//! across mms) and its two writes (the time origin at the start, the stop
//! flag at the end). With `numalab.access_latency` the reads count as timed
//! accesses, one per phase, where the worker times only its random phases'
//! own accesses.

use crate::model::{Distribution, Phase, Process, Region, Workload};
use crate::PageSize;

/// The region's name: one shared object across the processes, by name.
pub const SHARED_PAGE: &str = "[numalab-real.shared]";
/// Its size: one 4 KiB page (`sys::PAGE_SIZE` in numalab-real).
const PAGE: u64 = 4096;
/// The runtime's first library data mapping (runtime.rs), below which the
/// page goes when it is there.
const FIRST_LIB_DATA: &str = "[libdata.0]";

/// Adds the runner's shared page to every process of `w`, with a read of
/// it before every phase of every thread.
pub fn add_real_run_shared_page(w: &mut Workload) {
    for p in &mut w.processes {
        add_to_process(p);
    }
}

fn add_to_process(p: &mut Process) {
    let at = p
        .regions
        .iter()
        .position(|r| r.name == FIRST_LIB_DATA)
        .unwrap_or(p.regions.len());
    for t in &mut p.threads {
        Phase::walk_mut(&mut t.phases, &mut |ph| {
            if let Some((region, _, _)) = ph.range_mut() {
                if *region >= at {
                    *region += 1;
                }
            }
        });
        t.phases = with_reads(std::mem::take(&mut t.phases), at);
    }
    p.regions.insert(
        at,
        Region {
            name: SHARED_PAGE.into(),
            bytes: PAGE,
            page_size: PageSize::Base4K,
            policy: None,
            runtime: true,
            shared: true,
            vma_bytes: None,
        },
    );
}

/// `phases` with a read of region `page` before each phase, and the same
/// in every loop body.
fn with_reads(phases: Vec<Phase>, page: usize) -> Vec<Phase> {
    let mut out = Vec::with_capacity(2 * phases.len());
    for mut ph in phases {
        if let Phase::Repeat { body, .. } = &mut ph {
            *body = with_reads(std::mem::take(body), page);
        }
        out.push(read(page));
        out.push(ph);
    }
    out
}

/// One read of one line of the page (`stop.load(Relaxed)`).
fn read(page: usize) -> Phase {
    Phase::Random {
        region: page,
        offset: 0,
        len: PAGE,
        accesses: 1,
        distribution: Distribution::Uniform,
        write_fraction: 0.0,
        mlp: 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::add_process_mappings;
    use numalab_knobs::knob::ProcessMappings;

    /// Two processes `p0` and `p1` of two threads each: the runtime
    /// tests' process (regions `a`, `b`; a first stream of `a` or `b`,
    /// then a loop over `b`), twice.
    fn workload() -> Workload {
        let mut w = crate::runtime::tests::workload(2);
        let mut p1 = w.processes[0].clone();
        w.processes[0].name = "p0".into();
        p1.name = "p1".into();
        w.processes.push(p1);
        w
    }

    /// Every process maps the one shared page, and every thread reads it
    /// before each phase, inside loops too.
    #[test]
    fn every_process_maps_the_page_and_reads_it_before_each_phase() {
        let mut w = workload();
        add_real_run_shared_page(&mut w);
        for p in &w.processes {
            let page = p.regions.iter().position(|r| r.name == SHARED_PAGE);
            assert_eq!(page, Some(2), "after the declared regions: {:?}", p.regions);
            assert!(p.regions[2].shared && p.regions[2].runtime);
            for (i, t) in p.threads.iter().enumerate() {
                let Phase::Repeat { body, .. } = &t.phases[3] else {
                    panic!("the loop stays fourth: {:?}", t.phases);
                };
                for (list, streamed) in [(&t.phases[..], i % 2), (&body[..], 1)] {
                    assert_eq!(list[0], read(2), "a read first");
                    assert_eq!(list[1].range().map(|r| r.0), Some(streamed));
                }
                assert_eq!(t.phases[2], read(2), "a read before the loop");
                assert_eq!(t.phases.len(), 4);
                assert_eq!(body.len(), 2);
            }
        }
    }

    /// With the runtime's mappings the page goes below the libraries'
    /// data, and every access keeps pointing at the region it named.
    #[test]
    fn the_page_goes_below_the_libraries_and_no_access_moves() {
        let mut w = workload();
        add_process_mappings(&mut w, ProcessMappings::Rust);
        let before: Vec<String> = w.processes[0].threads[1]
            .phases
            .iter()
            .filter_map(|ph| ph.range())
            .map(|(r, _, _)| w.processes[0].regions[r].name.clone())
            .collect();
        add_real_run_shared_page(&mut w);
        let p = &w.processes[0];
        let at = p.regions.iter().position(|r| r.name == SHARED_PAGE);
        let lib = p.regions.iter().position(|r| r.name == FIRST_LIB_DATA);
        assert_eq!(at.map(|a| a + 1), lib, "just below the libraries");
        let after: Vec<String> = p.threads[1]
            .phases
            .iter()
            .filter_map(|ph| ph.range())
            .map(|(r, _, _)| p.regions[r].name.clone())
            .filter(|n| n != SHARED_PAGE)
            .collect();
        assert_eq!(after, before);
    }
}
