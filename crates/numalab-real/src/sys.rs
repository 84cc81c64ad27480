//! Thin wrappers over the Linux system calls a real run makes.
//!
//! Memory policy (`set_mempolicy`, `mbind`, page placement queries through
//! `move_pages` with `nodes = NULL`), CPU affinity (`sched_setaffinity`,
//! `sched_getcpu`), per-thread CPU time (`clock_gettime` on the thread clock,
//! `getrusage(RUSAGE_THREAD)`), anonymous mappings with THP advice, and
//! signal dispositions. Each wrapper returns `io::Error` with the kernel's
//! errno; none of them panics.
//!
//! Left out: `migrate_pages`, `set_mempolicy_home_node`, weighted
//! interleave weights and `MPOL_F_STATIC_NODES`/`MPOL_F_RELATIVE_NODES`,
//! which no workload in the model asks for yet.

use numalab_topology::CpuSet;
use numalab_workload::model::{PageSize, PolicyMode, PolicySpec};
use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// `MPOL_DEFAULT` from `<linux/mempolicy.h>`.
pub const MPOL_DEFAULT: i32 = 0;
/// `MPOL_PREFERRED`.
pub const MPOL_PREFERRED: i32 = 1;
/// `MPOL_BIND`.
pub const MPOL_BIND: i32 = 2;
/// `MPOL_INTERLEAVE`.
pub const MPOL_INTERLEAVE: i32 = 3;
/// `MPOL_LOCAL`.
pub const MPOL_LOCAL: i32 = 4;
/// `MPOL_PREFERRED_MANY` (Linux 5.15+).
pub const MPOL_PREFERRED_MANY: i32 = 5;
/// `MPOL_F_NUMA_BALANCING` mode flag (Linux 5.12+, `MPOL_BIND` only on
/// released kernels).
pub const MPOL_F_NUMA_BALANCING: i32 = 1 << 13;
/// `MPOL_MF_STRICT` flag of `mbind`.
pub const MPOL_MF_STRICT: u32 = 1;
/// `MPOL_MF_MOVE` flag of `mbind`.
pub const MPOL_MF_MOVE: u32 = 1 << 1;

/// Size of a base page on x86-64.
pub const PAGE_SIZE: usize = 4096;
/// Size of a PMD-mapped transparent huge page on x86-64.
pub const HPAGE_SIZE: usize = 2 << 20;

/// A node mask laid out as the kernel reads it, with the `maxnode` to pass.
///
/// The kernel reads `maxnode - 1` bits (the long-standing off-by-one of
/// `get_nodes()`), so a mask of one 64-bit word is passed with `maxnode = 65`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelNodemask {
    words: Vec<u64>,
}

impl KernelNodemask {
    /// A mask holding `nodes`.
    pub fn from_nodes(nodes: &[usize]) -> Self {
        let mut words = Vec::new();
        for &n in nodes {
            let w = n / 64;
            if words.len() <= w {
                words.resize(w + 1, 0);
            }
            words[w] |= 1u64 << (n % 64);
        }
        KernelNodemask { words }
    }

    /// True when no node is set.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The mask words (`unsigned long` array).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The `maxnode` argument: bits in the mask plus one.
    pub fn maxnode(&self) -> u64 {
        if self.words.is_empty() {
            0
        } else {
            self.words.len() as u64 * 64 + 1
        }
    }

    fn ptr(&self) -> *const u64 {
        if self.words.is_empty() {
            std::ptr::null()
        } else {
            self.words.as_ptr()
        }
    }
}

/// Translates a policy request into the `(mode, nodemask)` pair of the
/// syscalls; `None` is `MPOL_DEFAULT`. Refuses node lists the mode cannot
/// take (the kernel would answer `EINVAL`).
pub fn policy_args(spec: Option<&PolicySpec>) -> Result<(i32, KernelNodemask), String> {
    let Some(spec) = spec else {
        return Ok((MPOL_DEFAULT, KernelNodemask::from_nodes(&[])));
    };
    let mode = match spec.mode {
        PolicyMode::Default => MPOL_DEFAULT,
        PolicyMode::Bind => MPOL_BIND,
        PolicyMode::Preferred => MPOL_PREFERRED,
        PolicyMode::PreferredMany => MPOL_PREFERRED_MANY,
        PolicyMode::Interleave => MPOL_INTERLEAVE,
        PolicyMode::Local => MPOL_LOCAL,
    };
    let needs_nodes = !matches!(spec.mode, PolicyMode::Default | PolicyMode::Local);
    if needs_nodes && spec.nodes.is_empty() {
        return Err(format!("policy {:?} needs at least one node", spec.mode));
    }
    if !needs_nodes && !spec.nodes.is_empty() {
        return Err(format!("policy {:?} takes no nodes", spec.mode));
    }
    if spec.mode == PolicyMode::Preferred && spec.nodes.len() != 1 {
        return Err("policy Preferred takes exactly one node".to_string());
    }
    let mut flags = 0;
    if spec.numa_balancing {
        flags |= MPOL_F_NUMA_BALANCING;
    }
    Ok((mode | flags, KernelNodemask::from_nodes(&spec.nodes)))
}

/// Human name of a policy for messages, e.g. `bind:0-1`.
pub fn policy_name(spec: Option<&PolicySpec>) -> String {
    match spec {
        None => "default".to_string(),
        Some(s) => {
            let nodes: CpuSet = s.nodes.iter().copied().collect();
            let mut n = format!("{:?}", s.mode).to_lowercase();
            if !s.nodes.is_empty() {
                n.push(':');
                n.push_str(&nodes.to_string());
            }
            if s.numa_balancing {
                n.push_str("|MPOL_F_NUMA_BALANCING");
            }
            n
        }
    }
}

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `set_mempolicy(2)` for the calling thread; `None` is `MPOL_DEFAULT`.
pub fn set_mempolicy(spec: Option<&PolicySpec>) -> io::Result<()> {
    let (mode, mask) =
        policy_args(spec).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: the mask outlives the call and maxnode matches its length.
    let r = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode as libc::c_long,
            mask.ptr(),
            mask.maxnode(),
        )
    };
    check(r).map(|_| ())
}

/// `mbind(2)` on `[addr, addr + len)`.
///
/// # Safety
/// `addr..addr + len` must be a mapping this process owns.
pub unsafe fn mbind(
    addr: *mut u8,
    len: usize,
    spec: Option<&PolicySpec>,
    flags: u32,
) -> io::Result<()> {
    let (mode, mask) =
        policy_args(spec).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let r = libc::syscall(
        libc::SYS_mbind,
        addr,
        len,
        mode as libc::c_long,
        mask.ptr(),
        mask.maxnode(),
        flags as libc::c_long,
    );
    check(r).map(|_| ())
}

/// Queries the node of each page with `move_pages(pid, n, pages, NULL,
/// status, 0)`: each status is a node id, or a negative errno (`-ENOENT`
/// for a page not present, `-EFAULT` for the zero page or no mapping).
/// `pid` 0 is the calling process.
pub fn query_page_nodes(pid: i32, pages: &[usize]) -> io::Result<Vec<i32>> {
    let mut status = vec![0i32; pages.len()];
    if pages.is_empty() {
        return Ok(status);
    }
    let ptrs: Vec<*mut libc::c_void> = pages.iter().map(|&a| a as *mut libc::c_void).collect();
    // SAFETY: arrays have `pages.len()` entries; nodes = NULL only queries.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            pages.len() as libc::c_ulong,
            ptrs.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_long,
        )
    };
    check(r).map(|_| status)
}

/// Pins thread `tid` (0 = the caller) to `cpus` with `sched_setaffinity(2)`.
pub fn set_affinity(tid: i32, cpus: &CpuSet) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data, zero is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = std::mem::size_of::<libc::cpu_set_t>() * 8;
    for c in cpus.iter() {
        if c >= max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond the affinity mask size {max}"),
            ));
        }
        // SAFETY: c is below the set's size.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    check(r as libc::c_long).map(|_| ())
}

/// CPUs the calling thread may run on (`sched_getaffinity(2)`).
pub fn get_affinity() -> io::Result<CpuSet> {
    // SAFETY: as above.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    check(r as libc::c_long)?;
    let max = std::mem::size_of::<libc::cpu_set_t>() * 8;
    // SAFETY: c is below the set's size.
    Ok((0..max)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// CPU the calling thread runs on now (`sched_getcpu(3)`).
pub fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time of the calling thread in ns (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// `CLOCK_MONOTONIC` in ns: the same clock in every process, so parent and
/// children can share a time origin.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// User and system CPU seconds of the calling thread
/// (`getrusage(RUSAGE_THREAD)`).
pub fn thread_rusage() -> (f64, f64) {
    // SAFETY: rusage is plain data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Thread id of the caller (`gettid(2)`).
pub fn gettid() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Effective user id.
pub fn euid() -> u32 {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() }
}

/// Kernel release (`uname -r`).
pub fn uname_release() -> String {
    // SAFETY: utsname is plain data.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".to_string();
    }
    let bytes: Vec<u8> = u
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An anonymous read-write mapping between two `PROT_NONE` guards, so it
/// is one VMA of its own (never merged with a neighbour) and shows up as
/// one line in /proc/PID/numa_maps. The start is 2 MiB aligned.
pub struct Mapping {
    reserve: *mut u8,
    reserve_len: usize,
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; threads of a workload access it
// through raw pointers only, as the C programs they stand for do.
unsafe impl Send for Mapping {}
// SAFETY: see above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes (rounded up to 4 KiB) with THP advice for `page`.
    pub fn new(len: u64, page: PageSize) -> io::Result<Mapping> {
        Mapping::map(len, page, false)
    }

    /// As [`Mapping::new`], but `MAP_SHARED | MAP_ANONYMOUS` (shmem): a
    /// process forked after this call maps the same pages. THP advice
    /// takes effect only when `shmem_enabled` allows it (`advise`).
    pub fn new_shared(len: u64, page: PageSize) -> io::Result<Mapping> {
        Mapping::map(len, page, true)
    }

    fn map(len: u64, page: PageSize, shared: bool) -> io::Result<Mapping> {
        let len = (len as usize).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let reserve_len = len + 2 * HPAGE_SIZE;
        // SAFETY: fresh anonymous mapping, no aliasing.
        let reserve = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                reserve_len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if reserve == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let reserve = reserve as *mut u8;
        let aligned = (reserve as usize + HPAGE_SIZE - 1) & !(HPAGE_SIZE - 1);
        let aligned = if aligned == reserve as usize {
            aligned + HPAGE_SIZE
        } else {
            aligned
        };
        let base = aligned as *mut u8;
        let m = Mapping {
            reserve,
            reserve_len,
            base,
            len,
        };
        // SAFETY: [base, base+len) lies inside the reservation; a shared
        // mapping replaces that part of it (MAP_FIXED).
        let r = unsafe {
            if shared {
                let p = libc::mmap(
                    base as *mut libc::c_void,
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                );
                if p == libc::MAP_FAILED {
                    -1
                } else {
                    0
                }
            } else {
                libc::mprotect(
                    base as *mut libc::c_void,
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            }
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        let advice = match page {
            PageSize::Base4K => libc::MADV_NOHUGEPAGE,
            PageSize::Thp2M => libc::MADV_HUGEPAGE,
        };
        // SAFETY: as above. Advice failing (THP compiled out) is harmless.
        unsafe { libc::madvise(base as *mut libc::c_void, len, advice) };
        Ok(m)
    }

    /// First byte.
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length mapping.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the reservation was mapped by `new` and is unmapped once.
        unsafe { libc::munmap(self.reserve as *mut libc::c_void, self.reserve_len) };
    }
}

static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn note_signal(sig: libc::c_int) {
    LAST_SIGNAL.store(sig, Ordering::SeqCst);
}

/// Catches SIGINT, SIGTERM and SIGHUP while alive, so a run can undo its
/// changes before it exits; restores the previous dispositions on drop.
pub struct SignalGuard {
    saved: Vec<(libc::c_int, libc::sigaction)>,
}

/// Signals a run catches.
pub const CAUGHT_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

impl SignalGuard {
    /// Installs the handlers.
    pub fn install() -> io::Result<SignalGuard> {
        LAST_SIGNAL.store(0, Ordering::SeqCst);
        let mut g = SignalGuard { saved: Vec::new() };
        for sig in CAUGHT_SIGNALS {
            // SAFETY: sigaction structs are plain data; the handler only
            // stores to an atomic, which is async-signal-safe.
            unsafe {
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = note_signal as extern "C" fn(libc::c_int) as usize;
                new.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &new, &mut old) != 0 {
                    return Err(io::Error::last_os_error());
                }
                g.saved.push((sig, old));
            }
        }
        Ok(g)
    }

    /// The signal that arrived, if any.
    pub fn caught(&self) -> Option<i32> {
        match LAST_SIGNAL.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, old) in self.saved.drain(..) {
            // SAFETY: restores the disposition saved by `install`.
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
    }
}

/// Resets the caught signals to their default action (in a forked child,
/// so Ctrl-C still kills workload processes).
pub fn default_signals() {
    for sig in CAUGHT_SIGNALS {
        // SAFETY: SIG_DFL is always valid.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

/// Name of a signal number for messages.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(mode: PolicyMode, nodes: &[usize], nb: bool) -> PolicySpec {
        PolicySpec {
            mode,
            nodes: nodes.to_vec(),
            numa_balancing: nb,
        }
    }

    #[test]
    fn maxnode_is_bits_plus_one() {
        let m = KernelNodemask::from_nodes(&[1]);
        assert_eq!(m.words(), &[2]);
        assert_eq!(m.maxnode(), 65);
        let m = KernelNodemask::from_nodes(&[0, 70]);
        assert_eq!(m.words(), &[1, 1 << 6]);
        assert_eq!(m.maxnode(), 129);
        assert_eq!(KernelNodemask::from_nodes(&[]).maxnode(), 0);
    }

    #[test]
    fn policy_args_follow_the_uapi() {
        assert_eq!(policy_args(None).unwrap().0, MPOL_DEFAULT);
        let (m, mask) = policy_args(Some(&spec(PolicyMode::Bind, &[0, 2], true))).unwrap();
        assert_eq!(m, MPOL_BIND | MPOL_F_NUMA_BALANCING);
        assert_eq!(mask.words(), &[0b101]);
        let (m, _) = policy_args(Some(&spec(PolicyMode::Interleave, &[0, 1], false))).unwrap();
        assert_eq!(m, 3);
        assert!(policy_args(Some(&spec(PolicyMode::Bind, &[], false))).is_err());
        assert!(policy_args(Some(&spec(PolicyMode::Preferred, &[0, 1], false))).is_err());
        assert!(policy_args(Some(&spec(PolicyMode::Local, &[1], false))).is_err());
        assert_eq!(
            policy_name(Some(&spec(PolicyMode::Interleave, &[0, 1, 2], false))),
            "interleave:0-2"
        );
    }

    #[test]
    fn mapping_is_aligned_and_writable() {
        let m = Mapping::new(3 * 4096 + 1, PageSize::Base4K).unwrap();
        assert_eq!(m.base() as usize % HPAGE_SIZE, 0);
        assert_eq!(m.len(), 4 * 4096);
        // SAFETY: inside the mapping.
        unsafe { std::ptr::write_bytes(m.base(), 7, m.len()) };
        let st = query_page_nodes(0, &[m.base() as usize]).unwrap();
        assert!(st[0] >= 0, "page should be present: {st:?}");
    }

    #[test]
    fn affinity_round_trips() {
        let all = get_affinity().unwrap();
        assert!(!all.is_empty());
        assert!(current_cpu().is_some());
        assert!(thread_cpu_ns() > 0);
    }
}
