//! Inside one workload process: the regions, the threads and their phases.
//!
//! The coordinator maps the workload's shared regions ([`SharedRegions`],
//! `MAP_SHARED | MAP_ANONYMOUS`), then forks one child per [`Process`]. The
//! child waits on its "go" pipe (by then it is in its cgroup), maps each of
//! its own regions as its own VMA with THP advice and `mbind` policy (a
//! shared region it finds already mapped, inherited at the fork), then starts threads in order (a
//! thread with `start_after` starts when those threads have exited). The
//! first thread that starts at once runs on the child's main thread (its
//! tid is the child's pid), after the main thread has created the others
//! that start at once; a thread with `start_after` is created by the
//! thread whose exit completes its wait. So the process has exactly the
//! workload's threads, as in the model: no extra thread shares the mm (a
//! second user turns off `change_pte_range`'s skip of pages already on a
//! single-threaded process's node) and the threads that start at once
//! inherit no NUMA state (`numa_preferred_nid`) from a thread that ran
//! before them. A thread created later inherits its creator's, as any
//! thread does in Linux (`init_numa_balancing`, CLONE_VM); the main thread
//! stays, idle, after its workload thread exits (the coordinator reads
//! `/proc/PID/numa_maps`, empty once the group leader has exited). Each
//! thread sets its affinity and task policy and runs its phases for real:
//! streams are `memset` (write) or one load per cache line (read) over the
//! range, random accesses touch one cache line at a time at pages drawn
//! from a seeded sampler, compute burns CPU until the thread's CPU clock
//! has advanced, sleep blocks. Every phase stops early when the coordinator
//! raises the shared stop flag (the workload's `duration_ns`, or an abort).
//!
//! The child talks to the coordinator with newline-terminated lines on its
//! report pipe: `R idx start len` (a region is mapped), `T idx tid start_s`
//! (a thread runs), `X {json}` (a thread's figures at exit), `E message`
//! (a fatal error), `D` (all threads are done; the child then waits for
//! the go pipe to close so the coordinator can read its final page
//! placement, and exits).
//!
//! Per-task `bytes_by_node` is an estimate: every 8 MiB streamed, and every
//! 4096 random accesses, the thread asks `move_pages(nodes = NULL)` where a
//! few of the pages it just touched are, and attributes the bytes in those
//! proportions. The real kernel keeps no per-access node counts.
//!
//! Left out: `mlp` of random phases, and fork/exec inside a workload.

use crate::access::{thread_rng, PageSampler};
use crate::latency::AccessTimer;
use crate::sample::{parse_proc_sched, parse_schedstat, summarize_page_status};
use crate::sys::{self, Mapping};
use numalab_record::TaskFigures;
use numalab_topology::CpuSet;
use numalab_workload::model::{PageSize, Phase, Process, Workload};
use rand::Rng;
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// State shared between the coordinator and every child (a `MAP_SHARED`
/// page mapped before the forks).
#[repr(C)]
pub(crate) struct Shared {
    /// Non-zero: every phase stops at its next check.
    pub stop: AtomicU32,
    /// CLOCK_MONOTONIC ns at "go": the run's time origin.
    pub t0_ns: AtomicU64,
}

/// The shared page, unmapped when the coordinator drops it.
pub(crate) struct SharedPage {
    ptr: *mut Shared,
}

impl SharedPage {
    /// Maps a zeroed shared page.
    pub fn new() -> std::io::Result<SharedPage> {
        // SAFETY: fresh anonymous shared mapping of one page.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                sys::PAGE_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(SharedPage {
            ptr: p as *mut Shared,
        })
    }

    /// The shared state.
    pub fn get(&self) -> &Shared {
        // SAFETY: the page is mapped for the lifetime of self and zero is a
        // valid Shared (atomics).
        unsafe { &*self.ptr }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: mapped by new, unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, sys::PAGE_SIZE) };
    }
}

/// The workload's `[[shared]]` regions (regions marked `shared`), each
/// mapped once by the coordinator before the forks, `MAP_SHARED |
/// MAP_ANONYMOUS` (shmem) with its page size and its policy (`mbind` of a
/// shmem mapping sets the object's shared policy, the one every mapper
/// allocates and balances under). Every child inherits the mappings at the
/// same address, so the processes share the pages: the first to touch one
/// allocates it. Unmapped when the coordinator drops it.
pub(crate) struct SharedRegions {
    maps: Vec<(String, Mapping)>,
}

/// Where the kernel says whether shmem may use transparent huge pages.
const SHMEM_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/shmem_enabled";

impl SharedRegions {
    /// Maps every shared region of `w` (one per name, as the first process
    /// that maps it declares it). A THP region needs `shmem_enabled` to
    /// allow `MADV_HUGEPAGE` (`advise`, `always` or `within_size`): with
    /// `never` or `deny` the region would silently get 4 KiB pages, so it
    /// is an error.
    pub fn map(w: &Workload) -> Result<SharedRegions, String> {
        let mut maps: Vec<(String, Mapping)> = Vec::new();
        for r in w.processes.iter().flat_map(|p| &p.regions) {
            if !r.shared || maps.iter().any(|(n, _)| n == &r.name) {
                continue;
            }
            if r.page_size == PageSize::Thp2M {
                let mode = std::fs::read_to_string(SHMEM_ENABLED).unwrap_or_default();
                if mode.is_empty() || mode.contains("[never]") || mode.contains("[deny]") {
                    return Err(format!(
                        "shared region '{}' asks for THP, but shmem does not take MADV_HUGEPAGE here ({SHMEM_ENABLED}: {}); set it to advise",
                        r.name,
                        if mode.is_empty() { "missing" } else { mode.trim() }
                    ));
                }
            }
            let m = Mapping::new_shared(r.bytes, r.page_size).map_err(|e| {
                format!(
                    "mmap(MAP_SHARED) of shared region '{}' ({} bytes): {e}",
                    r.name, r.bytes
                )
            })?;
            if let Some(p) = &r.policy {
                // SAFETY: the mapping belongs to this process.
                unsafe { sys::mbind(m.base(), m.len(), Some(p), 0) }.map_err(|e| {
                    format!(
                        "mbind({}) of shared region '{}': {e}",
                        sys::policy_name(Some(p)),
                        r.name
                    )
                })?;
            }
            maps.push((r.name.clone(), m));
        }
        Ok(SharedRegions { maps })
    }

    /// The mapping of shared region `name`.
    fn get(&self, name: &str) -> Option<&Mapping> {
        self.maps.iter().find(|(n, _)| n == name).map(|(_, m)| m)
    }
}

/// A region as the threads of a child reach it: its first byte and its
/// length, in a mapping the child made (`own`) or, for a shared region,
/// the coordinator's, inherited at the fork.
struct RegionMap {
    base: usize,
    len: usize,
    /// The child's own mapping, unmapped with it; `None` for a shared one.
    _own: Option<Mapping>,
}

impl RegionMap {
    fn base(&self) -> *mut u8 {
        self.base as *mut u8
    }
}

/// A thread's figures at exit, as sent on the report pipe.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ThreadReport {
    /// Thread index in the process.
    pub idx: usize,
    /// Completed requests (iterations of `request` repeats).
    pub requests: u64,
    /// The task's figures.
    pub task: TaskFigures,
}

/// What a child needs besides the process it runs.
pub(crate) struct ChildCtx<'a> {
    pub proc_idx: usize,
    pub process: &'a Process,
    pub shared: &'a Shared,
    pub shared_regions: &'a SharedRegions,
    pub go_fd: RawFd,
    pub report_fd: RawFd,
    pub seed: u64,
    pub node_of_cpu: Vec<usize>,
    pub nr_nodes: usize,
    pub all_cpus: CpuSet,
    /// Time every random access, outliers at this many microseconds
    /// (latency.rs); `None`: untimed.
    pub access_latency_us: Option<u64>,
}

struct Reporter {
    fd: RawFd,
    lock: Mutex<()>,
}

impl Reporter {
    fn send(&self, line: &str) {
        let _g = self.lock.lock();
        let mut buf = line.replace('\n', " ").into_bytes();
        buf.push(b'\n');
        let mut off = 0;
        while off < buf.len() {
            // SAFETY: writing from a live buffer.
            let r = unsafe {
                libc::write(
                    self.fd,
                    buf[off..].as_ptr() as *const libc::c_void,
                    buf.len() - off,
                )
            };
            if r < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            off += r as usize;
        }
    }
}

fn read_byte(fd: RawFd) -> Option<u8> {
    let mut b = 0u8;
    loop {
        // SAFETY: one byte into a local.
        let r = unsafe { libc::read(fd, &mut b as *mut u8 as *mut libc::c_void, 1) };
        if r == 1 {
            return Some(b);
        }
        if r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return None;
    }
}

/// Body of a forked child: never returns, never runs the parent's
/// destructors (it leaves through `_exit`), and turns a panic into an error
/// report.
pub(crate) fn child_main(ctx: ChildCtx<'_>) -> ! {
    let reporter = Arc::new(Reporter {
        fd: ctx.report_fd,
        lock: Mutex::new(()),
    });
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_process(&ctx, &reporter)
    }));
    let code = match r {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            reporter.send(&format!("E process '{}': {e}", ctx.process.name));
            1
        }
        Err(_) => {
            reporter.send(&format!("E process '{}': panicked", ctx.process.name));
            2
        }
    };
    // SAFETY: leaves without unwinding into the parent's stack frames.
    unsafe { libc::_exit(code) }
}

fn run_process(ctx: &ChildCtx<'_>, reporter: &Arc<Reporter>) -> Result<(), String> {
    if read_byte(ctx.go_fd).is_none() {
        // The coordinator gave up before the start.
        return Ok(());
    }
    let t0 = ctx.shared.t0_ns.load(Ordering::SeqCst);
    let mut maps = Vec::new();
    for (i, r) in ctx.process.regions.iter().enumerate() {
        let map = if r.shared {
            let m = ctx
                .shared_regions
                .get(&r.name)
                .ok_or_else(|| format!("shared region '{}' was not mapped", r.name))?;
            RegionMap {
                base: m.base() as usize,
                len: m.len(),
                _own: None,
            }
        } else {
            let m = Mapping::new(r.bytes, r.page_size)
                .map_err(|e| format!("mmap of region '{}' ({} bytes): {e}", r.name, r.bytes))?;
            if let Some(p) = &r.policy {
                // SAFETY: the mapping belongs to this process.
                unsafe { sys::mbind(m.base(), m.len(), Some(p), 0) }.map_err(|e| {
                    format!(
                        "mbind({}) of region '{}': {e}",
                        sys::policy_name(Some(p)),
                        r.name
                    )
                })?;
            }
            RegionMap {
                base: m.base() as usize,
                len: m.len(),
                _own: Some(m),
            }
        };
        reporter.send(&format!("R {i} {} {}", map.base, map.len));
        maps.push(map);
    }
    let layout = Layout::new(
        ctx.process
            .threads
            .iter()
            .map(|t| t.start_after.clone())
            .collect(),
    );
    let proc = Arc::new(Proc {
        threads: ctx.process.threads.clone(),
        process_name: ctx.process.name.clone(),
        cgroup: ctx.process.cgroup.clone(),
        maps,
        reporter: Arc::clone(reporter),
        proc_idx: ctx.proc_idx,
        seed: ctx.seed,
        t0,
        node_of_cpu: ctx.node_of_cpu.clone(),
        nr_nodes: ctx.nr_nodes,
        all_cpus: ctx.all_cpus.clone(),
        shared_addr: ctx.shared as *const Shared as usize,
        access_latency_us: ctx.access_latency_us,
        state: Mutex::new(ProcState {
            layout,
            handles: Vec::new(),
        }),
        all_exited: Condvar::new(),
        barriers: crate::barrier::Barriers::new(&ctx.process.threads),
    });
    // The threads that start at once: every one but the first is created
    // now, while the main thread has no NUMA state of its own to pass on;
    // the first then runs on the main thread itself.
    let on_main = {
        let mut st = proc.lock();
        let (on_main, others) = st.layout.initial();
        for j in others {
            let h = spawn(&proc, j)?;
            st.handles.push(h);
        }
        on_main
    };
    if let Some(i) = on_main {
        set_thread_name(&proc.threads[i].name);
        run_one(&proc, i);
    }
    let handles = {
        let mut st = proc.lock();
        while st.layout.running() > 0 {
            st = proc.all_exited.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        std::mem::take(&mut st.handles)
    };
    for h in handles {
        let _ = h.join();
    }
    reporter.send("D");
    // Wait for the coordinator to read the final placement.
    while read_byte(ctx.go_fd).is_some() {}
    drop(proc);
    Ok(())
}

/// Which threads of a process have started and exited, and which start
/// next: pure bookkeeping of `start_after`, shared by the threads under
/// [`Proc::state`].
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    start_after: Vec<Vec<usize>>,
    started: Vec<bool>,
    exited: Vec<bool>,
}

impl Layout {
    /// Nothing started yet.
    pub fn new(start_after: Vec<Vec<usize>>) -> Layout {
        let n = start_after.len();
        Layout {
            start_after,
            started: vec![false; n],
            exited: vec![false; n],
        }
    }

    /// Marks the threads without `start_after` started and returns them:
    /// the first (run on the process's main thread) and the others (to be
    /// created).
    pub fn initial(&mut self) -> (Option<usize>, Vec<usize>) {
        let ready: Vec<usize> = (0..self.start_after.len())
            .filter(|&i| !self.started[i] && self.start_after[i].is_empty())
            .collect();
        for &i in &ready {
            self.started[i] = true;
        }
        let mut it = ready.into_iter();
        (it.next(), it.collect())
    }

    /// Marks thread `i` exited and returns the threads that start now
    /// (marked started): those waiting for `i` whose every `start_after`
    /// thread has exited. None once the run is stopping.
    pub fn exit(&mut self, i: usize, stopping: bool) -> Vec<usize> {
        self.exited[i] = true;
        if stopping {
            return Vec::new();
        }
        let ready: Vec<usize> = (0..self.start_after.len())
            .filter(|&j| {
                !self.started[j]
                    && self.start_after[j].contains(&i)
                    && self.start_after[j].iter().all(|&a| self.exited[a])
            })
            .collect();
        for &j in &ready {
            self.started[j] = true;
        }
        ready
    }

    /// Threads started and not yet exited.
    pub fn running(&self) -> usize {
        (0..self.started.len())
            .filter(|&i| self.started[i] && !self.exited[i])
            .count()
    }
}

/// What every thread of the child shares.
struct Proc {
    threads: Vec<numalab_workload::model::Thread>,
    process_name: String,
    cgroup: String,
    maps: Vec<RegionMap>,
    reporter: Arc<Reporter>,
    proc_idx: usize,
    seed: u64,
    t0: u64,
    node_of_cpu: Vec<usize>,
    nr_nodes: usize,
    all_cpus: CpuSet,
    shared_addr: usize,
    access_latency_us: Option<u64>,
    state: Mutex<ProcState>,
    /// Signalled when a thread exits.
    all_exited: Condvar,
    /// Its threads' barriers.
    barriers: crate::barrier::Barriers,
}

struct ProcState {
    layout: Layout,
    /// Threads created (all but the one on the main thread), joined at the
    /// end.
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Proc {
    fn lock(&self) -> std::sync::MutexGuard<'_, ProcState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stopping(&self) -> bool {
        // SAFETY: the shared page stays mapped for the child's lifetime.
        let shared = unsafe { &*(self.shared_addr as *const Shared) };
        shared.stop.load(Ordering::Relaxed) != 0
    }

    fn env(&self, i: usize) -> ThreadEnv {
        ThreadEnv {
            proc_idx: self.proc_idx,
            idx: i,
            task_name: numalab_record::task_name(&self.process_name, &self.threads[i].name),
            cgroup: self.cgroup.clone(),
            seed: self.seed,
            t0: self.t0,
            node_of_cpu: self.node_of_cpu.clone(),
            nr_nodes: self.nr_nodes,
            all_cpus: self.all_cpus.clone(),
            shared_addr: self.shared_addr,
            access_latency_us: self.access_latency_us,
        }
    }

    /// Reports a fatal error and ends the whole process (every thread).
    fn fatal(&self, msg: &str) -> ! {
        self.reporter
            .send(&format!("E process '{}': {msg}", self.process_name));
        // SAFETY: leaves without unwinding; the coordinator reaps the child.
        unsafe { libc::_exit(1) }
    }
}

/// Creates an OS thread that runs workload thread `i`.
fn spawn(proc: &Arc<Proc>, i: usize) -> Result<std::thread::JoinHandle<()>, String> {
    let p = Arc::clone(proc);
    let name: String = proc.threads[i].name.chars().take(15).collect();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || run_one(&p, i))
        .map_err(|e| format!("cannot create thread '{}': {e}", proc.threads[i].name))
}

/// Runs workload thread `i` on the calling OS thread, reports its figures,
/// then starts the threads that were waiting for it. A failure ends the
/// process.
fn run_one(proc: &Arc<Proc>, i: usize) {
    let t = &proc.threads[i];
    let env = proc.env(i);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_thread(&env, t, &proc.maps, &proc.barriers, &proc.reporter)
    }))
    .unwrap_or_else(|_| Err(format!("thread '{}' panicked", t.name)));
    proc.barriers.party_exits(&t.phases);
    let rep = r.unwrap_or_else(|e| proc.fatal(&e));
    let line = serde_json::to_string(&rep).unwrap_or_else(|e| proc.fatal(&e.to_string()));
    proc.reporter.send(&format!("X {line}"));
    let mut st = proc.lock();
    for j in st.layout.exit(i, proc.stopping()) {
        match spawn(proc, j) {
            Ok(h) => st.handles.push(h),
            Err(e) => proc.fatal(&e),
        }
    }
    drop(st);
    proc.all_exited.notify_all();
}

/// Names the calling thread (its `comm`, 15 bytes at most).
fn set_thread_name(name: &str) {
    let mut b: Vec<u8> = name.bytes().filter(|&c| c != 0).take(15).collect();
    b.push(0);
    // SAFETY: a NUL-terminated buffer that outlives the call.
    unsafe { libc::prctl(libc::PR_SET_NAME, b.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

struct ThreadEnv {
    proc_idx: usize,
    idx: usize,
    /// `PROCESS/THREAD`, the record's name of the task.
    task_name: String,
    cgroup: String,
    seed: u64,
    t0: u64,
    node_of_cpu: Vec<usize>,
    nr_nodes: usize,
    all_cpus: CpuSet,
    shared_addr: usize,
    access_latency_us: Option<u64>,
}

impl ThreadEnv {
    fn shared(&self) -> &Shared {
        // SAFETY: the shared page stays mapped for the child's lifetime.
        unsafe { &*(self.shared_addr as *const Shared) }
    }

    fn since_t0(&self) -> f64 {
        sys::monotonic_ns().saturating_sub(self.t0) as f64 / 1e9
    }
}

fn run_thread(
    env: &ThreadEnv,
    t: &numalab_workload::model::Thread,
    maps: &[RegionMap],
    barriers: &crate::barrier::Barriers,
    reporter: &Reporter,
) -> Result<ThreadReport, String> {
    if let Some(a) = &t.affinity {
        sys::set_affinity(0, a)
            .map_err(|e| format!("thread '{}': sched_setaffinity({a}): {e}", t.name))?;
    }
    if let Some(p) = &t.policy {
        sys::set_mempolicy(Some(p)).map_err(|e| {
            format!(
                "thread '{}': set_mempolicy({}): {e}",
                t.name,
                sys::policy_name(Some(p))
            )
        })?;
    }
    let tid = sys::gettid();
    let start_s = env.since_t0();
    reporter.send(&format!("T {} {tid} {start_s:.6}", env.idx));
    let mut ex = Exec {
        env,
        maps,
        barriers,
        rng: thread_rng(env.seed, env.proc_idx, env.idx),
        requests: 0,
        by_node: vec![0; env.nr_nodes],
        pending: 0,
        name: &t.name,
        timer: env.access_latency_us.map(AccessTimer::new),
    };
    ex.run(&t.phases)?;
    let exit_s = env.since_t0();
    let (user_s, sys_s) = sys::thread_rusage();
    let last_cpu = sys::current_cpu().unwrap_or(0);
    let sched = std::fs::read_to_string("/proc/thread-self/sched")
        .map(|s| parse_proc_sched(&s))
        .unwrap_or_default();
    let wait_s = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| parse_schedstat(&s))
        .map_or(0.0, |(_, w, _)| w as f64 / 1e9);
    // SAFETY: no arguments.
    let tgid = unsafe { libc::getpid() } as u64;
    Ok(ThreadReport {
        idx: env.idx,
        requests: ex.requests,
        task: TaskFigures {
            pid: tid as u64,
            tgid,
            name: env.task_name.clone(),
            cgroup: env.cgroup.clone(),
            start_s,
            exit_s,
            user_s,
            sys_s,
            wait_s,
            last_cpu,
            last_node: env.node_of_cpu.get(last_cpu).copied().unwrap_or(0),
            nr_migrations: sched.get("se.nr_migrations") as u64,
            bytes_by_node: ex.by_node,
            numa: sched.task_numa(),
            access_latency: ex.timer.as_ref().and_then(AccessTimer::figures),
        },
    })
}

/// Stream chunk between stop checks.
const CHUNK: usize = 1 << 20;
/// Bytes streamed between two placement queries.
const ATTRIBUTE_EVERY: u64 = 8 << 20;
/// Random accesses between two placement queries (and stop checks).
const RANDOM_BATCH: u64 = 4096;

enum Flow {
    Go,
    Stop,
}

struct Exec<'a> {
    env: &'a ThreadEnv,
    maps: &'a [RegionMap],
    barriers: &'a crate::barrier::Barriers,
    rng: Pcg64,
    requests: u64,
    by_node: Vec<u64>,
    pending: u64,
    name: &'a str,
    /// Per-access times of random phases (`numalab.access_latency=1`).
    timer: Option<AccessTimer>,
}

impl Exec<'_> {
    fn stopped(&self) -> bool {
        self.env.shared().stop.load(Ordering::Relaxed) != 0
    }

    /// Attributes `bytes` to nodes in the proportions of `pages`.
    fn attribute(&mut self, pages: &[usize], bytes: u64) {
        if bytes == 0 || pages.is_empty() {
            return;
        }
        let Ok(st) = sys::query_page_nodes(0, pages) else {
            return;
        };
        let (by, _) = summarize_page_status(&st, self.env.nr_nodes);
        let present: u64 = by.iter().sum();
        if present == 0 {
            return;
        }
        for (n, c) in by.iter().enumerate() {
            self.by_node[n] += bytes * c / present;
        }
    }

    fn flush_stream(&mut self, last: *mut u8, len: usize) {
        let pages: Vec<usize> = (0..16)
            .map(|k| last as usize + (len * k / 16) / sys::PAGE_SIZE * sys::PAGE_SIZE)
            .collect();
        let b = std::mem::take(&mut self.pending);
        self.attribute(&pages, b);
    }

    fn run(&mut self, phases: &[Phase]) -> Result<Flow, String> {
        for p in phases {
            if self.stopped() {
                return Ok(Flow::Stop);
            }
            if let Flow::Stop = self.phase(p)? {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Go)
    }

    fn phase(&mut self, p: &Phase) -> Result<Flow, String> {
        match p {
            Phase::Stream {
                region,
                offset,
                len,
                passes,
                write,
            } => {
                let base = self.maps[*region].base() as usize + *offset as usize;
                let len = *len as usize;
                for pass in 0..*passes {
                    let mut off = 0;
                    while off < len {
                        let n = CHUNK.min(len - off);
                        let ptr = (base + off) as *mut u8;
                        if *write {
                            // SAFETY: inside the region (checked before the run).
                            unsafe { std::ptr::write_bytes(ptr, (pass as u8) | 1, n) };
                        } else {
                            let mut sum = 0u64;
                            let end = ptr as usize + n;
                            let mut a = (ptr as usize + 7) & !7;
                            while a + 8 <= end {
                                // SAFETY: aligned and inside the region;
                                // racing with other threads' writes by
                                // design, through raw pointers only.
                                sum = sum.wrapping_add(unsafe {
                                    std::ptr::read_volatile(a as *const u64)
                                });
                                a += 64;
                            }
                            std::hint::black_box(sum);
                        }
                        self.pending += n as u64;
                        if self.pending >= ATTRIBUTE_EVERY {
                            self.flush_stream(ptr, n);
                        }
                        off += n;
                        if self.stopped() {
                            self.flush_stream(ptr, n);
                            return Ok(Flow::Stop);
                        }
                    }
                    if self.pending > 0 {
                        let last = base + len - CHUNK.min(len);
                        self.flush_stream(last as *mut u8, CHUNK.min(len));
                    }
                }
                Ok(Flow::Go)
            }
            Phase::Random {
                region,
                offset,
                len,
                accesses,
                distribution,
                write_fraction,
                mlp: _,
            } => {
                let base = self.maps[*region].base() as usize + *offset as usize;
                let lines = (*len / 64).max(1);
                let pages = lines.div_ceil(64);
                let sampler = PageSampler::new(distribution, pages);
                let mut sum = 0u64;
                let mut i = 0u64;
                while i < *accesses {
                    let batch = RANDOM_BATCH.min(*accesses - i);
                    let mut last = base;
                    // The interval restarts after the bookkeeping below.
                    let mut prev = self.timer.as_ref().map(|_| sys::monotonic_ns());
                    for k in 0..batch {
                        let page = sampler.sample(&mut self.rng);
                        let line = (page * 64 + self.rng.gen_range(0..64)).min(lines - 1);
                        // 8-byte aligned, and never past the range's end
                        // rounded up to 8 (the mapping is whole pages).
                        let addr = (base
                            + ((line * 64) as usize).min((*len as usize).saturating_sub(8)))
                            & !7;
                        let write = self.rng.gen::<f64>() < *write_fraction;
                        if write {
                            // SAFETY: inside the region, 8-byte aligned.
                            unsafe { std::ptr::write_volatile(addr as *mut u64, i + k) };
                        } else {
                            // SAFETY: as above.
                            sum = sum.wrapping_add(unsafe {
                                std::ptr::read_volatile(addr as *const u64)
                            });
                        }
                        if let (Some(t), Some(p)) = (self.timer.as_mut(), prev.as_mut()) {
                            let now = sys::monotonic_ns();
                            t.record(now.saturating_sub(*p), write);
                            *p = now;
                        }
                        last = addr;
                    }
                    i += batch;
                    let page = last / sys::PAGE_SIZE * sys::PAGE_SIZE;
                    self.attribute(&[page], batch * 64);
                    if self.stopped() {
                        std::hint::black_box(sum);
                        return Ok(Flow::Stop);
                    }
                }
                std::hint::black_box(sum);
                Ok(Flow::Go)
            }
            Phase::Compute { ns } => {
                let start = sys::thread_cpu_ns();
                let mut x = 0x1234_5678u64;
                loop {
                    for _ in 0..20_000 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                    }
                    std::hint::black_box(x);
                    if sys::thread_cpu_ns().saturating_sub(start) >= *ns {
                        return Ok(Flow::Go);
                    }
                    if self.stopped() {
                        return Ok(Flow::Stop);
                    }
                }
            }
            Phase::Sleep { ns } => {
                let end = sys::monotonic_ns() + ns;
                loop {
                    let now = sys::monotonic_ns();
                    if now >= end {
                        return Ok(Flow::Go);
                    }
                    if self.stopped() {
                        return Ok(Flow::Stop);
                    }
                    std::thread::sleep(Duration::from_nanos((end - now).min(20_000_000)));
                }
            }
            Phase::Barrier { name } => {
                let stopped = || self.stopped();
                match self.barriers.wait(name, &stopped) {
                    crate::barrier::Wait::Passed => Ok(Flow::Go),
                    crate::barrier::Wait::Stopped => Ok(Flow::Stop),
                }
            }
            Phase::SetMempolicy(p) => {
                sys::set_mempolicy(p.as_ref()).map_err(|e| {
                    format!(
                        "thread '{}': set_mempolicy({}): {e}",
                        self.name,
                        sys::policy_name(p.as_ref())
                    )
                })?;
                Ok(Flow::Go)
            }
            Phase::SetAffinity(s) => {
                let set = s.clone().unwrap_or_else(|| self.env.all_cpus.clone());
                sys::set_affinity(0, &set).map_err(|e| {
                    format!("thread '{}': sched_setaffinity({set}): {e}", self.name)
                })?;
                Ok(Flow::Go)
            }
            Phase::SetNumaBalancing(_) | Phase::CgroupWrite { .. } => Err(format!(
                "thread '{}': {}",
                self.name,
                crate::check::MODEL_ONLY_PHASES
            )),
            Phase::Repeat {
                times,
                body,
                request,
            } => {
                for _ in 0..*times {
                    if let Flow::Stop = self.run(body)? {
                        return Ok(Flow::Stop);
                    }
                    if *request {
                        self.requests += 1;
                    }
                }
                Ok(Flow::Go)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Layout, SharedRegions};

    /// Two processes mapping `[[shared]]` region `shm` (5 pages) beside a
    /// private region each, resolved for tiny-2n.
    fn two_procs_sharing() -> numalab_workload::Workload {
        let text = r#"
[[shared]]
name = "shm"
size = "20KiB"
[[process]]
name = "p"
count = 2
shared = ["shm"]
[[process.region]]
name = "own"
size = "8KiB"
[[process.thread]]
name = "t"
phases = [ { stream = "shm" }, { stream = "own" } ]
"#;
        let spec = numalab_workload::parse(text, "t.toml").expect("spec");
        let m = numalab_topology::presets::load("tiny-2n").expect("preset");
        numalab_workload::resolve(&spec, &m, 1, 1.0).expect("resolves")
    }

    /// The coordinator maps each shared region once (not once per process
    /// that maps it); a child forked afterwards writes the very pages the
    /// coordinator reads.
    #[test]
    fn a_shared_region_is_one_memory_across_the_fork() {
        let w = two_procs_sharing();
        let s = SharedRegions::map(&w).expect("mapped");
        assert_eq!(s.maps.len(), 1);
        let m = s.get("shm").expect("shm");
        assert_eq!(m.len(), 5 * 4096);
        assert!(
            s.get("own").is_none(),
            "a private region is the child's own"
        );
        let at = m.base() as usize + 3 * 4096 + 17;
        // SAFETY: the child writes one byte inside the mapping and leaves
        // through _exit (no destructor, no allocation).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            unsafe {
                *(at as *mut u8) = 42;
                libc::_exit(0);
            }
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        // SAFETY: inside the mapping, which the child wrote.
        assert_eq!(unsafe { *(at as *const u8) }, 42);
    }

    #[test]
    fn first_thread_runs_on_main_and_groups_start_in_order() {
        // init; two workers after init; a reducer after both workers.
        let mut l = Layout::new(vec![vec![], vec![0], vec![0], vec![1, 2]]);
        assert_eq!(l.initial(), (Some(0), vec![]));
        assert_eq!(l.running(), 1);
        assert_eq!(l.exit(0, false), vec![1, 2]);
        assert_eq!(l.running(), 2);
        assert_eq!(l.exit(2, false), Vec::<usize>::new());
        assert_eq!(l.exit(1, false), vec![3]);
        assert_eq!(l.exit(3, false), Vec::<usize>::new());
        assert_eq!(l.running(), 0);
    }

    #[test]
    fn threads_starting_at_once_and_stop() {
        let mut l = Layout::new(vec![vec![], vec![], vec![], vec![1]]);
        assert_eq!(l.initial(), (Some(0), vec![1, 2]));
        assert_eq!(l.running(), 3);
        // The run is stopping: nothing more starts.
        assert_eq!(l.exit(1, true), Vec::<usize>::new());
        assert_eq!(l.exit(0, true), Vec::<usize>::new());
        assert_eq!(l.exit(2, true), Vec::<usize>::new());
        assert_eq!(l.running(), 0);
        let mut none = Layout::new(vec![]);
        assert_eq!(none.initial(), (None, vec![]));
        assert_eq!(none.running(), 0);
    }
}
