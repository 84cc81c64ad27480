//! `numalab real run` and `numalab vm run`: the workload on a real kernel,
//! this host's or a QEMU guest's (crate `numalab-real`, docs/real.md);
//! `numalab real restore`, which undoes what a killed real run left.
//!
//! `real run` resolves the workload against this host
//! ([`numalab_real::host_machine`]) and runs it for real; refusals exit
//! with [`numalab_real::RealError::exit_code`] (2) having changed nothing.
//! `vm run` resolves the workload against the requested machine first (so a
//! workload that cannot fit is refused before anything boots), then boots a
//! guest shaped like the machine and runs this very binary inside it as
//! `numalab real run` with the arguments of
//! [`numalab_real::vm::guest_real_run_args`]; a workload file is handed to
//! the guest through the 9p share.

use crate::failure::Failure;
use numalab_real::vm::{self, VmOptions, VmOutcome, GUEST_SHARE};
use numalab_real::{RealError, RealOptions, RunRecord};
use numalab_topology::Machine;
use std::path::PathBuf;
use std::time::Duration;

/// What `real run` and `vm run` share: the workload and how to run it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunArgs {
    /// Workload preset or TOML file.
    pub workload: String,
    /// `--set KEY=VALUE`, as given.
    pub sets: Vec<String>,
    /// `--json FILE` ("-" for stdout).
    pub json: Option<String>,
    /// `--scale F`.
    pub scale: f64,
    /// `--seed N`.
    pub seed: u64,
    /// `--interval SECS`: sampling interval.
    pub interval: f64,
    /// `--trace FILE`: the kernel's ftrace text of the run (real run only).
    pub trace: Option<String>,
    /// `--trace-events A,B`: which events (default the model's).
    pub trace_events: Option<String>,
    /// `--probe DEF`: dynamic events (kprobe, kretprobe, fprobe) traced
    /// beside them (numalab_real::tracefs::Probe).
    pub probes: Vec<String>,
}

/// Checks `--scale` and `--interval` and splits the `--set` values.
fn common(a: &RunArgs) -> Result<(Vec<(String, String)>, Duration), Failure> {
    if !(a.scale > 0.0 && a.scale <= 1.0) {
        return Err(format!("--scale {}: must be in (0, 1]", a.scale).into());
    }
    if !(a.interval.is_finite() && a.interval > 0.0 && a.interval <= 3600.0) {
        return Err(format!("--interval {}: must be in (0, 3600] seconds", a.interval).into());
    }
    // An event name the model does not know would be left out of the
    // kernel's trace without a word: refuse it as `run` does.
    crate::trace::filter(a.trace_events.as_deref(), None)?;
    for p in &a.probes {
        numalab_real::tracefs::Probe::parse(p)?;
    }
    let sets = a
        .sets
        .iter()
        .map(|s| numalab_real::parse_set(s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((sets, Duration::from_secs_f64(a.interval)))
}

/// Resolves workload `w` (preset or file) against machine `m`.
pub fn resolve(
    w: &str,
    m: &Machine,
    seed: u64,
    scale: f64,
) -> Result<numalab_real::Workload, String> {
    let spec = numalab_workload::presets::load(w).map_err(|e| e.to_string())?;
    numalab_workload::spec::resolve(&spec, m, seed, scale).map_err(|e| e.to_string())
}

/// Writes the record to `--json` (or stdout for "-"), else prints the
/// summary.
fn output(rec: &RunRecord, json: Option<&str>) -> Result<(), Failure> {
    match json {
        Some("-") => crate::out::print(&rec.to_json())?,
        Some(path) => crate::out::write_file("--json", std::path::Path::new(path), &rec.to_json())?,
        None => crate::out::print(&numalab_report::run_summary(rec))?,
    }
    Ok(())
}

/// `numalab real run`.
pub fn real_run(a: &RunArgs, allow_sysctl: bool, verbose: bool) -> Result<(), Failure> {
    let (sets, interval) = common(a)?;
    let host = numalab_real::host_machine().map_err(RealError::Refused)?;
    let w = resolve(&a.workload, &host, a.seed, a.scale)
        .map_err(|e| RealError::Refused(format!("{e} ({})", host.description)))?;
    let opts = RealOptions {
        sets,
        allow_sysctl,
        interval,
        seed: a.seed,
        scale: a.scale,
        verbose,
    };
    let capture = match &a.trace {
        None => None,
        Some(_) => {
            let events = crate::trace::parse_events(a.trace_events.as_deref());
            let paths = crate::trace::kernel_event_paths(events.as_deref());
            let facts = numalab_real::host::HostFacts::gather().map_err(RealError::Refused)?;
            let root = facts
                .tracefs
                .ok_or_else(|| RealError::Refused("--trace: tracefs is not mounted".to_string()))?;
            let probes = a
                .probes
                .iter()
                .map(|p| numalab_real::tracefs::Probe::parse(p))
                .collect::<Result<Vec<_>, _>>()?;
            let c = numalab_real::tracefs::TraceCapture::start(&root, &paths, &probes)
                .map_err(|e| RealError::Refused(format!("--trace: {e}")))?;
            for m in &c.missing {
                eprintln!("numalab real: note: --trace: this kernel has no event {m}");
            }
            Some(c)
        }
    };
    let rec = numalab_real::real_run(&w, &host, &opts)?;
    if let (Some(c), Some(path)) = (capture, &a.trace) {
        let text = c.finish().map_err(|e| format!("--trace: {e}"))?;
        crate::out::write_file("--trace", std::path::Path::new(path), &text)?;
    }
    output(&rec, a.json.as_deref())
}

/// `numalab real restore`: restores what a real run that did not finish
/// left changed, from the journal in the state directory, and prints each
/// action (or `nothing to restore`).
pub fn real_restore() -> Result<(), Failure> {
    let dir = numalab_real::journal::state_dir();
    let roots = numalab_real::knobs::KnobRoots::default();
    let text = match numalab_real::journal::restore(&dir, &roots)? {
        None => "nothing to restore\n".to_string(),
        Some(r) => {
            let mut t = format!("run pid {} did not finish; restored:\n", r.pid);
            for a in &r.actions {
                t.push_str(&format!("  {a}\n"));
            }
            t
        }
    };
    crate::out::print(&text)?;
    Ok(())
}

/// Options of `numalab vm run` beyond [`RunArgs`].
#[derive(Clone, Debug, PartialEq)]
pub struct VmArgs {
    /// `--kernel V`: a 6.12 version (default the newest).
    pub kernel: Option<String>,
    /// `--timeout SECS`: kill the guest after this long.
    pub timeout: u64,
    /// `--verbose`: echo the guest's console.
    pub verbose: bool,
    /// `--keep-workdir`.
    pub keep_workdir: bool,
    /// A built bzImage to boot (`--kernel PATH`, or the A/B pair).
    pub kernel_image: Option<PathBuf>,
}

impl VmArgs {
    /// Boots `kernel` (a built image, or a Debian version).
    pub fn boot(&mut self, kernel: &crate::vm_kernel::Stock) {
        match kernel {
            crate::vm_kernel::Stock::Image(p) => {
                self.kernel = None;
                self.kernel_image = Some(p.clone());
            }
            crate::vm_kernel::Stock::Debian(k) => {
                self.kernel = k.clone();
                self.kernel_image = None;
            }
        }
    }

    /// The CLI's `--kernel` value: a path to an existing file is a built
    /// bzImage, anything else a Debian 6.12 version.
    pub fn with_kernel(
        kernel: Option<String>,
        timeout: u64,
        verbose: bool,
        keep_workdir: bool,
    ) -> VmArgs {
        let image = kernel
            .as_deref()
            .filter(|k| k.contains('/') || std::path::Path::new(k).is_file())
            .map(PathBuf::from);
        VmArgs {
            kernel: if image.is_some() { None } else { kernel },
            timeout,
            verbose,
            keep_workdir,
            kernel_image: image,
        }
    }
}

impl Default for VmArgs {
    fn default() -> Self {
        VmArgs {
            kernel: None,
            timeout: 600,
            verbose: false,
            keep_workdir: false,
            kernel_image: None,
        }
    }
}

/// The arguments the guest's numalab gets, and the files to share with
/// it: a preset is passed by name, a workload file is shared as
/// `workload.toml`.
pub fn guest_plan(
    a: &RunArgs,
    sets: &[(String, String)],
    interval: Duration,
) -> (Vec<String>, Vec<(PathBuf, String)>) {
    let (w, share) = if numalab_workload::presets::text(&a.workload).is_some() {
        (a.workload.clone(), Vec::new())
    } else {
        (
            format!("{GUEST_SHARE}/workload.toml"),
            vec![(PathBuf::from(&a.workload), "workload.toml".to_string())],
        )
    };
    (
        vm::guest_real_run_args(&w, sets, a.seed, a.scale, interval),
        share,
    )
}

/// Boots a guest shaped like `m` and runs `a` inside; the outcome.
pub fn vm_outcome(m: &Machine, a: &RunArgs, v: &VmArgs) -> Result<VmOutcome, Failure> {
    let (sets, interval) = common(a)?;
    // Refuse what cannot fit before booting anything.
    numalab_real::vm::qemu::check_vm_machine(m).map_err(RealError::Refused)?;
    resolve(&a.workload, m, a.seed, a.scale)
        .map_err(|e| RealError::Refused(format!("{e} (on machine {})", m.name)))?;
    if v.timeout == 0 {
        return Err("--timeout must be at least 1 second".to_string().into());
    }
    let exe = std::env::current_exe()
        .map_err(|e| Failure::from(format!("cannot find the numalab binary: {e}")))?;
    let (mut args, share) = guest_plan(a, &sets, interval);
    if a.trace.is_some() {
        args.extend(["--trace".to_string(), vm::GUEST_TRACE.to_string()]);
        if let Some(ev) = &a.trace_events {
            args.extend(["--trace-events".to_string(), ev.clone()]);
        }
        for p in &a.probes {
            args.extend(["--probe".to_string(), p.clone()]);
        }
    }
    let mut o = VmOptions::new(exe, args);
    o.share_files = share;
    o.kernel = v.kernel.clone();
    o.timeout = Duration::from_secs(v.timeout);
    o.verbose = v.verbose;
    o.keep_workdir = v.keep_workdir;
    o.kernel_image = v.kernel_image.clone();
    vm::vm_run(m, &o).map_err(guest_failure)
}

/// A failed guest run as one line: the guest's own `numalab: error:` line
/// when there is one (with its exit code), else the first line of the
/// error; the console tail goes to `detail`.
pub fn guest_failure(e: RealError) -> Failure {
    let code = e.exit_code();
    let text = e.to_string();
    let guest_err = text
        .lines()
        .find_map(|l| l.split_once("numalab: error: ").map(|(_, m)| m.trim()));
    let guest_rc = text
        .split_once("numalab in the guest exited with status ")
        .and_then(|(_, r)| {
            r.chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
                .parse::<i32>()
                .ok()
        });
    let first = text.lines().next().unwrap_or("").to_string();
    let rest: Vec<&str> = text.lines().skip(1).collect();
    match guest_err {
        Some(m) => Failure {
            message: format!("in the guest: {m}"),
            code: guest_rc.unwrap_or(code).clamp(1, 255) as u8,
            detail: (!rest.is_empty()).then(|| rest.join("\n")),
        },
        None => Failure {
            message: first,
            code: code.clamp(1, 255) as u8,
            detail: (!rest.is_empty()).then(|| rest.join("\n")),
        },
    }
}

/// `numalab vm run`.
pub fn vm_run(machine: &str, a: &RunArgs, v: &VmArgs) -> Result<(), Failure> {
    let m = crate::runner::load_machine(machine)?;
    let out = vm_outcome(&m, a, v)?;
    if let Some(path) = &a.trace {
        let text = out.trace.as_deref().ok_or_else(|| {
            Failure::from(format!(
                "--trace: the guest wrote no trace at {}",
                vm::GUEST_TRACE
            ))
        })?;
        crate::out::write_file("--trace", std::path::Path::new(path), text)?;
    }
    eprintln!(
        "numalab vm: kernel {} ({}={}), boot {:.1} s, QEMU {:.1} s, total {:.1} s",
        out.record.kernel.as_deref().unwrap_or("?"),
        out.kernel.package,
        out.kernel.package_version,
        out.boot_s.unwrap_or(f64::NAN),
        out.qemu_s,
        out.total_s
    );
    output(&out.record, a.json.as_deref())
}

/// `numalab vm run --kernel-patch`: the workload on the stock and the
/// patched kernel (same source and configuration), one after the other,
/// summaries side by side; a guest whose run the kernel refused (say
/// `EINVAL` for a policy only the patch knows) is shown as such. Console
/// problems (`BUG:`, `Oops`, `WARNING:`, `Call Trace`) are listed and make
/// the exit code 1.
pub fn vm_run_ab(
    machine: &str,
    a: &RunArgs,
    v: &VmArgs,
    patches: &[String],
    fuzz: usize,
) -> Result<(), Failure> {
    let m = crate::runner::load_machine(machine)?;
    let (stock, patched) = crate::vm_kernel::pair(
        patches,
        fuzz,
        v.verbose,
        (v.kernel.as_deref(), v.kernel_image.as_deref()),
    )?;
    let mut cols: Vec<(String, Result<VmOutcome, Failure>)> = Vec::new();
    let patched = crate::vm_kernel::Stock::Image(patched.bzimage);
    for (label, k) in [("stock", &stock), ("patched", &patched)] {
        let mut vv = v.clone();
        vv.boot(k);
        eprintln!("numalab vm: {label} kernel {}", k.describe());
        cols.push((label.to_string(), vm_outcome(&m, a, &vv)));
    }
    let mut text = String::new();
    let mut problems = 0;
    for (label, r) in &cols {
        text.push_str(&format!(
            "== {label} kernel
"
        ));
        match r {
            Ok(o) => {
                text.push_str(&numalab_report::run_summary(&o.record));
                for p in &o.problems {
                    text.push_str(&format!(
                        "  CONSOLE: {p}
"
                    ));
                }
                problems += o.problems.len();
            }
            Err(e) => text.push_str(&format!(
                "  run refused or failed: {}
",
                e.message
            )),
        }
        text.push('\n');
    }
    text.push_str(&ab_counters(&cols));
    crate::out::print(&text)?;
    if let Some(j) = a.json.as_deref().filter(|j| *j != "-") {
        for (label, r) in &cols {
            if let Ok(o) = r {
                let p = format!("{j}.{label}.json");
                crate::out::write_file("--json", std::path::Path::new(&p), &o.record.to_json())?;
            }
        }
    }
    if problems > 0 {
        return Err(Failure {
            message: format!("{problems} kernel problem line(s) on the guest consoles"),
            code: 1,
            detail: None,
        });
    }
    Ok(())
}

/// The NUMA counters of the A/B columns, one row each.
fn ab_counters(cols: &[(String, Result<VmOutcome, Failure>)]) -> String {
    let keys = [
        "numa_pte_updates",
        "numa_huge_pte_updates",
        "numa_hint_faults",
        "numa_hint_faults_local",
        "numa_pages_migrated",
    ];
    let mut s = format!("{:<26}", "");
    for (l, _) in cols {
        s.push_str(&format!(" {l:>12}"));
    }
    s.push('\n');
    for k in keys {
        s.push_str(&format!("{k:<26}"));
        for (_, r) in cols {
            let v = match r {
                Ok(o) => o.record.vm(k).to_string(),
                Err(e)
                    if e.message.contains("EINVAL") || e.message.contains("Invalid argument") =>
                {
                    "EINVAL".into()
                }
                Err(_) => "failed".into(),
            };
            s.push_str(&format!(" {v:>12}"));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(w: &str) -> RunArgs {
        RunArgs {
            workload: w.into(),
            sets: vec!["kernel.numa_balancing=1".into()],
            json: None,
            scale: 0.5,
            seed: 3,
            interval: 0.5,
            trace: None,
            trace_events: None,
            probes: Vec::new(),
        }
    }

    #[test]
    fn presets_go_by_name_and_files_through_the_share() {
        let a = args("numa02");
        let (sets, iv) = common(&a).unwrap();
        let (g, share) = guest_plan(&a, &sets, iv);
        assert!(share.is_empty());
        assert_eq!(
            g.join(" "),
            "real run --workload numa02 --json /share/run.json --seed 3 --scale 0.5 --interval 0.5 --allow-sysctl --set kernel.numa_balancing=1"
        );
        let a = args("/tmp/my-w.toml");
        let (g, share) = guest_plan(&a, &sets, iv);
        assert_eq!(
            share,
            vec![(PathBuf::from("/tmp/my-w.toml"), "workload.toml".into())]
        );
        assert_eq!(g[3], "/share/workload.toml");
    }

    #[test]
    fn kernel_is_a_version_or_a_built_image() {
        let v = VmArgs::with_kernel(Some("6.12.117".into()), 60, false, false);
        assert_eq!(v.kernel.as_deref(), Some("6.12.117"));
        assert!(v.kernel_image.is_none());
        let v = VmArgs::with_kernel(Some("/cache/built/x/bzImage".into()), 60, false, false);
        assert!(v.kernel.is_none());
        assert_eq!(
            v.kernel_image,
            Some(PathBuf::from("/cache/built/x/bzImage"))
        );
    }

    #[test]
    fn bad_scale_interval_and_sets_are_refused() {
        let mut a = args("numa02");
        a.scale = 0.0;
        assert!(common(&a).unwrap_err().message.contains("--scale"));
        let mut a = args("numa02");
        a.interval = -1.0;
        assert!(common(&a).unwrap_err().message.contains("--interval"));
        let mut a = args("numa02");
        a.sets = vec!["nothing".into()];
        let e = common(&a).unwrap_err();
        assert!(e.message.contains("KEY=VALUE"), "{}", e.message);
        assert_eq!(e.code, 2);
    }

    #[test]
    fn guest_errors_become_one_line_with_the_guest_exit_code() {
        let e = RealError::Failed(
            "numalab in the guest exited with status 2; no record at /share/run.json. QEMU stderr: \nlast console lines:\nNUMALAB-RUN 3.1\nnumalab: error: workload needs 9 nodes\nNUMALAB-EXIT rc=2".into(),
        );
        let f = guest_failure(e);
        assert_eq!(f.message, "in the guest: workload needs 9 nodes");
        assert_eq!(f.code, 2);
        assert!(f.detail.unwrap().contains("NUMALAB-EXIT"));
        let f = guest_failure(RealError::Failed(
            "the guest did not finish within 5 s and was killed; last console lines:\nx".into(),
        ));
        assert_eq!(f.code, 1);
        assert!(f.message.starts_with("the guest did not finish"));
        assert!(!f.message.contains('\n'));
    }

    #[test]
    fn vm_refuses_big_machines_and_misfit_workloads_before_booting() {
        let big = crate::runner::load_machine("spr-4n").unwrap();
        let e = vm_outcome(&big, &args("numa02"), &VmArgs::default()).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("CPUs"), "{}", e.message);
        let m = numalab_real::smoke::small_machine(2, 1, 256 << 20, 20);
        let e = vm_outcome(&m, &args("no-such-workload"), &VmArgs::default()).unwrap_err();
        assert_eq!(e.code, 2);
    }
}
