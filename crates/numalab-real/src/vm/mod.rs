//! `numalab vm run`: a QEMU guest shaped like a machine spec, running
//! `numalab real run` inside, under software emulation.
//!
//! [`vm_run`] checks the machine against the guest limits
//! ([`qemu::check_vm_machine`]), finds QEMU and a static busybox, fetches
//! (or reuses) the Debian kernel ([`kernel::ensure_kernel`]), builds the
//! initramfs ([`initramfs::build`]) with the given numalab binary (a copy
//! stripped of debug info when `strip` is installed) and its arguments,
//! and boots it with the host directory `share/` mounted in the
//! guest as `/share` (9p). The guest's record is read from
//! [`GUEST_RESULT`] (or from the serial console when 9p fails). A guest
//! that does not power off within the timeout is killed. SIGINT/SIGTERM
//! kill QEMU and remove the work directory.
//!
//! The record gets `settings` entries `vm.kernel_package`, `vm.qemu`,
//! `vm.accel`, `vm.machine`, `lab` entries `vm.boot_s` and `vm.qemu_s`, and
//! its `machine` becomes the requested machine with the topology the guest
//! saw under `vm_guest`.
//!
//! Setup, once per host (Debian): `apt-get update && apt-get install -y
//! --no-install-recommends qemu-system-x86 busybox-static xz-utils`
//! (`vm/install-deps.sh`). Left out: KVM (not usable where this was built;
//! TCG only), other architectures, and guests larger than the limits.

pub mod build;
pub mod flat;
pub mod initramfs;
pub mod kernel;
pub mod patch;
pub mod qemu;
pub mod series;

use crate::sys::SignalGuard;
use crate::RealError;
use numalab_record::lab;
use numalab_record::RunRecord;
use numalab_topology::Machine;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use kernel::KernelInfo;

/// The share as the guest sees it.
pub const GUEST_SHARE: &str = "/share";
/// Where the guest's `numalab real run --json` writes the record.
pub const GUEST_RESULT: &str = "/share/run.json";

/// Where the guest's `numalab real run --trace` writes the kernel's ftrace
/// text (read back by [`vm_run`] into [`VmOutcome::trace`]).
pub const GUEST_TRACE: &str = "/share/trace.txt";

/// Options of `numalab vm run`.
#[derive(Clone, Debug, PartialEq)]
pub struct VmOptions {
    /// Kernel: `None` for the newest 6.12, else a series (`6.12`), a
    /// version (`6.12.117`) or a release (`6.12.117+deb12-amd64`).
    pub kernel: Option<String>,
    /// Cache directory (default [`kernel::default_cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// The numalab binary to run in the guest (normally
    /// `std::env::current_exe()`); static or dynamic (its libraries are
    /// copied in).
    pub guest_binary: PathBuf,
    /// Its arguments, e.g. from [`guest_real_run_args`].
    pub guest_args: Vec<String>,
    /// Files to put in the share: `(host path, name in /share)`.
    pub share_files: Vec<(PathBuf, String)>,
    /// Kill the guest after this long (default 600 s).
    pub timeout: Duration,
    /// Echo the serial console to stderr.
    pub verbose: bool,
    /// Keep the work directory (initramfs, share, serial log) and say where.
    pub keep_workdir: bool,
    /// busybox to put in the guest (default `/bin/busybox`; must be static).
    pub busybox: Option<PathBuf>,
    /// QEMU binary (default `qemu-system-x86_64` from PATH).
    pub qemu: Option<PathBuf>,
    /// A built bzImage (`numalab vm kernel build`) to boot instead of the
    /// Debian package kernel; it has everything built in (no modules).
    pub kernel_image: Option<PathBuf>,
}

impl VmOptions {
    /// Options running `guest_binary guest_args` with the defaults.
    pub fn new(guest_binary: PathBuf, guest_args: Vec<String>) -> VmOptions {
        VmOptions {
            kernel: None,
            cache_dir: None,
            guest_binary,
            guest_args,
            share_files: Vec::new(),
            timeout: Duration::from_secs(600),
            verbose: false,
            keep_workdir: false,
            busybox: None,
            qemu: None,
            kernel_image: None,
        }
    }
}

/// What a guest run produced.
#[derive(Clone, Debug)]
pub struct VmOutcome {
    /// The guest's Run record, annotated (see the module doc).
    pub record: RunRecord,
    /// The kernel that was booted.
    pub kernel: KernelInfo,
    /// Host seconds from QEMU start to the guest's /init.
    pub boot_s: Option<f64>,
    /// Host seconds QEMU ran.
    pub qemu_s: f64,
    /// Host seconds of the whole call (kernel fetch included).
    pub total_s: f64,
    /// Exit code of numalab in the guest.
    pub guest_exit: Option<i32>,
    /// The serial console output.
    pub serial: String,
    /// Console lines that show a kernel problem ([`console_problems`]).
    pub problems: Vec<String>,
    /// The guest's ftrace text, when it wrote [`GUEST_TRACE`].
    pub trace: Option<String>,
}

/// Markers of a kernel problem on the console.
pub const PROBLEM_MARKERS: [&str; 5] = ["BUG:", "Oops", "WARNING:", "Call Trace", "Kernel panic"];

/// The console lines carrying a [`PROBLEM_MARKERS`] entry.
pub fn console_problems(serial: &str) -> Vec<String> {
    serial
        .lines()
        .filter(|l| PROBLEM_MARKERS.iter().any(|m| l.contains(m)))
        .map(|l| l.trim().to_string())
        .collect()
}

/// Arguments for `numalab real run` in the guest, following the CLI of
/// issue "real runs": `real run --workload W --json /share/run.json
/// [--allow-sysctl] [--set K=V]... --seed S --scale F --interval SECS`.
pub fn guest_real_run_args(
    workload: &str,
    sets: &[(String, String)],
    seed: u64,
    scale: f64,
    interval: Duration,
) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "real".into(),
        "run".into(),
        "--workload".into(),
        workload.into(),
        "--json".into(),
        GUEST_RESULT.into(),
        "--seed".into(),
        seed.to_string(),
        "--scale".into(),
        scale.to_string(),
        "--interval".into(),
        interval.as_secs_f64().to_string(),
    ];
    if !sets.is_empty() {
        // The guest is numalab's own throw-away machine.
        a.push("--allow-sysctl".into());
        for (k, v) in sets {
            a.push("--set".into());
            a.push(format!("{k}={v}"));
        }
    }
    a
}

fn which(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(prog))
            .find(|p| p.is_file())
    })
}

/// Text between `NUMALAB-JSON-BEGIN <file>` and `NUMALAB-JSON-END` on the
/// serial console, for a result file name ending in `name`.
pub fn json_from_serial(serial: &str, name: &str) -> Option<String> {
    let mut out = None;
    let mut cur: Option<String> = None;
    for line in serial.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(f) = line.strip_prefix("NUMALAB-JSON-BEGIN ") {
            cur = f.ends_with(name).then(String::new);
        } else if line == "NUMALAB-JSON-END" {
            if let Some(c) = cur.take() {
                out = Some(c);
            }
        } else if let Some(c) = cur.as_mut() {
            c.push_str(line);
            c.push('\n');
        }
    }
    out
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The [`KernelInfo`] of a built bzImage: its `build.txt` (beside it)
/// names the release and the cache key.
pub fn built_kernel_info(img: &Path) -> Result<KernelInfo, RealError> {
    if !img.is_file() {
        return Err(RealError::Refused(format!(
            "kernel image {} not found (build one with `numalab vm kernel build`)",
            img.display()
        )));
    }
    let report = img
        .parent()
        .map(|d| d.join("build.txt"))
        .and_then(|p| fs::read_to_string(p).ok())
        .unwrap_or_default();
    let field = |k: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .map(str::to_string)
    };
    Ok(KernelInfo {
        release: field("release: ").unwrap_or_else(|| "custom".into()),
        package: field("source: ").unwrap_or_else(|| "custom-bzImage".into()),
        package_version: field("key: ").unwrap_or_else(|| img.display().to_string()),
        vmlinuz: img.to_path_buf(),
        modules: Vec::new(),
        fetched: false,
        note: None,
    })
}

/// Boots a guest shaped like `machine` and returns the record of the run
/// inside; see the module documentation.
pub fn vm_run(machine: &Machine, opts: &VmOptions) -> Result<VmOutcome, RealError> {
    let t_start = Instant::now();
    // Refusals first.
    qemu::check_vm_machine(machine).map_err(RealError::Refused)?;
    let qemu_bin = match &opts.qemu {
        Some(q) => q.clone(),
        None => which("qemu-system-x86_64").ok_or_else(|| {
            RealError::Refused(
                "qemu-system-x86_64 not found: apt-get install -y --no-install-recommends qemu-system-x86 busybox-static xz-utils (see vm/install-deps.sh)"
                    .into(),
            )
        })?,
    };
    let busybox = opts
        .busybox
        .clone()
        .unwrap_or_else(|| PathBuf::from("/bin/busybox"));
    if !busybox.is_file() {
        return Err(RealError::Refused(format!(
            "{} not found: apt-get install -y busybox-static",
            busybox.display()
        )));
    }
    if !opts.guest_binary.is_file() {
        return Err(RealError::Refused(format!(
            "guest binary {} not found",
            opts.guest_binary.display()
        )));
    }
    for (src, name) in &opts.share_files {
        if !src.is_file() || name.contains('/') || name.is_empty() {
            return Err(RealError::Refused(format!(
                "share file {} -> {name}: not a file, or a bad name",
                src.display()
            )));
        }
    }
    if opts.timeout.is_zero() {
        return Err(RealError::Refused("timeout must be > 0".into()));
    }
    let cache = opts
        .cache_dir
        .clone()
        .unwrap_or_else(kernel::default_cache_dir);
    let kern = match &opts.kernel_image {
        Some(img) => built_kernel_info(img)?,
        None => kernel::ensure_kernel(&cache, opts.kernel.as_deref(), opts.verbose)
            .map_err(RealError::Failed)?,
    };
    // A guest never boots while a kernel builds (each uses both cores).
    let _lock = build::KernelLock::take(&cache, "guest").map_err(RealError::Failed)?;
    if let Some(n) = &kern.note {
        eprintln!("numalab vm: note: {n}");
    }
    // Work directory.
    let work = std::env::temp_dir().join(format!(
        "numalab-vm-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let share = work.join("share");
    fs::create_dir_all(&share)
        .map_err(|e| RealError::Failed(format!("{}: {e}", share.display())))?;
    let mut result = boot(
        machine, opts, &qemu_bin, &busybox, &kern, &work, &share, t_start,
    );
    // A guest that produced no record for a reason outside the workload
    // and the kernel (QEMU stopped or the guest hung with no kernel
    // problem on its console, or its kernel died before /init) boots
    // once more; one whose numalab exited with an error, or whose kernel
    // printed a BUG/Oops/WARNING/panic after /init, does not: the first
    // would fail the same way, the second is a finding. Debian's 6.12 has
    // been seen to oops in early boot under TCG on a loaded host
    // (enqueue_timer, "Fatal exception in interrupt") and then boot fine,
    // and a CI run of the patched kernel's pinned-4k failed once where
    // the stock kernel and the patched kernel's other two boots ran (the
    // log kept only "failed"). A kernel that cannot run the workload
    // fails twice; the first failure is printed in full either way, and
    // the record counts the boots (`vm.boots`).
    let mut boots = 1.0;
    if let Err(RealError::Failed(e)) = &result {
        if is_host_flake(e) {
            eprintln!("numalab vm: the guest produced no record ({}); booting it once more. The first boot:\n{e}", e.split(';').next().unwrap_or(""));
            boots = 2.0;
            result = boot(
                machine, opts, &qemu_bin, &busybox, &kern, &work, &share, t_start,
            );
        }
    }
    if let Ok(o) = &mut result {
        o.record.lab.set(lab::VM_BOOTS, boots);
    }
    if opts.keep_workdir {
        eprintln!("numalab vm: work directory kept: {}", work.display());
    } else {
        let _ = fs::remove_dir_all(&work);
    }
    result
}

/// How a boot that died before the guest's /init ran starts its error.
const NEVER_REACHED_INIT: &str = "the guest never reached /init";
/// How a boot whose kernel or QEMU stopped after /init, with no exit
/// status from the guest's numalab, starts its error.
const STOPPED_EARLY: &str = "the guest stopped before numalab finished";
/// How a guest killed at the timeout starts its error.
const TIMED_OUT: &str = "the guest did not finish within";

/// Why a guest that ran its /init left no record: `why` as it is when its
/// console shows no kernel problem; else the problems first, so that the
/// failure is a finding about the kernel and is not booted again.
fn stopped_why(serial: &str, why: &str) -> String {
    let problems = console_problems(serial);
    if problems.is_empty() {
        return why.to_string();
    }
    format!(
        "the guest kernel printed {} problem line(s) ({}), and {why}",
        problems.len(),
        problems.join(" | ")
    )
}

/// Whether a failed boot says nothing about the workload or the kernel:
/// the guest never ran the workload to its end (QEMU stopped, the guest
/// hung, or its kernel died before /init, as Debian's 6.12 has under
/// TCG) and, after /init, its console shows no kernel problem; as
/// opposed to numalab in the guest exiting with an error of its own, or
/// a kernel that oopsed or panicked mid-run (a finding, not a flake).
fn is_host_flake(e: &str) -> bool {
    [NEVER_REACHED_INIT, STOPPED_EARLY, TIMED_OUT]
        .iter()
        .any(|p| e.starts_with(p))
}

#[allow(clippy::too_many_arguments)]
fn boot(
    machine: &Machine,
    opts: &VmOptions,
    qemu_bin: &Path,
    busybox: &Path,
    kern: &KernelInfo,
    work: &Path,
    share: &Path,
    t_start: Instant,
) -> Result<VmOutcome, RealError> {
    let failed = |e: String| RealError::Failed(e);
    for (src, name) in &opts.share_files {
        fs::copy(src, share.join(name))
            .map_err(|e| failed(format!("copy {}: {e}", src.display())))?;
    }
    // Debug info can be 20x the code: strip a copy when `strip` is there.
    let stripped = work.join("numalab");
    let guest_binary = match which("strip") {
        Some(strip)
            if Command::new(&strip)
                .arg("--strip-debug")
                .arg("-o")
                .arg(&stripped)
                .arg(&opts.guest_binary)
                .status()
                .is_ok_and(|s| s.success()) =>
        {
            stripped
        }
        _ => opts.guest_binary.clone(),
    };
    let initrd = work.join("initramfs.cpio");
    let cpio = initramfs::build(busybox, &guest_binary, &opts.guest_args, &kern.modules)
        .map_err(failed)?;
    fs::write(&initrd, cpio).map_err(|e| failed(format!("{}: {e}", initrd.display())))?;
    // loglevel=5: KERN_WARNING lines (`WARNING:` of WARN()) reach the
    // console, so [`console_problems`] sees them.
    let append = "console=ttyS0 loglevel=5 panic=-1 rdinit=/init";
    let args = qemu::qemu_args(machine, &kern.vmlinuz, &initrd, Some(share), append)
        .map_err(RealError::Refused)?;
    let qemu_version = Command::new(qemu_bin)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_default();
    if opts.verbose {
        eprintln!(
            "numalab vm: booting {} ({} vCPUs, {} nodes) on {} under TCG",
            machine.name,
            machine.nr_cpus(),
            machine.nr_nodes(),
            kern.release
        );
    }
    let signals = SignalGuard::install().map_err(|e| failed(format!("sigaction: {e}")))?;
    let mut cmd = Command::new(qemu_bin);
    cmd.args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; QEMU dies with us.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            Ok(())
        });
    }
    let q_start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| failed(format!("{}: {e}", qemu_bin.display())))?;
    let serial = Arc::new(Mutex::new(String::new()));
    let boot_at: Arc<Mutex<Option<f64>>> = Arc::new(Mutex::new(None));
    let out = child.stdout.take();
    let reader = {
        let serial = Arc::clone(&serial);
        let boot_at = Arc::clone(&boot_at);
        let verbose = opts.verbose;
        std::thread::spawn(move || {
            let Some(out) = out else { return };
            for line in BufReader::new(out).split(b'\n').map_while(Result::ok) {
                let line = String::from_utf8_lossy(&line)
                    .trim_end_matches('\r')
                    .to_string();
                if line.starts_with("NUMALAB-INIT") {
                    if let Ok(mut b) = boot_at.lock() {
                        b.get_or_insert(q_start.elapsed().as_secs_f64());
                    }
                }
                if verbose {
                    eprintln!("[{:6.1}s] {line}", q_start.elapsed().as_secs_f64());
                }
                if let Ok(mut s) = serial.lock() {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        })
    };
    let err = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut e) = err {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let deadline = q_start + opts.timeout;
    let status = loop {
        if let Some(sig) = signals.caught() {
            let _ = child.kill();
            let _ = child.wait();
            break Err(RealError::Interrupted(sig));
        }
        match child.try_wait() {
            Ok(Some(st)) => break Ok(st),
            Ok(None) => {}
            Err(e) => break Err(failed(format!("waiting for QEMU: {e}"))),
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let s = serial.lock().map(|s| s.clone()).unwrap_or_default();
            let why = format!("{TIMED_OUT} {} s and was killed", opts.timeout.as_secs());
            break Err(failed(format!(
                "{}; last console lines:\n{}",
                stopped_why(&s, &why),
                tail(&s, 15)
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let qemu_s = q_start.elapsed().as_secs_f64();
    let _ = reader.join();
    let qemu_err = err_reader.join().unwrap_or_default();
    drop(signals);
    let status = status?;
    let serial = serial.lock().map(|s| s.clone()).unwrap_or_default();
    if opts.keep_workdir {
        // What --keep-workdir promises beside the initramfs and the share.
        let _ = fs::write(work.join("console.log"), &serial);
    }
    let boot_s = boot_at.lock().ok().and_then(|b| *b);
    let guest_exit = serial
        .lines()
        .find_map(|l| l.strip_prefix("NUMALAB-EXIT rc="))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|r| r.parse::<i32>().ok());
    let result_name = Path::new(GUEST_RESULT)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = fs::read_to_string(share.join(&result_name))
        .ok()
        .or_else(|| json_from_serial(&serial, &result_name));
    let Some(text) = text else {
        let why = if guest_exit.is_some() {
            format!(
                "numalab in the guest exited with status {}",
                guest_exit.unwrap_or(-1)
            )
        } else if boot_s.is_none() {
            format!("{NEVER_REACHED_INIT} (QEMU {status})")
        } else {
            stopped_why(&serial, &format!("{STOPPED_EARLY} (QEMU {status})"))
        };
        return Err(failed(format!(
            "{why}; no record at {GUEST_RESULT}. QEMU stderr: {}\nlast console lines:\n{}",
            qemu_err.trim(),
            tail(&serial, 20)
        )));
    };
    let mut record = RunRecord::from_json(&text, "guest record").map_err(failed)?;
    record.settings.insert(
        "vm.kernel_package".into(),
        format!("{}={}", kern.package, kern.package_version),
    );
    record.settings.insert("vm.qemu".into(), qemu_version);
    record.settings.insert("vm.accel".into(), "tcg".into());
    let problems = console_problems(&serial);
    record
        .lab
        .set(lab::VM_CONSOLE_PROBLEMS, problems.len() as f64);
    record
        .settings
        .insert("vm.machine".into(), machine.name.clone());
    if let Some(b) = boot_s {
        record
            .lab
            .set(lab::VM_BOOT_S, (b * 1000.0).round() / 1000.0);
    }
    record
        .lab
        .set(lab::VM_QEMU_S, (qemu_s * 1000.0).round() / 1000.0);
    let guest_machine = std::mem::take(&mut record.machine);
    let mut mj = serde_json::to_value(machine).unwrap_or_default();
    if let Some(o) = mj.as_object_mut() {
        o.insert("vm_guest".into(), guest_machine);
    }
    record.machine = mj;
    Ok(VmOutcome {
        record,
        kernel: kern.clone(),
        boot_s,
        qemu_s,
        total_s: t_start.elapsed().as_secs_f64(),
        guest_exit,
        serial,
        problems,
        trace: Path::new(GUEST_TRACE)
            .file_name()
            .and_then(|n| fs::read_to_string(share.join(n)).ok()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_args_follow_the_cli() {
        let a = guest_real_run_args(
            "/share/w.toml",
            &[("kernel.numa_balancing".into(), "1".into())],
            7,
            0.5,
            Duration::from_millis(500),
        );
        let s = a.join(" ");
        assert_eq!(
            s,
            "real run --workload /share/w.toml --json /share/run.json --seed 7 --scale 0.5 --interval 0.5 --allow-sysctl --set kernel.numa_balancing=1"
        );
        assert!(
            !guest_real_run_args("x", &[], 0, 1.0, Duration::from_secs(1))
                .contains(&"--allow-sysctl".to_string())
        );
    }

    #[test]
    fn kernel_problems_are_found_on_the_console() {
        let s = "[ 1.0] ok\n[ 2.0] WARNING: CPU: 1 PID: 9 at mm/memory.c:5\n[ 2.1] Call Trace:\n[ 3.0] BUG: kernel NULL pointer dereference\nNUMALAB-EXIT rc=0\n";
        let p = console_problems(s);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("WARNING:"));
        assert!(console_problems("all fine\n").is_empty());
    }

    #[test]
    fn only_runs_the_guest_never_finished_boot_again() {
        assert!(is_host_flake(&format!(
            "{NEVER_REACHED_INIT} (QEMU exit status: 0)"
        )));
        assert!(is_host_flake(&format!(
            "{STOPPED_EARLY} (QEMU exit status: 0); no record"
        )));
        assert!(is_host_flake(&format!("{TIMED_OUT} 300 s and was killed")));
        // A kernel problem after /init is a finding: not booted again.
        let oops = "[   12.0] BUG: kernel NULL pointer dereference\n[   12.1] Oops: 0000 [#1]\n";
        let why = stopped_why(oops, &format!("{STOPPED_EARLY} (QEMU exit status: 0)"));
        assert!(why.contains("2 problem line(s)"), "{why}");
        assert!(!is_host_flake(&why), "{why}");
        assert!(is_host_flake(&stopped_why("all fine\n", STOPPED_EARLY)));
        // numalab in the guest failed on its own: the same run again would too.
        assert!(!is_host_flake(
            "numalab in the guest exited with status 2; no record at /share/result.json"
        ));
        assert!(!is_host_flake("copy /tmp/x: No such file"));
    }

    #[test]
    fn json_is_recovered_from_the_console() {
        let s = "boot\r\nNUMALAB-JSON-BEGIN /share/run.json\r\n{\"a\":\r\n1}\r\nNUMALAB-JSON-END\r\nNUMALAB-JSON-BEGIN /share/other.json\n{}\nNUMALAB-JSON-END\n";
        assert_eq!(json_from_serial(s, "run.json").unwrap(), "{\"a\":\n1}\n");
        assert!(json_from_serial("nothing", "run.json").is_none());
    }

    #[test]
    fn refusals_come_before_any_work() {
        let m = crate::smoke::small_machine(2, 8, 1 << 30, 20);
        let o = VmOptions::new(PathBuf::from("/nonexistent"), vec![]);
        match vm_run(&m, &o) {
            Err(RealError::Refused(e)) => assert!(e.contains("16 CPUs"), "{e}"),
            other => panic!("{other:?}"),
        }
        let m = crate::smoke::ci_machine();
        let mut o = VmOptions::new(PathBuf::from("/nonexistent/numalab"), vec![]);
        o.qemu = Some(PathBuf::from("/bin/true"));
        o.busybox = Some(PathBuf::from("/bin/true"));
        match vm_run(&m, &o) {
            Err(RealError::Refused(e)) => assert!(e.contains("guest binary"), "{e}"),
            other => panic!("{other:?}"),
        }
    }
}
