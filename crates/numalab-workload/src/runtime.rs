//! The mappings a program's runtime adds to its address space besides the
//! memory the workload declares (`numalab.process_mappings`).
//!
//! Why they matter: `task_numa_work` (kernel/sched/fair.c) walks every VMA
//! of the mm from `mm->numa_scan_offset`, scans a VMA at most once per
//! `numa_scan_seq`, and skips one the scanning thread has not faulted on
//! lately (`vma_is_accessed`). When a pass reaches the end having skipped
//! some, it is retried "forced" and then scans exactly one VMA and stops
//! there without ending the sequence. In a process with many small VMAs
//! (thread stacks, malloc arenas, libraries' data), most forced passes
//! land on one of those, so a sequence takes many passes and the workload's
//! own memory is scanned far less often than in a process made of its
//! regions alone. The 6.12 guest shows this for numalab real run's worker
//! (docs/real.md M5).
//!
//! What is added, per process, in address order (low to high, as the
//! kernel's top-down mmap lays them out):
//! - the binary's data and the heap (`brk`), first written by thread 0;
//! - `rust` only: a 132 KiB malloc arena per spawned thread (glibc's
//!   per-thread arenas: only the used part of the 64 MiB reservation is
//!   accessible), its first 16 KiB written by that thread at start;
//! - a stack per spawned thread (8 MiB under glibc, RLIMIT_STACK's
//!   default; 2 MiB for Rust's std::thread); thread 0 runs on the main
//!   stack instead (as numalab real run's worker and a C `main` do);
//! - then the workload's regions;
//! - `rust` only: an 8 KiB sigaltstack per thread, never written;
//! - eight 8 KiB library data mappings (libc, ld.so, libgcc_s, libm and
//!   the like), first written by thread 0;
//! - the main stack, 132 KiB.
//!
//! A thread writes the top 16 KiB of its stack when it starts and once in
//! every iteration of each loop (`repeat` body), standing for the calls
//! it makes: that is what keeps its pid in the stack VMA's
//! `pids_active`. Left out: guard pages, the PROT_NONE part of arenas and
//! the binary's text and read-only data (the scan skips all of them
//! without effect on a pass: `inaccessible`, `shared_ro`), the vDSO, and
//! any access to these mappings beyond those writes.

use crate::model::{Phase, Process, Region, Workload};
use crate::PageSize;
use numalab_knobs::knob::ProcessMappings;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
/// Stack a thread writes at start and per loop iteration, bytes.
const STACK_TOUCH: u64 = 16 * KIB;
/// glibc's default thread stack: RLIMIT_STACK's default, 8 MiB
/// (nptl allocatestack.c, `ulimit -s` 8192).
const GLIBC_STACK: u64 = 8 * MIB;
/// Rust std::thread's default stack, 2 MiB (library/std/src/sys/thread
/// DEFAULT_MIN_STACK_SIZE), as numalab real run's worker spawns them.
const RUST_STACK: u64 = 2 * MIB;
/// The accessible part of a glibc per-thread malloc arena in the guest's
/// worker (132 KiB of each 64 MiB reservation, docs/real.md M5).
const ARENA: u64 = 132 * KIB;
/// Part of an arena a thread writes at start.
const ARENA_TOUCH: u64 = 16 * KIB;
/// A sigaltstack of Rust's std (SIGSTKSZ rounded to pages, 8 KiB).
const ALTSTACK: u64 = 8 * KIB;
/// Library data mappings and their size (the guest's worker had about
/// ten writable library mappings of 4-52 KiB).
const LIB_DATA: (usize, u64) = (8, 8 * KIB);
/// The binary's data and the heap as the guest's worker had them.
const BIN_DATA: u64 = 8 * KIB;
const HEAP: u64 = 272 * KIB;
/// The main thread's stack in use (the guest's worker: 132 KiB).
const MAIN_STACK: u64 = 132 * KIB;

fn region(name: String, bytes: u64) -> Region {
    Region {
        name,
        bytes,
        page_size: PageSize::Base4K,
        policy: None,
        runtime: true,
        shared: false,
        vma_bytes: None,
    }
}

fn write(region: usize, offset: u64, len: u64) -> Phase {
    Phase::Stream {
        region,
        offset,
        len,
        passes: 1,
        write: true,
    }
}

/// Adds the runtime's mappings to every process of `w` (nothing for
/// [`ProcessMappings::None`]).
pub fn add_process_mappings(w: &mut Workload, kind: ProcessMappings) {
    let stack = match kind {
        ProcessMappings::None => return,
        ProcessMappings::Glibc => GLIBC_STACK,
        ProcessMappings::Rust => RUST_STACK,
    };
    let rust = kind == ProcessMappings::Rust;
    for p in &mut w.processes {
        add_to_process(p, stack, rust);
    }
}

fn add_to_process(p: &mut Process, stack: u64, rust: bool) {
    let n = p.threads.len();
    let mut below = vec![
        region("[data]".into(), BIN_DATA),
        region("[heap]".into(), HEAP),
    ];
    let arena0 = below.len();
    if rust {
        below.extend((1..n).map(|i| region(format!("[arena.{i}]"), ARENA)));
    }
    let stack0 = below.len();
    below.extend((1..n).map(|i| region(format!("[stack.{i}]"), stack)));
    let shift = below.len();
    let mut above = Vec::new();
    if rust {
        above.extend((0..n).map(|i| region(format!("[altstack.{i}]"), ALTSTACK)));
    }
    let lib0 = shift + p.regions.len() + above.len();
    above.extend((0..LIB_DATA.0).map(|i| region(format!("[libdata.{i}]"), LIB_DATA.1)));
    let main_stack = lib0 + LIB_DATA.0;
    above.push(region("[stack]".into(), MAIN_STACK));

    for t in &mut p.threads {
        Phase::walk_mut(&mut t.phases, &mut |ph| {
            if let Some((region, _, _)) = ph.range_mut() {
                *region += shift;
            }
        });
    }
    let declared = std::mem::take(&mut p.regions);
    p.regions = below.into_iter().chain(declared).chain(above).collect();

    for (i, t) in p.threads.iter_mut().enumerate() {
        // Its stack: the main stack for thread 0; stacks grow down, so
        // the part in use is the top.
        let (st, size) = if i == 0 {
            (main_stack, MAIN_STACK)
        } else {
            (stack0 + i - 1, stack)
        };
        let touch = write(st, size - STACK_TOUCH, STACK_TOUCH);
        let mut start = vec![touch.clone()];
        if i == 0 {
            start.push(write(0, 0, BIN_DATA));
            start.push(write(1, 0, HEAP));
            start.extend((0..LIB_DATA.0).map(|l| write(lib0 + l, 0, LIB_DATA.1)));
        } else if rust {
            start.push(write(arena0 + i - 1, 0, ARENA_TOUCH));
        }
        for ph in &mut t.phases {
            touch_in_loops(ph, &touch);
        }
        start.append(&mut t.phases);
        t.phases = start;
    }
}

/// Appends the stack write to every loop body, nested ones included.
fn touch_in_loops(ph: &mut Phase, touch: &Phase) {
    if let Phase::Repeat { body, .. } = ph {
        body.iter_mut().for_each(|b| touch_in_loops(b, touch));
        body.push(touch.clone());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::Thread;

    /// One process `p` with regions `a` and `b` (4 KiB each) and `threads`
    /// threads: a first stream of region `i % 2`, then a loop over `b`.
    pub(crate) fn workload(threads: usize) -> Workload {
        let stream = |region| Phase::Stream {
            region,
            offset: 0,
            len: 4096,
            passes: 1,
            write: true,
        };
        Workload {
            name: "w".into(),
            description: String::new(),
            test: "W".into(),
            cgroups: vec![],
            processes: vec![Process {
                name: "p".into(),
                cgroup: "/".into(),
                regions: vec![region("a".into(), 4096), region("b".into(), 4096)]
                    .into_iter()
                    .map(|r| Region {
                        runtime: false,
                        shared: false,
                        ..r
                    })
                    .collect(),
                threads: (0..threads)
                    .map(|i| Thread {
                        name: format!("t{i}"),
                        affinity: None,
                        policy: None,
                        start_after: vec![],
                        phases: vec![
                            stream(i % 2),
                            Phase::Repeat {
                                times: 3,
                                body: vec![stream(1)],
                                request: true,
                            },
                        ],
                    })
                    .collect(),
            }],
            score: crate::Score::Elapsed,
            duration_ns: None,
        }
    }

    #[test]
    fn none_changes_nothing() {
        let mut w = workload(3);
        let before = w.clone();
        add_process_mappings(&mut w, ProcessMappings::None);
        assert_eq!(w, before);
    }

    #[test]
    fn declared_regions_keep_their_accesses_after_renumbering() {
        for kind in [ProcessMappings::Glibc, ProcessMappings::Rust] {
            let mut w = workload(3);
            add_process_mappings(&mut w, kind);
            let p = &w.processes[0];
            let named = |name: &str| p.regions.iter().position(|r| r.name == name).unwrap();
            let (a, b) = (named("a"), named("b"));
            assert!(!p.regions[a].runtime && p.regions[named("[stack.1]")].runtime);
            // Declared regions sit above the stacks and below the libraries.
            assert!(named("[stack.2]") < a && b < named("[libdata.0]"));
            for (i, t) in p.threads.iter().enumerate() {
                let streams: Vec<usize> = t
                    .phases
                    .iter()
                    .filter_map(|ph| match ph {
                        Phase::Stream { region, .. } => Some(*region),
                        _ => None,
                    })
                    .collect();
                assert!(streams.contains(&[a, b][i % 2]), "thread {i}: {streams:?}");
                let Some(Phase::Repeat { body, .. }) = t.phases.last() else {
                    panic!("thread {i} lost its loop");
                };
                let own_stack = if i == 0 {
                    named("[stack]")
                } else {
                    named(&format!("[stack.{i}]"))
                };
                // The loop still writes b, and now the thread's own stack.
                assert!(matches!(body[0], Phase::Stream { region, .. } if region == b));
                assert!(matches!(body[1], Phase::Stream { region, offset, .. }
                    if region == own_stack && offset + STACK_TOUCH == p.regions[own_stack].bytes));
            }
        }
    }

    #[test]
    fn rust_has_an_arena_per_spawned_thread_and_smaller_stacks() {
        let mut g = workload(4);
        let mut r = workload(4);
        add_process_mappings(&mut g, ProcessMappings::Glibc);
        add_process_mappings(&mut r, ProcessMappings::Rust);
        let count = |w: &Workload, prefix: &str| {
            w.processes[0]
                .regions
                .iter()
                .filter(|x| x.name.starts_with(prefix))
                .count()
        };
        assert_eq!((count(&g, "[arena."), count(&r, "[arena.")), (0, 3));
        assert_eq!((count(&g, "[stack."), count(&r, "[stack.")), (3, 3));
        assert_eq!((count(&g, "[altstack."), count(&r, "[altstack.")), (0, 4));
        let stack = |w: &Workload| {
            w.processes[0]
                .regions
                .iter()
                .find(|x| x.name == "[stack.1]")
                .unwrap()
                .bytes
        };
        assert_eq!((stack(&g), stack(&r)), (GLIBC_STACK, RUST_STACK));
    }
}
