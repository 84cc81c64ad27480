//! Readers of what the real kernel reports, and the tracepoint counters.
//!
//! Parsers (pure functions, unit-tested on captured text): /proc/vmstat,
//! flat keyed files (memory.stat, cpu.stat), /proc/meminfo,
//! /proc/PID/numa_maps, /proc/PID/task/TID/stat (the `processor` field),
//! /proc/PID/task/TID/sched (NUMA balancing state) and schedstat, and the
//! status array of a `move_pages(nodes = NULL)` query.
//!
//! [`TraceCounters`] counts the `sched:sched_move_numa`,
//! `sched:sched_swap_numa` and `sched:sched_stick_numa` tracepoints with
//! counting-mode perf events (one per CPU), which neither touches the
//! global ftrace state nor loses events to a full buffer. Given the
//! workload's process ids, each event carries the kernel's own filter
//! (`PERF_EVENT_IOC_SET_FILTER`, [`tgid_filter`]) on the thread group ids
//! the tracepoints record (include/trace/events/sched.h: `tgid` of
//! `sched_move_task_template`, `src_tgid`/`dst_tgid` of
//! `sched_numa_pair_template`), so only events of the workload's tasks
//! are counted, not those of numalab's coordinator or of other tasks. It
//! needs tracefs mounted (for the event ids) and the privilege to open
//! system-wide perf events (root, or perf_event_paranoid <= -1).
//!
//! Which counters a record keeps, and the tracepoints' names, are the
//! record crate's ([`numalab_record::counters`]).
//!
//! Left out: per-task attribution of the tracepoints (they are counted for
//! the workload as a whole) and /proc/PID/status.

use numalab_record::counters::TRACE_EVENTS;
use numalab_record::{NodeFaults, TaskNuma};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

/// Parses `name value` lines (/proc/vmstat, memory.stat, cpu.stat).
/// Lines that do not have exactly a name and an unsigned number are skipped.
pub fn parse_flat_keyed(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        if let (Some(k), Some(v), None) = (it.next(), it.next(), it.next()) {
            if let Ok(v) = v.parse::<u64>() {
                m.insert(k.to_string(), v);
            }
        }
    }
    m
}

/// Parses /proc/vmstat.
pub fn parse_vmstat(text: &str) -> BTreeMap<String, u64> {
    parse_flat_keyed(text)
}

/// Parses /proc/meminfo into kB values (`MemAvailable: 123 kB`).
pub fn parse_meminfo(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        if let Some((k, rest)) = line.split_once(':') {
            if let Some(v) = rest.split_whitespace().next().and_then(|v| v.parse().ok()) {
                m.insert(k.trim().to_string(), v);
            }
        }
    }
    m
}

/// `b - a` for every key of `b` (0 for counters that went down, such as
/// gauges).
pub fn deltas(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    b.iter()
        .map(|(k, &v)| (k.clone(), v.saturating_sub(a.get(k).copied().unwrap_or(0))))
        .collect()
}

/// One line (one VMA) of /proc/PID/numa_maps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaMapsVma {
    /// Start address.
    pub start: u64,
    /// Policy, e.g. `default`, `bind:1`, `interleave:0-3`.
    pub policy: String,
    /// Pages per node (`N0=16`), in units of `page_kb`.
    pub pages_by_node: BTreeMap<usize, u64>,
    /// `kernelpagesize_kB` (4 unless hugetlbfs).
    pub page_kb: u64,
}

/// Parses /proc/PID/numa_maps.
pub fn parse_numa_maps(text: &str) -> Vec<NumaMapsVma> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let Some(start) = it.next().and_then(|a| u64::from_str_radix(a, 16).ok()) else {
            continue;
        };
        let policy = it.next().unwrap_or("default").to_string();
        let mut v = NumaMapsVma {
            start,
            policy,
            pages_by_node: BTreeMap::new(),
            page_kb: 4,
        };
        for tok in it {
            let Some((k, val)) = tok.split_once('=') else {
                continue;
            };
            if let Some(n) = k.strip_prefix('N') {
                if let (Ok(n), Ok(c)) = (n.parse::<usize>(), val.parse::<u64>()) {
                    v.pages_by_node.insert(n, c);
                }
            } else if k == "kernelpagesize_kB" {
                v.page_kb = val.parse().unwrap_or(4);
            }
        }
        out.push(v);
    }
    out
}

/// Bytes per node of the VMAs that start inside `[start, start + len)`.
pub fn range_bytes_by_node(
    vmas: &[NumaMapsVma],
    start: u64,
    len: u64,
    nr_nodes: usize,
) -> Vec<u64> {
    let mut b = vec![0u64; nr_nodes];
    for v in vmas
        .iter()
        .filter(|v| v.start >= start && v.start < start + len)
    {
        for (&n, &c) in &v.pages_by_node {
            if n < nr_nodes {
                b[n] += c * v.page_kb * 1024;
            }
        }
    }
    b
}

/// Bytes per node of every VMA (the whole process, as `numastat -p`).
pub fn total_bytes_by_node(vmas: &[NumaMapsVma], nr_nodes: usize) -> Vec<u64> {
    range_bytes_by_node(vmas, 0, u64::MAX, nr_nodes)
}

/// The `processor` field (39) of /proc/PID/task/TID/stat: the CPU the task
/// last ran on. The command name may hold spaces and parentheses, so fields
/// are counted after the last `)`.
pub fn parse_stat_processor(text: &str) -> Option<usize> {
    let rest = &text[text.rfind(')')? + 1..];
    // Field 3 (state) is the first after ')'; processor is field 39.
    rest.split_whitespace().nth(39 - 3)?.parse().ok()
}

/// Parsed /proc/PID/task/TID/sched.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcSched {
    /// `key : value` lines with a numeric value.
    pub values: BTreeMap<String, f64>,
    /// `numa_faults node=...` lines.
    pub faults: Vec<NodeFaults>,
    /// `current_node=`, if printed.
    pub current_node: Option<i64>,
    /// `numa_group_id=`, if printed.
    pub numa_group_id: Option<u64>,
}

impl ProcSched {
    /// A value by name, 0 when absent.
    pub fn get(&self, key: &str) -> f64 {
        self.values.get(key).copied().unwrap_or(0.0)
    }

    /// The NUMA balancing part as the Run record holds it, when the kernel
    /// printed one (CONFIG_NUMA_BALANCING).
    pub fn task_numa(&self) -> Option<TaskNuma> {
        if !self.values.contains_key("numa_preferred_nid") {
            return None;
        }
        Some(TaskNuma {
            preferred_nid: self.get("numa_preferred_nid") as i64,
            scan_seq: self.get("mm->numa_scan_seq") as u64,
            scan_period_ms: 0,
            numa_group_id: self.numa_group_id.filter(|&g| g != 0),
            pages_migrated: self.get("numa_pages_migrated") as u64,
            faults: self.faults.clone(),
        })
    }
}

/// Parses /proc/PID/task/TID/sched (kernel/sched/debug.c,
/// `proc_sched_show_task` and `sched_show_numa`).
pub fn parse_proc_sched(text: &str) -> ProcSched {
    let mut p = ProcSched::default();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("numa_faults ") {
            let mut f = NodeFaults::default();
            for tok in rest.split_whitespace() {
                let Some((k, v)) = tok.split_once('=') else {
                    continue;
                };
                let v: u64 = v.trim_end_matches(',').parse().unwrap_or(0);
                match k {
                    "node" => f.node = v as usize,
                    "task_private" => f.task_private = v,
                    "task_shared" => f.task_shared = v,
                    "group_private" => f.group_private = v,
                    "group_shared" => f.group_shared = v,
                    _ => {}
                }
            }
            p.faults.push(f);
        } else if line.starts_with("current_node=") {
            for tok in line.split(',') {
                if let Some((k, v)) = tok.trim().split_once('=') {
                    match k {
                        "current_node" => p.current_node = v.trim().parse().ok(),
                        "numa_group_id" => p.numa_group_id = v.trim().parse().ok(),
                        _ => {}
                    }
                }
            }
        } else if let Some((k, v)) = line.split_once(':') {
            if let Ok(v) = v.trim().parse::<f64>() {
                p.values.insert(k.trim().to_string(), v);
            }
        }
    }
    p
}

/// Parses /proc/PID/task/TID/schedstat: (ns on CPU, ns waiting on a
/// runqueue, timeslices).
pub fn parse_schedstat(text: &str) -> Option<(u64, u64, u64)> {
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    (v.len() >= 3).then(|| (v[0], v[1], v[2]))
}

/// Summarises a `move_pages` query: pages per node, and pages not present
/// (negative status: `-ENOENT`, `-EFAULT` for the zero page, ...).
pub fn summarize_page_status(status: &[i32], nr_nodes: usize) -> (Vec<u64>, u64) {
    let mut by = vec![0u64; nr_nodes];
    let mut absent = 0;
    for &s in status {
        if s >= 0 && (s as usize) < nr_nodes {
            by[s as usize] += 1;
        } else {
            absent += 1;
        }
    }
    (by, absent)
}

/// Reads a file to a string, `None` when it cannot be read.
pub fn read_opt(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok()
}

#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `_IOW('$', 6, char *)` of include/uapi/linux/perf_event.h.
const PERF_EVENT_IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;

/// The tracepoint's fields that hold the thread group id of a task it
/// reports: `sched_move_numa` (`sched_move_task_template`) has `tgid`;
/// `sched_stick_numa` and `sched_swap_numa` (`sched_numa_pair_template`)
/// have `src_tgid` (the task placed) and `dst_tgid` (the task it was to be
/// swapped with, 0 when none). A stick is the placed task's; a swap moves
/// both tasks, so it counts when either is the workload's (once).
pub fn tgid_fields(event: &str) -> &'static [&'static str] {
    match event {
        "sched_move_numa" => &["tgid"],
        "sched_stick_numa" => &["src_tgid"],
        "sched_swap_numa" => &["src_tgid", "dst_tgid"],
        _ => &[],
    }
}

/// The ftrace filter (Documentation/trace/events.rst, "Event filtering")
/// that keeps the hits of `event` that concern the processes `tgids`;
/// `None` for an event without tgid fields. No tgids: a filter that keeps
/// nothing.
pub fn tgid_filter(event: &str, tgids: &[i32]) -> Option<String> {
    let fields = tgid_fields(event);
    if fields.is_empty() {
        return None;
    }
    let terms: Vec<String> = if tgids.is_empty() {
        vec![format!("{} == -1", fields[0])]
    } else {
        fields
            .iter()
            .flat_map(|f| tgids.iter().map(move |t| format!("{f} == {t}")))
            .collect()
    };
    Some(terms.join(" || "))
}

/// Counts of the NUMA scheduler tracepoints, system-wide or of the
/// workload's processes.
pub struct TraceCounters {
    fds: Vec<(usize, libc::c_int)>,
}

impl TraceCounters {
    /// Opens one counting perf event per tracepoint per CPU; with `tgids`,
    /// each event counts only the hits of those processes' tasks
    /// ([`tgid_filter`]). Fails when tracefs has no such event, perf
    /// events cannot be opened, or the kernel refuses the filter.
    pub fn open(tracefs: &Path, cpus: &[usize], tgids: Option<&[i32]>) -> io::Result<Self> {
        let mut t = TraceCounters { fds: Vec::new() };
        for (i, ev) in TRACE_EVENTS.iter().enumerate() {
            let filter = match tgids {
                Some(g) => Some(
                    tgid_filter(ev, g)
                        .and_then(|f| std::ffi::CString::new(f).ok())
                        .ok_or_else(|| {
                            io::Error::new(
                                io::ErrorKind::InvalidInput,
                                format!("no tgid field known for {ev}"),
                            )
                        })?,
                ),
                None => None,
            };
            let idp = tracefs.join(format!("events/sched/{ev}/id"));
            let id: u64 = fs::read_to_string(&idp)?
                .trim()
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad tracepoint id"))?;
            for &cpu in cpus {
                let attr = PerfEventAttr {
                    type_: PERF_TYPE_TRACEPOINT,
                    size: std::mem::size_of::<PerfEventAttr>() as u32,
                    config: id,
                    ..Default::default()
                };
                // SAFETY: attr is a valid perf_event_attr prefix (VER1 size).
                let fd = unsafe {
                    libc::syscall(
                        libc::SYS_perf_event_open,
                        &attr as *const PerfEventAttr,
                        -1 as libc::c_long,
                        cpu as libc::c_long,
                        -1 as libc::c_long,
                        PERF_FLAG_FD_CLOEXEC,
                    )
                };
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                let fd = fd as libc::c_int;
                t.fds.push((i, fd));
                if let Some(f) = &filter {
                    // SAFETY: fd is a perf event of ours; f is a
                    // NUL-terminated string that outlives the call.
                    let r = unsafe { libc::ioctl(fd, PERF_EVENT_IOC_SET_FILTER as _, f.as_ptr()) };
                    if r < 0 {
                        let e = io::Error::last_os_error();
                        return Err(io::Error::new(
                            e.kind(),
                            format!("filter of {ev} ({}): {e}", f.to_string_lossy()),
                        ));
                    }
                }
            }
        }
        Ok(t)
    }

    /// Current counts by tracepoint name.
    pub fn read(&self) -> BTreeMap<String, u64> {
        let mut m: BTreeMap<String, u64> =
            TRACE_EVENTS.iter().map(|e| (e.to_string(), 0)).collect();
        for &(i, fd) in &self.fds {
            let mut v: u64 = 0;
            // SAFETY: reading 8 bytes into a u64.
            let r = unsafe { libc::read(fd, &mut v as *mut u64 as *mut libc::c_void, 8) };
            if r == 8 {
                *m.entry(TRACE_EVENTS[i].to_string()).or_default() += v;
            }
        }
        m
    }
}

impl Drop for TraceCounters {
    fn drop(&mut self) {
        for &(_, fd) in &self.fds {
            // SAFETY: fd was opened by `open` and is closed once.
            unsafe { libc::close(fd) };
        }
    }
}

/// The CPU time (ns, `sum_exec_runtime`: the first field of
/// /proc/PID/schedstat) of every kworker thread, by pid. Kworkers are
/// kernel threads named `kworker/...`; a pid whose files cannot be read
/// (it exited) is left out.
pub fn kworker_cpu_ns() -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("kworker") {
            continue;
        }
        if let Some((ns, _, _)) = std::fs::read_to_string(e.path().join("schedstat"))
            .ok()
            .and_then(|s| parse_schedstat(&s))
        {
            out.insert(pid, ns);
        }
    }
    out
}

/// The kworkers' CPU seconds between two [`kworker_cpu_ns`] readings: a
/// kworker born in between counts whole.
pub fn kworker_cpu_s(before: &BTreeMap<u32, u64>, after: &BTreeMap<u32, u64>) -> f64 {
    after
        .iter()
        .map(|(pid, &ns)| ns.saturating_sub(before.get(pid).copied().unwrap_or(0)))
        .sum::<u64>() as f64
        / 1e9
}

#[cfg(test)]
mod tests {
    #[test]
    fn kworker_time_is_the_growth_of_each_and_a_new_one_whole() {
        let before = BTreeMap::from([(1u32, 100u64), (2, 50)]);
        let after = BTreeMap::from([(1u32, 300u64), (3, 1000)]);
        // pid 2 exited (not counted), pid 3 was born (counted whole).
        assert_eq!(kworker_cpu_s(&before, &after), 1200.0 / 1e9);
        assert_eq!(kworker_cpu_s(&after, &after), 0.0);
    }

    use super::*;
    use numalab_record::counters::{is_recorded_memory_stat, is_recorded_vmstat};

    #[test]
    fn vmstat_keeps_numbers_and_picks_numa_counters() {
        let m =
            parse_vmstat("nr_free_pages 100\nnuma_hint_faults 7\nbogus\nnuma_pages_migrated 3\n");
        assert_eq!(m["numa_hint_faults"], 7);
        assert_eq!(m.len(), 3);
        assert!(is_recorded_vmstat("numa_pte_updates"));
        assert!(is_recorded_vmstat("pgmigrate_success"));
        assert!(!is_recorded_vmstat("nr_free_pages"));
        let a = parse_vmstat("numa_hint_faults 7\nnr_x 10\n");
        let b = parse_vmstat("numa_hint_faults 17\nnr_x 4\nnuma_new 2\n");
        let d = deltas(&a, &b);
        assert_eq!(d["numa_hint_faults"], 10);
        assert_eq!(d["nr_x"], 0);
        assert_eq!(d["numa_new"], 2);
    }

    #[test]
    fn memory_stat_of_a_6_12_kernel() {
        let t = "anon 268435456\nfile 0\npgfault 70000\nnuma_pages_migrated 49165\nnuma_pte_updates 524432\nnuma_hint_faults 1168\npgpromote_success 0\nworkingset_refault_anon 0\n";
        let m = parse_flat_keyed(t);
        assert_eq!(m["numa_pte_updates"], 524432);
        let rec: Vec<_> = m.keys().filter(|k| is_recorded_memory_stat(k)).collect();
        assert_eq!(
            rec,
            vec![
                "numa_hint_faults",
                "numa_pages_migrated",
                "numa_pte_updates",
                "pgfault",
                "pgpromote_success"
            ]
        );
    }

    #[test]
    fn meminfo_in_kb() {
        let m = parse_meminfo(
            "MemTotal:       24000000 kB\nMemAvailable:   23000000 kB\nHugePages_Total:       0\n",
        );
        assert_eq!(m["MemAvailable"], 23_000_000);
        assert_eq!(m["HugePages_Total"], 0);
    }

    #[test]
    fn numa_maps_per_region_and_total() {
        let t = "\
55d0c0000000 default file=/usr/bin/x mapped=10 N0=10 kernelpagesize_kB=4
7f0000000000 default anon=16384 dirty=16384 N0=4096 N2=12288 kernelpagesize_kB=4
7f0004000000 bind:1 anon=16 dirty=16 N1=16 kernelpagesize_kB=4
7f0004200000 interleave:0-3 anon=64 dirty=64 N0=16 N1=16 N2=16 N3=16 kernelpagesize_kB=4
7f0010000000 default huge anon=2 dirty=2 N3=2 kernelpagesize_kB=2048
7f0020000000 default
";
        let v = parse_numa_maps(t);
        assert_eq!(v.len(), 6);
        assert_eq!(v[2].policy, "bind:1");
        assert_eq!(v[4].page_kb, 2048);
        let r = range_bytes_by_node(&v, 0x7f00_0000_0000, 64 << 20, 4);
        assert_eq!(r, vec![4096 * 4096, 0, 12288 * 4096, 0]);
        let r = range_bytes_by_node(&v, 0x7f00_0400_0000, 4 << 20, 4);
        assert_eq!(r, vec![16 * 4096, 32 * 4096, 16 * 4096, 16 * 4096]);
        let tot = total_bytes_by_node(&v, 4);
        assert_eq!(tot[3], 16 * 4096 + 2 * 2048 * 1024);
        assert_eq!(tot[0], (10 + 4096 + 16) * 4096);
    }

    #[test]
    fn stat_processor_survives_odd_comm() {
        let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        fields[39 - 3] = "5".to_string();
        let t = format!("1234 (we ird) name)) {}", fields.join(" "));
        assert_eq!(parse_stat_processor(&t), Some(5));
        assert_eq!(parse_stat_processor("garbage"), None);
    }

    #[test]
    fn proc_sched_numa_part() {
        let t = "\
worker.1 (811, #threads: 5)
-------------------------------------------------------------------
se.nr_migrations                             :                    3
nr_switches                                  :                  120
mm->numa_scan_seq                            :                    7
numa_pages_migrated                          :                16384
numa_preferred_nid                           :                    1
total_numa_faults                            :                   40
current_node=1, numa_group_id=0
numa_faults node=0 task_private=2 task_shared=0 group_private=0 group_shared=0
numa_faults node=1 task_private=38 task_shared=1 group_private=0 group_shared=0
";
        let p = parse_proc_sched(t);
        assert_eq!(p.get("se.nr_migrations"), 3.0);
        assert_eq!(p.current_node, Some(1));
        let n = p.task_numa().unwrap();
        assert_eq!(n.preferred_nid, 1);
        assert_eq!(n.scan_seq, 7);
        assert_eq!(n.pages_migrated, 16384);
        assert_eq!(n.numa_group_id, None);
        assert_eq!(n.faults.len(), 2);
        assert_eq!(n.faults[1].task_private, 38);
        assert_eq!(n.faults[1].task_shared, 1);
        assert!(parse_proc_sched("se.nr_migrations : 1\n")
            .task_numa()
            .is_none());
    }

    #[test]
    fn tracepoint_filters_on_the_workload_tgids() {
        assert_eq!(
            tgid_filter("sched_move_numa", &[812]).unwrap(),
            "tgid == 812"
        );
        assert_eq!(
            tgid_filter("sched_stick_numa", &[812, 900]).unwrap(),
            "src_tgid == 812 || src_tgid == 900"
        );
        assert_eq!(
            tgid_filter("sched_swap_numa", &[812, 900]).unwrap(),
            "src_tgid == 812 || src_tgid == 900 || dst_tgid == 812 || dst_tgid == 900"
        );
        assert_eq!(tgid_filter("sched_move_numa", &[]).unwrap(), "tgid == -1");
        assert_eq!(tgid_filter("sched_switch", &[1]), None);
        // Every counted tracepoint has a filter.
        for ev in TRACE_EVENTS {
            assert!(tgid_filter(ev, &[1]).is_some(), "{ev}");
        }
    }

    #[test]
    fn schedstat_and_move_pages_status() {
        assert_eq!(parse_schedstat("100 200 3\n"), Some((100, 200, 3)));
        assert_eq!(parse_schedstat("1 2"), None);
        let (by, absent) = summarize_page_status(&[0, 1, 1, -2, 3, -14, 9], 4);
        assert_eq!(by, vec![1, 2, 0, 1]);
        assert_eq!(absent, 3);
    }
}
