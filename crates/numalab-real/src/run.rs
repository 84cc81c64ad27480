//! The coordinator of a real run: check, change, fork, sample, undo.
//!
//! [`real_run`] first gathers the host's facts and runs every refusal check
//! ([`crate::check`]) and the policy probe, changing nothing. Then it
//! catches SIGINT/SIGTERM/SIGHUP, sets the requested knobs (saving the old
//! values), creates the cgroup tree, opens the tracepoint counters, forks
//! one child per workload process and moves it into its cgroup, reads the
//! baseline counters and releases every child at once. While the workload
//! runs, the coordinator (single-threaded, so forking was safe) samples at
//! a fixed interval: /proc/vmstat numa counters, memory.stat of each group,
//! per-node bytes of each region (/proc/PID/numa_maps), the CPU each thread
//! last ran on, and the tracepoint counts. It takes one more sample when a
//! process reports that all its threads are done, before letting it exit.
//! At the end (or on a signal, or an error) it kills what still runs,
//! removes the cgroups and restores the knobs, then builds the Run record.
//!
//! The steps are functions, numbered as in [`real_run`] and
//! `run_planned`: 1 checks, 2 knobs, 3 cgroups ([`create_cgroups`]),
//! 4 fork ([`fork_children`]), 5 baseline ([`Baseline`]), 6 go
//! ([`release`]), 7 the sampling loop ([`sample_loop`]), 8 final
//! counters and undo ([`FinalCounters`], [`Changes`]), 9 the record
//! ([`build_record`]).
//!
//! Time series columns (named by [`numalab_record::Column`]; the first
//! is `t_s`, seconds since the start): as in the model, /proc/vmstat
//! names of [`VMSTAT_SERIES`] (delta since the start), `running_tasks`
//! and `nodeN_used_gib` (the workload's regions); then
//! `memory.stat:CGROUP:NAME` of [`MEMSTAT_SERIES`] (delta),
//! `region:PROCESS/REGION:nodeN_bytes`, `cpu:PROCESS/THREAD` (-1 while the
//! thread does not run), `trace:EVENT` (count since the start). A value of
//! -1 means "not available at that time" (a process that has exited).
//! Tasks are named `PROCESS/THREAD` as in the model
//! ([`numalab_record::task_name`]).
//!
//! A SIGKILL of numalab itself cannot be caught: its children die with it
//! (PR_SET_PDEATHSIG), and the knobs and the cgroup, journaled before
//! they were changed ([`crate::journal`]), are put back by the next
//! `real run` or by `numalab real restore`.
//!
//! Left out: per-node memory bandwidth (the kernel gives none without a
//! PMU) and NodeFigures traffic beyond the per-task estimate.

use crate::cgroup::CgroupTree;
use crate::check::{self, Plan};
use crate::coordinator_cpu::{thread_cpu_ns, CoordinatorCpu};
use crate::host::HostFacts;
use crate::journal::{self, Journal};
use crate::knobs::{self, KnobGuard, KnobRoots};
use crate::sample::{self, TraceCounters};
use crate::sys::{self, SignalGuard};
use crate::worker::{self, ChildCtx, SharedPage, ThreadReport};
use crate::{RealError, RealOptions};
use numalab_record::counters::{
    is_recorded_memory_stat, is_recorded_vmstat, MEMSTAT_SERIES, TRACE_EVENTS, VMSTAT_SERIES,
};
use numalab_record::lab::{self, Lab};
use numalab_record::{
    CgroupFigures, Column, NodeFigures, ProcessFigures, RunKind, RunRecord, Score as RecScore,
    TaskFigures, TimeSeries, FORMAT_NAME, FORMAT_VERSION,
};
use numalab_topology::Machine;
use numalab_workload::model::{Score, Workload};
use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long processes get to finish after the stop flag is raised.
const STOP_GRACE: Duration = Duration::from_secs(30);

struct Child {
    pid: i32,
    go_w: RawFd,
    report_r: RawFd,
    buf: Vec<u8>,
    regions: Vec<Option<(u64, u64)>>,
    tids: Vec<Option<i32>>,
    reports: Vec<Option<ThreadReport>>,
    done: bool,
    released: bool,
    reaped: bool,
    done_s: Option<f64>,
    final_bytes: Vec<u64>,
    final_regions: Vec<Vec<u64>>,
}

fn close(fd: &mut RawFd) {
    if *fd >= 0 {
        // SAFETY: closing an fd this process owns, once.
        unsafe { libc::close(*fd) };
        *fd = -1;
    }
}

fn pipe() -> Result<(RawFd, RawFd), String> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is a valid out array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe2: {}", std::io::Error::last_os_error()));
    }
    Ok((fds[0], fds[1]))
}

fn read_vmstat() -> BTreeMap<String, u64> {
    sample::read_opt(Path::new("/proc/vmstat"))
        .map(|t| sample::parse_vmstat(&t))
        .unwrap_or_default()
}

fn read_keyed(dir: &Path, file: &str) -> BTreeMap<String, u64> {
    sample::read_opt(&dir.join(file))
        .map(|t| sample::parse_flat_keyed(&t))
        .unwrap_or_default()
}

/// Everything that must be undone, undone in reverse order on drop; the
/// journal records the knobs and the cgroup until they are undone.
struct Changes {
    children: Vec<Child>,
    knobs: Option<KnobGuard>,
    cgroups: Option<CgroupTree>,
    journal: Option<Journal>,
}

impl Changes {
    fn kill_children(&mut self) {
        for c in &mut self.children {
            close(&mut c.go_w);
            if !c.reaped {
                // SAFETY: signalling and reaping our own child.
                unsafe {
                    libc::kill(c.pid, libc::SIGKILL);
                    let mut st = 0;
                    libc::waitpid(c.pid, &mut st, 0);
                }
                c.reaped = true;
            }
            close(&mut c.report_r);
        }
    }

    fn undo(&mut self) -> Result<(), String> {
        self.kill_children();
        let mut errs = Vec::new();
        if let Some(mut cg) = self.cgroups.take() {
            if let Err(e) = cg.remove() {
                errs.push(e);
            }
        }
        if let Some(j) = &mut self.journal {
            // Gone, whether removed just now or never made (a failed create
            // cleans up after itself).
            if j.state().cgroup.as_ref().is_some_and(|d| !d.exists()) {
                if let Err(e) = j.cgroup_removed() {
                    errs.push(e);
                }
            }
        }
        if let Some(mut k) = self.knobs.take() {
            match k.restore() {
                Ok(()) => {
                    if let Some(Err(e)) = self.journal.as_mut().map(Journal::knobs_restored) {
                        errs.push(e);
                    }
                }
                Err(e) => errs.push(e),
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        if let Err(e) = self.undo() {
            eprintln!("numalab: {e}");
        }
    }
}

/// Runs `workload` on this host for real; see the module documentation.
/// `host` is the machine the workload was resolved against (normally
/// [`crate::host_machine`]).
pub fn real_run(
    workload: &Workload,
    host: &Machine,
    opts: &RealOptions,
) -> Result<RunRecord, RealError> {
    if opts.interval.is_zero() {
        return Err(RealError::Refused("--interval must be > 0".to_string()));
    }
    // 1. Checks: nothing changes until they all pass.
    let facts = HostFacts::gather().map_err(RealError::Failed)?;
    let roots = KnobRoots::default();
    let knobs = knobs::resolve_sets(&opts.sets, &roots).map_err(RealError::Refused)?;
    let plan =
        check::plan(workload, &facts, &knobs, opts.allow_sysctl).map_err(RealError::Refused)?;
    check::probe_policies(workload).map_err(RealError::Refused)?;
    if host.nr_cpus() > facts.online_cpus.len() {
        return Err(RealError::Refused(format!(
            "machine '{}' has {} CPUs but this host has {} online: resolve the workload against host_machine()",
            host.name,
            host.nr_cpus(),
            facts.online_cpus.len()
        )));
    }
    // Before the first change: the journal, and what a run that died
    // left changed put back.
    let (journal, recovered) = Journal::open(&journal::state_dir(), &roots)?;
    if let Some(r) = recovered {
        eprintln!("numalab real: {}", r.describe());
    }
    if let (true, Some(cg)) = (plan.use_cgroups, &facts.cgroup2) {
        // SAFETY: no arguments.
        let dir = cg
            .mount
            .join(format!("numalab-{}", unsafe { libc::getpid() }));
        if dir.exists() {
            return Err(RealError::Refused(format!(
                "{} already exists (left by a killed run with the same pid?): remove it with rmdir",
                dir.display()
            )));
        }
    }
    for w in &plan.warnings {
        if opts.verbose {
            eprintln!("numalab real: note: {w}");
        }
    }
    let r = RunCtx {
        workload,
        host,
        opts,
        facts: &facts,
        plan: &plan,
        roots: &roots,
    };
    run_planned(&r, journal)
}

/// The run's fixed inputs, which every step reads: the resolved workload,
/// the machine it was resolved against, the options, the host's facts, the
/// checked plan and where the knob files are.
#[derive(Clone, Copy)]
struct RunCtx<'a> {
    workload: &'a Workload,
    host: &'a Machine,
    opts: &'a RealOptions,
    facts: &'a HostFacts,
    plan: &'a Plan,
    roots: &'a KnobRoots,
}

/// Runs a plan whose checks passed: each numbered step of the module
/// documentation is one function below. Whatever it changed is undone
/// when it returns, on success, error or signal alike (through
/// [`Changes`]' drop when it returns early).
fn run_planned(r: &RunCtx, journal: Journal) -> Result<RunRecord, RealError> {
    let RunCtx {
        host,
        opts,
        facts,
        plan,
        roots,
        ..
    } = *r;
    let interval = plan.interval.unwrap_or(opts.interval);
    let signals =
        SignalGuard::install().map_err(|e| RealError::Failed(format!("sigaction: {e}")))?;
    let mut ch = Changes {
        children: Vec::new(),
        knobs: None,
        cgroups: None,
        journal: Some(journal),
    };
    // 2. Knobs, each journaled before it is written.
    ch.knobs = Some(
        KnobGuard::apply_journaled(&plan.file_knobs, ch.journal.as_mut())
            .map_err(RealError::Failed)?,
    );
    interrupted(&signals)?;
    let settings_now = knobs::snapshot_settings(roots);
    // 3. Cgroups.
    // SAFETY: no arguments.
    let my_pid = unsafe { libc::getpid() };
    ch.cgroups = create_cgroups(facts, plan, my_pid, ch.journal.as_mut())?;
    interrupted(&signals)?;
    // 4. Fork the processes; they wait for "go".
    let shared = SharedPage::new().map_err(|e| RealError::Failed(format!("mmap: {e}")))?;
    let shared_regions = worker::SharedRegions::map(r.workload).map_err(RealError::Failed)?;
    fork_children(&mut ch, r, &shared, &shared_regions, my_pid)?;
    // 5. Counters and baselines.
    let mut settings = settings_now;
    let base = Baseline::read(r, &ch, &mut settings);
    interrupted(&signals)?;
    // 6. Go.
    let start = release(&ch, &shared, r);
    // 7. The loop.
    let ctx = SampleCtx { host, base: &base };
    let (rows, coordinator) = sample_loop(&mut ch, r, &signals, &shared, &ctx, start, interval)?;
    let wall_s = start.elapsed().as_secs_f64();
    // 8. Final counters, then undo.
    let fin = FinalCounters::read(&base);
    let Baseline {
        trace,
        cg_paths,
        vm0,
        mem0,
        tr0,
        series,
        ..
    } = base;
    drop(trace);
    let undo = ch.undo();
    drop(signals);
    undo.map_err(RealError::Failed)?;
    // 9. The record.
    let collected = Collected {
        children: &ch.children,
        cg_paths: &cg_paths,
        vm0: &vm0,
        mem0: &mem0,
        tr0: &tr0,
        fin: &fin,
        rows,
        coordinator,
        columns: series.columns,
        wall_s,
        interval,
        settings,
    };
    Ok(build_record(r, my_pid, collected))
}

/// `Err` with the caught signal once SIGINT/SIGTERM/SIGHUP arrived.
fn interrupted(s: &SignalGuard) -> Result<(), RealError> {
    match s.caught() {
        Some(sig) => Err(RealError::Interrupted(sig)),
        None => Ok(()),
    }
}

/// Step 3: the run's cgroup tree `numalab-PID` under the cgroup2 mount,
/// when the plan uses cgroups (removed again by [`Changes::undo`]),
/// journaled before it is created.
fn create_cgroups(
    facts: &HostFacts,
    plan: &Plan,
    my_pid: i32,
    journal: Option<&mut Journal>,
) -> Result<Option<CgroupTree>, RealError> {
    if !plan.use_cgroups {
        return Ok(None);
    }
    let mount = facts
        .cgroup2
        .as_ref()
        .map(|c| c.mount.clone())
        .ok_or_else(|| RealError::Failed("cgroup2 vanished".into()))?;
    if let Some(j) = journal {
        j.set_cgroup(&mount.join(format!("numalab-{my_pid}")))
            .map_err(RealError::Failed)?;
    }
    CgroupTree::create(
        &mount,
        &format!("numalab-{my_pid}"),
        &plan.controllers,
        &plan.groups,
        plan.need_root_leaf,
    )
    .map(Some)
    .map_err(RealError::Failed)
}

/// Step 4: forks one child per workload process, each waiting on its go
/// pipe, and moves it into its cgroup. The children are pushed into
/// `ch` as they are made, so an error kills those already forked.
fn fork_children(
    ch: &mut Changes,
    r: &RunCtx,
    shared: &SharedPage,
    shared_regions: &worker::SharedRegions,
    my_pid: i32,
) -> Result<(), RealError> {
    let RunCtx {
        workload,
        host,
        opts,
        facts,
        plan,
        ..
    } = *r;
    let node_of_cpu: Vec<usize> = host.cpus.iter().map(|c| c.node).collect();
    let all_cpus = facts.allowed_cpus.clone();
    for (pi, p) in workload.processes.iter().enumerate() {
        let (go_r, go_w) = pipe().map_err(RealError::Failed)?;
        let (rep_r, rep_w) = pipe().map_err(RealError::Failed)?;
        // SAFETY: the coordinator is single-threaded here; the child only
        // runs the workload and leaves through _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(RealError::Failed(format!(
                "fork: {}",
                std::io::Error::last_os_error()
            )));
        }
        if pid == 0 {
            // Child.
            sys::default_signals();
            // SAFETY: plain prctl/getppid/close calls.
            unsafe {
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                if libc::getppid() != my_pid {
                    libc::_exit(3);
                }
                libc::close(go_w);
                libc::close(rep_r);
                for c in &ch.children {
                    libc::close(c.go_w);
                    libc::close(c.report_r);
                }
            }
            worker::child_main(ChildCtx {
                proc_idx: pi,
                process: p,
                shared: shared.get(),
                shared_regions,
                go_fd: go_r,
                report_fd: rep_w,
                seed: opts.seed,
                node_of_cpu: node_of_cpu.clone(),
                nr_nodes: host.nr_nodes(),
                all_cpus: all_cpus.clone(),
                access_latency_us: plan.access_latency_us,
            });
        }
        // Parent.
        // SAFETY: closing the child's ends; making our read end non-blocking.
        unsafe {
            libc::close(go_r);
            libc::close(rep_w);
            let fl = libc::fcntl(rep_r, libc::F_GETFL);
            libc::fcntl(rep_r, libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
        ch.children.push(Child {
            pid,
            go_w,
            report_r: rep_r,
            buf: Vec::new(),
            regions: vec![None; p.regions.len()],
            tids: vec![None; p.threads.len()],
            reports: vec![None; p.threads.len()],
            done: false,
            released: false,
            reaped: false,
            done_s: None,
            final_bytes: vec![0; host.nr_nodes()],
            final_regions: vec![vec![0; host.nr_nodes()]; p.regions.len()],
        });
        if let Some(cg) = &ch.cgroups {
            cg.add_pid(&p.cgroup, pid).map_err(RealError::Failed)?;
        }
    }
    Ok(())
}

/// Step 5: what the run's deltas are taken against, read before the
/// children are released: the tracepoint counters (opened here), the
/// cgroups measured, /proc/vmstat, memory.stat of each cgroup, and the
/// time series' column layout (which depends on what the kernel has).
struct Baseline {
    trace: Option<TraceCounters>,
    /// "/" first, then the workload's cgroups.
    cg_paths: Vec<String>,
    /// The stats directory of each cgroup that has one.
    cg_dirs: Vec<(String, PathBuf)>,
    vm0: BTreeMap<String, u64>,
    mem0: BTreeMap<String, BTreeMap<String, u64>>,
    tr0: BTreeMap<String, u64>,
    /// Kworker CPU time at the start, ns by pid.
    kworker0: BTreeMap<u32, u64>,
    series: Series,
}

impl Baseline {
    /// Opens the counters and reads the baseline; records in `settings`
    /// whether tracepoints are counted and, if not, why.
    fn read(r: &RunCtx, ch: &Changes, settings: &mut BTreeMap<String, String>) -> Baseline {
        let RunCtx {
            workload,
            host,
            opts,
            facts,
            ..
        } = *r;
        let trace = match &facts.tracefs {
            Some(t) => {
                let cpus: Vec<usize> = facts.online_cpus.iter().collect();
                let tgids: Vec<i32> = ch.children.iter().map(|c| c.pid).collect();
                // The workload's processes only; system-wide when the
                // kernel refuses the filter.
                let opened = TraceCounters::open(t, &cpus, Some(&tgids))
                    .map(|c| (c, "perf counting, workload processes".to_string()))
                    .or_else(|fe| {
                        if opts.verbose {
                            eprintln!("numalab real: note: tracepoints counted system-wide: {fe}");
                        }
                        TraceCounters::open(t, &cpus, None)
                            .map(|c| (c, format!("perf counting, system-wide (no filter: {fe})")))
                    });
                match opened {
                    Ok((c, how)) => {
                        settings.insert("real.tracepoints".into(), how);
                        Some(c)
                    }
                    Err(e) => {
                        if opts.verbose {
                            eprintln!("numalab real: note: tracepoint counters unavailable: {e}");
                        }
                        settings.insert("real.tracepoints".into(), format!("unavailable: {e}"));
                        None
                    }
                }
            }
            None => {
                settings.insert(
                    "real.tracepoints".into(),
                    "unavailable: tracefs not mounted".into(),
                );
                None
            }
        };
        let cg_paths: Vec<String> = std::iter::once("/".to_string())
            .chain(
                workload
                    .cgroups
                    .iter()
                    .map(|c| c.path.clone())
                    .filter(|p| p != "/"),
            )
            .collect();
        let cg_dirs: Vec<(String, PathBuf)> = match &ch.cgroups {
            Some(t) => cg_paths
                .iter()
                .filter_map(|p| t.stats_dir(p).ok().map(|d| (p.clone(), d)))
                .collect(),
            None => Vec::new(),
        };
        let vm0 = read_vmstat();
        let mem0 = read_cgroups(&cg_dirs, "memory.stat");
        let tr0 = trace.as_ref().map(|t| t.read()).unwrap_or_default();
        let series = Series::new(workload, host, &vm0, &mem0, trace.is_some());
        Baseline {
            trace,
            cg_paths,
            cg_dirs,
            vm0,
            mem0,
            tr0,
            kworker0: sample::kworker_cpu_ns(),
            series,
        }
    }
}

/// A flat keyed file (memory.stat, cpu.stat) of each cgroup, by path.
fn read_cgroups(
    cg_dirs: &[(String, PathBuf)],
    file: &str,
) -> BTreeMap<String, BTreeMap<String, u64>> {
    cg_dirs
        .iter()
        .map(|(p, d)| (p.clone(), read_keyed(d, file)))
        .collect()
}

/// Step 6: stamps the start time the workers measure from and writes
/// "go" to every child at once; returns the coordinator's start instant.
fn release(ch: &Changes, shared: &SharedPage, r: &RunCtx) -> Instant {
    let RunCtx { workload, opts, .. } = *r;
    shared
        .get()
        .t0_ns
        .store(sys::monotonic_ns(), Ordering::SeqCst);
    let start = Instant::now();
    for c in &ch.children {
        // SAFETY: one byte to the child's go pipe.
        unsafe { libc::write(c.go_w, b"g".as_ptr() as *const libc::c_void, 1) };
    }
    if opts.verbose {
        eprintln!(
            "numalab real: started {} process(es) of '{}'",
            ch.children.len(),
            workload.name
        );
    }
    start
}

/// Step 7: until every child is reaped, reads their reports, raises the
/// stop flag at the workload's deadline (failing when they overrun it by
/// [`STOP_GRACE`]), samples at `interval` and once more when a process
/// is done ([`release_done`]), and reaps children ([`reap`]). Returns
/// the time-series rows and the loop's own CPU time.
fn sample_loop(
    ch: &mut Changes,
    r: &RunCtx,
    signals: &SignalGuard,
    shared: &SharedPage,
    ctx: &SampleCtx,
    start: Instant,
    interval: Duration,
) -> Result<(Vec<Vec<f64>>, CoordinatorCpu), RealError> {
    let RunCtx { workload, host, .. } = *r;
    let mut cpu = CoordinatorCpu::default();
    let deadline = workload
        .duration_ns
        .map(|ns| start + Duration::from_nanos(ns));
    let mut stop_at: Option<Instant> = None;
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut next_sample = start;
    loop {
        let iteration0 = thread_cpu_ns();
        let mut sampled_ns = 0;
        if let Err(e) = interrupted(signals) {
            shared.get().stop.store(1, Ordering::SeqCst);
            return Err(e);
        }
        for (pi, c) in ch.children.iter_mut().enumerate() {
            drain_reports(c, &workload.processes[pi].name).map_err(RealError::Failed)?;
        }
        let now = Instant::now();
        if stop_at.is_none() && deadline.is_some_and(|d| now >= d) {
            shared.get().stop.store(1, Ordering::SeqCst);
            stop_at = Some(now);
        }
        if let Some(s) = stop_at {
            if now.duration_since(s) > STOP_GRACE {
                return Err(RealError::Failed(format!(
                    "workload processes did not stop within {} s of the deadline",
                    STOP_GRACE.as_secs()
                )));
            }
        }
        // Processes whose threads are all done: sample, then let them exit.
        if ch.children.iter().any(|c| c.done && !c.released) {
            let t = start.elapsed().as_secs_f64();
            let s0 = thread_cpu_ns();
            rows.push(ctx.row(t, &ch.children));
            sampled_ns += cpu.sample(s0);
            next_sample = Instant::now() + interval;
            release_done(&mut ch.children, host, t);
        }
        reap(&mut ch.children, workload, signals)?;
        if ch.children.iter().all(|c| c.reaped) {
            break;
        }
        let now = Instant::now();
        if now >= next_sample {
            let s0 = thread_cpu_ns();
            rows.push(ctx.row(start.elapsed().as_secs_f64(), &ch.children));
            sampled_ns += cpu.sample(s0);
            while next_sample <= now {
                next_sample += interval;
            }
        }
        let wait = next_sample
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(50));
        poll_reports(&ch.children, wait);
        let spent = thread_cpu_ns().saturating_sub(iteration0);
        cpu.polls_ns.push(spent.saturating_sub(sampled_ns));
    }
    Ok((rows, cpu))
}

/// Lets the children whose threads are all done exit, after reading
/// where their memory ended up (/proc/PID/numa_maps): the whole process
/// and each region. `t` is the time of the sample just taken.
fn release_done(children: &mut [Child], host: &Machine, t: f64) {
    for c in children.iter_mut() {
        if c.done && !c.released {
            let vmas = sample::read_opt(Path::new(&format!("/proc/{}/numa_maps", c.pid)))
                .map(|t| sample::parse_numa_maps(&t))
                .unwrap_or_default();
            c.final_bytes = sample::total_bytes_by_node(&vmas, host.nr_nodes());
            for (ri, r) in c.regions.iter().enumerate() {
                if let Some((s, l)) = r {
                    c.final_regions[ri] =
                        sample::range_bytes_by_node(&vmas, *s, *l, host.nr_nodes());
                }
            }
            c.done_s = Some(t);
            c.released = true;
            close(&mut c.go_w);
        }
    }
}

/// Reaps the children that exited (without blocking), reading what they
/// wrote last. A child that exited badly, or before reporting done,
/// fails the run (or reports the signal, when one caused it).
fn reap(
    children: &mut [Child],
    workload: &Workload,
    signals: &SignalGuard,
) -> Result<(), RealError> {
    for (pi, c) in children.iter_mut().enumerate() {
        if c.reaped {
            continue;
        }
        let mut st = 0;
        // SAFETY: non-blocking reap of our own child.
        let r = unsafe { libc::waitpid(c.pid, &mut st, libc::WNOHANG) };
        if r == c.pid {
            c.reaped = true;
            // Read what it wrote before exiting.
            drain_reports(c, &workload.processes[pi].name).map_err(RealError::Failed)?;
            let ok = libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0;
            if !ok || !c.done {
                interrupted(signals)?;
                let how = if libc::WIFSIGNALED(st) {
                    format!("was killed by {}", sys::signal_name(libc::WTERMSIG(st)))
                } else {
                    format!("exited with status {}", libc::WEXITSTATUS(st))
                };
                return Err(RealError::Failed(format!(
                    "workload process '{}' (pid {}) {how} before finishing",
                    workload.processes[pi].name, c.pid
                )));
            }
        }
    }
    Ok(())
}

/// Waits up to `wait` for a report from any child still running (a
/// signal ends the wait early).
fn poll_reports(children: &[Child], wait: Duration) {
    let mut pfds: Vec<libc::pollfd> = children
        .iter()
        .filter(|c| c.report_r >= 0 && !c.reaped)
        .map(|c| libc::pollfd {
            fd: c.report_r,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: pfds is a valid array; EINTR (a signal) just returns early.
    unsafe {
        libc::poll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            wait.as_millis() as i32,
        )
    };
}

/// Step 8: the counters at the end, read before anything is undone.
struct FinalCounters {
    vm1: BTreeMap<String, u64>,
    tr1: BTreeMap<String, u64>,
    mem1: BTreeMap<String, BTreeMap<String, u64>>,
    cpu1: BTreeMap<String, BTreeMap<String, u64>>,
    /// Kworker CPU seconds over the run.
    kworker_s: f64,
}

impl FinalCounters {
    /// Reads /proc/vmstat, the tracepoint counts, and memory.stat and
    /// cpu.stat of each cgroup of `base`.
    fn read(base: &Baseline) -> FinalCounters {
        let vm1 = read_vmstat();
        let tr1 = base.trace.as_ref().map(|t| t.read()).unwrap_or_default();
        FinalCounters {
            vm1,
            tr1,
            mem1: read_cgroups(&base.cg_dirs, "memory.stat"),
            cpu1: read_cgroups(&base.cg_dirs, "cpu.stat"),
            kworker_s: sample::kworker_cpu_s(&base.kworker0, &sample::kworker_cpu_ns()),
        }
    }
}

/// What a finished run gathered, for [`build_record`].
struct Collected<'a> {
    children: &'a [Child],
    cg_paths: &'a [String],
    vm0: &'a BTreeMap<String, u64>,
    mem0: &'a BTreeMap<String, BTreeMap<String, u64>>,
    tr0: &'a BTreeMap<String, u64>,
    fin: &'a FinalCounters,
    rows: Vec<Vec<f64>>,
    /// The sampling loop's own CPU time.
    coordinator: CoordinatorCpu,
    columns: Vec<String>,
    wall_s: f64,
    interval: Duration,
    /// Knob values read after they were set, plus `real.tracepoints`.
    settings: BTreeMap<String, String>,
}

/// Step 9: the Run record of a finished run. Times come from the workers'
/// reports (the run lasts until the last thread exits), counters are
/// deltas between [`Baseline`] and [`FinalCounters`].
fn build_record(r: &RunCtx, my_pid: i32, c: Collected) -> RunRecord {
    let RunCtx {
        workload,
        host,
        opts,
        facts,
        plan,
        roots,
    } = *r;
    let (processes, tasks, requests) = process_and_task_figures(workload, c.children);
    let elapsed_s = processes.iter().fold(0.0f64, |e, p| e.max(p.elapsed_s));
    let user_s: f64 = tasks.iter().map(|t| t.user_s).sum();
    let sys_s: f64 = tasks.iter().map(|t| t.sys_s).sum();
    let vmstat: BTreeMap<String, u64> = sample::deltas(c.vm0, &c.fin.vm1)
        .into_iter()
        .filter(|(k, _)| is_recorded_vmstat(k))
        .collect();
    let cgroups = cgroup_figures(workload, &c);
    let nodes = node_figures(host, c.children, &tasks);
    let mut settings = c.settings;
    for (k, v) in &opts.sets {
        if let Ok(knobs::Knob::File { key, .. }) = knobs::resolve_knob(k, roots) {
            settings.insert(key, v.clone());
        } else {
            settings.insert(k.clone(), v.clone());
        }
    }
    settings.insert(
        "real.cgroup2".into(),
        match &facts.cgroup2 {
            Some(cg) if plan.use_cgroups => format!("{}/numalab-{my_pid}", cg.mount.display()),
            _ => "unused".to_string(),
        },
    );
    settings.insert("real.controllers".into(), plan.controllers.join(" "));
    settings.insert(
        "numalab.sample_interval_ms".into(),
        c.interval.as_millis().to_string(),
    );
    let mut lab = Lab::new();
    lab.set(lab::REAL_WALL_S, c.wall_s);
    lab.set(lab::REAL_SAMPLES, c.rows.len() as f64);
    lab.set(lab::REAL_BYTES_BY_NODE_ESTIMATED, 1.0);
    for (k, v) in sample::deltas(c.tr0, &c.fin.tr1) {
        lab.set(lab::TRACE.key(&k), v as f64);
    }
    lab.set(
        lab::REAL_KWORKER_CPU_S,
        (c.fin.kworker_s * 1e6).round() / 1e6,
    );
    if let Some(ms) = c.coordinator.sample_ms() {
        lab.set(lab::REAL_SAMPLE_CPU_MS, (ms * 1e3).round() / 1e3);
    }
    if let Some(us) = c.coordinator.poll_us() {
        lab.set(lab::REAL_POLL_CPU_US, (us * 10.0).round() / 10.0);
    }
    lab.set(
        lab::REAL_COORDINATOR_CPU_S,
        (c.coordinator.total_s() * 1e6).round() / 1e6,
    );
    // Timed accesses (`numalab.access_latency=1`): the model's figures.
    let timed: Vec<_> = tasks
        .iter()
        .filter_map(|t| t.access_latency.as_ref())
        .collect();
    if !timed.is_empty() {
        let total: u64 = timed
            .iter()
            .map(|l| l.reads.iter().chain(&l.writes).sum::<u64>())
            .sum();
        let over: u64 = timed.iter().map(|l| l.reads_over + l.writes_over).sum();
        lab.set(lab::ACCESSES, total as f64);
        lab.set(lab::ACCESS_LATENCY_OUTLIERS, over as f64);
        if elapsed_s > 0.0 {
            lab.set(lab::ACCESSES_PER_S, (total as f64 / elapsed_s).round());
        }
    }
    let score = match workload.score {
        Score::Throughput => Some(RecScore::throughput(requests, elapsed_s)),
        Score::Elapsed => None,
    };
    RunRecord {
        format: FORMAT_NAME.to_string(),
        version: FORMAT_VERSION,
        kind: RunKind::Real,
        numalab_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: Some(sys::uname_release()),
        machine: serde_json::to_value(host).unwrap_or_default(),
        workload: serde_json::to_value(workload).unwrap_or_default(),
        settings,
        seed: opts.seed,
        scale: opts.scale,
        elapsed_s,
        user_s,
        sys_s,
        score,
        vmstat,
        cgroups,
        processes,
        tasks,
        nodes,
        lab,
        timeseries: Some(TimeSeries {
            interval_s: c.interval.as_secs_f64(),
            columns: c.columns,
            rows: c.rows,
        }),
    }
}

/// Per-process and per-task figures from the workers' reports, and the
/// requests they completed. A process lasts until its last thread exits;
/// its resident pages are those read when it was done.
fn process_and_task_figures(
    workload: &Workload,
    children: &[Child],
) -> (Vec<ProcessFigures>, Vec<TaskFigures>, u64) {
    let mut tasks: Vec<TaskFigures> = Vec::new();
    let mut processes = Vec::new();
    let mut requests = 0u64;
    for (pi, c) in children.iter().enumerate() {
        let p = &workload.processes[pi];
        let mut pf = ProcessFigures {
            pid: c.pid as u64,
            name: p.name.clone(),
            cgroup: p.cgroup.clone(),
            elapsed_s: 0.0,
            user_s: 0.0,
            sys_s: 0.0,
            pages_by_node: c
                .final_bytes
                .iter()
                .map(|b| b / sys::PAGE_SIZE as u64)
                .collect(),
        };
        for r in c.reports.iter().flatten() {
            pf.user_s += r.task.user_s;
            pf.sys_s += r.task.sys_s;
            pf.elapsed_s = pf.elapsed_s.max(r.task.exit_s);
            requests += r.requests;
            tasks.push(r.task.clone());
        }
        processes.push(pf);
    }
    (processes, tasks, requests)
}

/// Hierarchical figures of each cgroup (a parent includes its children):
/// tasks counted from the reports, memory.stat deltas, and CPU time from
/// cpu.stat (or, without it, the sum of the tasks' times).
fn cgroup_figures(workload: &Workload, c: &Collected) -> BTreeMap<String, CgroupFigures> {
    let mut cgroups = BTreeMap::new();
    for path in c.cg_paths {
        let under = |cg: &str| path == "/" || cg == path || cg.starts_with(&format!("{path}/"));
        let nr_tasks = c
            .children
            .iter()
            .enumerate()
            .filter(|(pi, _)| under(&workload.processes[*pi].cgroup))
            .map(|(_, ch)| ch.reports.iter().flatten().count() as u64)
            .sum();
        let mut f = CgroupFigures {
            nr_tasks,
            ..Default::default()
        };
        if let (Some(m0), Some(m1)) = (c.mem0.get(path), c.fin.mem1.get(path)) {
            f.memory_stat = sample::deltas(m0, m1)
                .into_iter()
                .filter(|(k, _)| is_recorded_memory_stat(k))
                .collect();
        }
        match c.fin.cpu1.get(path) {
            Some(cpu) if cpu.contains_key("user_usec") => {
                f.user_s = cpu["user_usec"] as f64 / 1e6;
                f.sys_s = cpu.get("system_usec").copied().unwrap_or(0) as f64 / 1e6;
            }
            _ => {
                for (pi, ch) in c.children.iter().enumerate() {
                    if under(&workload.processes[pi].cgroup) {
                        for r in ch.reports.iter().flatten() {
                            f.user_s += r.task.user_s;
                            f.sys_s += r.task.sys_s;
                        }
                    }
                }
            }
        }
        cgroups.insert(path.clone(), f);
    }
    cgroups
}

/// Per-node figures: capacity, the workload's resident bytes when each
/// process was done, and the tasks' estimated traffic.
fn node_figures(host: &Machine, children: &[Child], tasks: &[TaskFigures]) -> Vec<NodeFigures> {
    host.nodes
        .iter()
        .map(|n| NodeFigures {
            node: n.id,
            mem_total_bytes: n.mem_bytes,
            mem_used_bytes: children
                .iter()
                .map(|c| c.final_bytes.get(n.id).copied().unwrap_or(0))
                .sum(),
            traffic_bytes: tasks
                .iter()
                .map(|t| t.bytes_by_node.get(n.id).copied().unwrap_or(0))
                .sum(),
        })
        .collect()
}

/// Reads what a child wrote, line by line.
fn drain_reports(c: &mut Child, name: &str) -> Result<(), String> {
    if c.report_r < 0 {
        return Ok(());
    }
    let mut buf = [0u8; 8192];
    loop {
        // SAFETY: reading into a local buffer from our pipe end.
        let r = unsafe { libc::read(c.report_r, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if r > 0 {
            c.buf.extend_from_slice(&buf[..r as usize]);
            continue;
        }
        if r == 0 {
            close(&mut c.report_r);
        }
        break;
    }
    while let Some(nl) = c.buf.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = c.buf.drain(..=nl).collect();
        let line = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
        handle_line(c, &line).map_err(|e| format!("process '{name}': {e}"))?;
    }
    Ok(())
}

fn handle_line(c: &mut Child, line: &str) -> Result<(), String> {
    let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
    let bad = || format!("garbled report line {line:?}");
    match tag {
        "R" => {
            let v: Vec<u64> = rest
                .split_whitespace()
                .filter_map(|t| t.parse().ok())
                .collect();
            let (&[i, s, l], true) = (v.as_slice(), v.len() == 3) else {
                return Err(bad());
            };
            *c.regions.get_mut(i as usize).ok_or_else(bad)? = Some((s, l));
        }
        "T" => {
            let f: Vec<&str> = rest.split_whitespace().collect();
            let i: usize = f.first().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
            let tid: i32 = f.get(1).and_then(|x| x.parse().ok()).ok_or_else(bad)?;
            *c.tids.get_mut(i).ok_or_else(bad)? = Some(tid);
        }
        "X" => {
            let r: ThreadReport =
                serde_json::from_str(rest).map_err(|e| format!("{}: {e}", bad()))?;
            let i = r.idx;
            *c.reports.get_mut(i).ok_or_else(bad)? = Some(r);
        }
        "D" => c.done = true,
        "E" => return Err(rest.to_string()),
        _ => return Err(bad()),
    }
    Ok(())
}

/// Column layout of the time series: the names, and what each group of
/// columns samples.
struct Series {
    columns: Vec<String>,
    /// vmstat counters the kernel has, of [`VMSTAT_SERIES`].
    vm: Vec<String>,
    /// (cgroup, memory.stat counter) pairs.
    mem: Vec<(String, String)>,
    /// (process, region) indices.
    regions: Vec<(usize, usize)>,
    /// (process, thread) indices.
    threads: Vec<(usize, usize)>,
    /// Tracepoints are counted.
    trace: bool,
}

impl Series {
    fn new(
        w: &Workload,
        host: &Machine,
        vm0: &BTreeMap<String, u64>,
        mem0: &BTreeMap<String, BTreeMap<String, u64>>,
        trace: bool,
    ) -> Series {
        let mut s = Series {
            columns: vec![Column::Time.name()],
            vm: Vec::new(),
            mem: Vec::new(),
            regions: Vec::new(),
            threads: Vec::new(),
            trace,
        };
        for k in VMSTAT_SERIES {
            if vm0.contains_key(k) {
                s.columns.push(Column::Vmstat(k).name());
                s.vm.push(k.to_string());
            }
        }
        s.columns.push(Column::RunningTasks.name());
        for n in 0..host.nr_nodes() {
            s.columns.push(Column::NodeUsedGib(n).name());
        }
        for (p, m) in mem0 {
            for k in MEMSTAT_SERIES {
                if m.contains_key(k) {
                    s.columns
                        .push(Column::MemoryStat { cgroup: p, name: k }.name());
                    s.mem.push((p.clone(), k.to_string()));
                }
            }
        }
        for (pi, p) in w.processes.iter().enumerate() {
            for (ri, r) in p.regions.iter().enumerate() {
                for node in 0..host.nr_nodes() {
                    s.columns.push(
                        Column::RegionBytes {
                            process: &p.name,
                            region: &r.name,
                            node,
                        }
                        .name(),
                    );
                }
                s.regions.push((pi, ri));
            }
        }
        for (pi, p) in w.processes.iter().enumerate() {
            for (ti, t) in p.threads.iter().enumerate() {
                s.columns.push(
                    Column::Cpu {
                        process: &p.name,
                        thread: &t.name,
                    }
                    .name(),
                );
                s.threads.push((pi, ti));
            }
        }
        if trace {
            for e in TRACE_EVENTS {
                s.columns.push(Column::Trace(e).name());
            }
        }
        s
    }
}

/// What a sample needs: the machine and the baseline (counters, cgroups,
/// column layout).
struct SampleCtx<'a> {
    host: &'a Machine,
    base: &'a Baseline,
}

impl SampleCtx<'_> {
    /// One time-series row at `t` seconds, in the columns of the series.
    fn row(&self, t: f64, children: &[Child]) -> Vec<f64> {
        let s = &self.base.series;
        let mut row = Vec::with_capacity(s.columns.len());
        row.push((t * 1000.0).round() / 1000.0);
        let vm = read_vmstat();
        for k in &s.vm {
            let d = vm
                .get(k)
                .copied()
                .unwrap_or(0)
                .saturating_sub(self.base.vm0.get(k).copied().unwrap_or(0));
            row.push(d as f64);
        }
        let running_at = row.len();
        row.push(0.0);
        let used_at = row.len();
        row.extend(std::iter::repeat_n(0.0, self.host.nr_nodes()));
        let mut mem_now: BTreeMap<&str, BTreeMap<String, u64>> = BTreeMap::new();
        for (p, d) in &self.base.cg_dirs {
            mem_now.insert(p, read_keyed(d, "memory.stat"));
        }
        for (p, k) in &s.mem {
            let now = mem_now
                .get(p.as_str())
                .and_then(|m| m.get(k))
                .copied()
                .unwrap_or(0);
            let was = self
                .base
                .mem0
                .get(p)
                .and_then(|m| m.get(k))
                .copied()
                .unwrap_or(0);
            row.push(now.saturating_sub(was) as f64);
        }
        let nr_nodes = self.host.nr_nodes();
        let mut maps: BTreeMap<usize, Option<Vec<sample::NumaMapsVma>>> = BTreeMap::new();
        for &(pi, ri) in &s.regions {
            let c = &children[pi];
            let vmas = maps.entry(pi).or_insert_with(|| {
                if c.reaped || c.released {
                    None
                } else {
                    sample::read_opt(Path::new(&format!("/proc/{}/numa_maps", c.pid)))
                        .map(|t| sample::parse_numa_maps(&t))
                }
            });
            match (vmas, c.regions[ri]) {
                (Some(v), Some((start, len))) => {
                    for (n, b) in sample::range_bytes_by_node(v, start, len, nr_nodes)
                        .into_iter()
                        .enumerate()
                    {
                        row[used_at + n] += b as f64 / (1u64 << 30) as f64;
                        row.push(b as f64);
                    }
                }
                (Some(_), None) => row.extend(std::iter::repeat_n(0.0, nr_nodes)),
                (None, _) => row.extend(std::iter::repeat_n(-1.0, nr_nodes)),
            }
        }
        for &(pi, ti) in &s.threads {
            let c = &children[pi];
            let v = match c.tids[ti] {
                Some(tid) if c.reports[ti].is_none() && !c.reaped => {
                    sample::read_opt(Path::new(&format!("/proc/{}/task/{tid}/stat", c.pid)))
                        .and_then(|t| sample::parse_stat_processor(&t))
                        .map_or(-1.0, |c| c as f64)
                }
                _ => -1.0,
            };
            if v >= 0.0 {
                row[running_at] += 1.0;
            }
            row.push(v);
        }
        if s.trace {
            let now = self
                .base
                .trace
                .as_ref()
                .map(|t| t.read())
                .unwrap_or_default();
            for e in TRACE_EVENTS {
                let d = now
                    .get(e)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(self.base.tr0.get(e).copied().unwrap_or(0));
                row.push(d as f64);
            }
        }
        row
    }
}
