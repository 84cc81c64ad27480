//! Kernel knobs named as in `--set KEY=VALUE`: where they live, and
//! setting them for a run with the old values restored afterwards.
//!
//! Knobs the model has are declared in the registry (numalab-knobs): any of
//! their names (`numa_balancing.scan_delay_ms`, `numa_balancing/...`,
//! `sched/numa_balancing/...`, the pre-5.13 sysctl
//! `kernel.numa_balancing_scan_delay_ms`) resolves to the canonical name
//! and the registry's location, and the value is checked against the
//! registry's type and range (and the rules over several knobs) before
//! anything is written:
//! - a sysctl → its file under /proc/sys;
//! - a debugfs tunable → its file under /sys/kernel/debug, or, on a kernel
//!   without it whose pre-5.13 sysctl exists, that sysctl;
//! - a lab or kernel-config knob → [`Knob::Lab`] (`numalab.sample_interval_ms`
//!   sets the sampling interval; `numalab.access_latency=1` has the worker
//!   time every random access, `numalab.access_latency_threshold_us` its
//!   outlier threshold (latency.rs); `numalab.policy=mainline` asks for what a
//!   real kernel runs anyway, any other policy is refused by [`parse_set`];
//!   `CONFIG_HZ` and the other lab knobs are refused by the checks, a real
//!   kernel fixes them).
//!
//! A real run also passes through, unchecked, kernel files the model does
//! not have (the value is the kernel's to refuse):
//! - other sysctl names, `vm.zone_reclaim_mode` → /proc/sys/vm/zone_reclaim_mode;
//! - other debugfs NUMA balancing files, `numa_balancing/hot_threshold_ms`;
//! - /sys/kernel/mm files: `transparent_hugepage/enabled`,
//!   `numa/demotion_enabled`, `mempolicy/weighted_interleave/node0`;
//! - absolute paths under /proc/sys or /sys;
//! - `CGROUP_PATH:FILE` (e.g. `/db:cpuset.cpus`), a file of one of the
//!   workload's cgroups: written into the run's own cgroup, which is removed
//!   afterwards, so nothing needs restoring.
//!
//! Undeclared `numalab.*` names are refused.
//!
//! `kernel.numa_balancing=4` (proposal 4's NUMA_BALANCING_CGROUP) is probed
//! before anything is written ([`probe_numa_balancing_cgroup`]): mainline
//! accepts 4 too (its range is `[0, SYSCTL_FOUR]` since memory tiering), so
//! the range cannot tell, and a mainline kernel in mode 4 would scan without
//! marking top-tier pages, balancing nothing. The probe looks for the
//! proposal's `cpu.numa_load_balance` file instead and refuses mode 4 on a
//! kernel without it.
//!
//! [`KnobGuard`] writes values in order and restores the saved ones in
//! reverse order, on [`KnobGuard::restore`] or on drop (an early return, an
//! error, a caught signal). A SIGKILL of numalab itself cannot be caught:
//! [`KnobGuard::apply_journaled`] writes each old value to the real-run
//! journal ([`crate::journal`]) first, and the next run restores it.

use crate::journal::Journal;
use numalab_knobs::{knob, Def, Location};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

pub use crate::knob_roots::KnobRoots;

/// A resolved knob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Knob {
    /// A global kernel file that must be restored after the run.
    File {
        /// Canonical name, e.g. `numa_balancing/scan_delay_ms`.
        key: String,
        /// The file.
        path: PathBuf,
        /// True when the file lives in debugfs.
        debugfs: bool,
    },
    /// A numalab setting rather than a kernel one (`numalab.*`, and
    /// `CONFIG_HZ`, which a real kernel fixes at build time).
    Lab {
        /// The name.
        key: String,
    },
    /// A file of one of the run's cgroups.
    Cgroup {
        /// Workload cgroup path, e.g. `/db` (`/` is the run's parent).
        cgroup: String,
        /// File name, e.g. `cpuset.cpus`.
        file: String,
    },
}

/// Sysctls a Run record lists that the model does not have (the declared
/// sysctls are listed too).
const OBSERVED_SYSCTLS: [&str; 2] = [
    "kernel.numa_balancing_promote_rate_limit_MBps",
    "kernel.sched_schedstats",
];

/// Splits `KEY=VALUE` at the first `=`.
pub fn parse_set(arg: &str) -> Result<(String, String), String> {
    let (k, v) = arg
        .split_once('=')
        .ok_or_else(|| format!("--set '{arg}': expected KEY=VALUE"))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(format!("--set '{arg}': empty knob name"));
    }
    if v.contains('\n') {
        return Err(format!("--set '{arg}': value has a newline"));
    }
    refuse_model_policy(k, v.trim())?;
    Ok((k.to_string(), v.trim().to_string()))
}

/// Refuses `numalab.policy` (any spelling) with a value other than
/// `mainline`: a real kernel runs its own NUMA balancing, the model's other
/// policies exist only in the model. Checked by [`parse_set`], so `real
/// run` and `vm run` refuse before anything is written or booted.
pub fn refuse_model_policy(key: &str, value: &str) -> Result<(), String> {
    let policy = knob::POLICY.def();
    match knob::lookup(key) {
        Some(d) if d.name == policy.name && value != policy.default_text() => Err(format!(
            "refused: --set {}={value}: a real kernel runs its own NUMA balancing (mainline); the model's other policies (numalab list policies) exist only in the model",
            policy.name
        )),
        _ => Ok(()),
    }
}

fn clean_rel(rel: &str, key: &str) -> Result<PathBuf, String> {
    let p = Path::new(rel);
    if rel.is_empty() || p.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(format!("knob '{key}': not a plain relative name"));
    }
    Ok(p.to_path_buf())
}

/// Resolves a knob name to the file it stands for. Does not check that the
/// file exists (see [`check_knob`]).
pub fn resolve_knob(key: &str, roots: &KnobRoots) -> Result<Knob, String> {
    if let Some((cg, file)) = numalab_knobs::cgroup::split_cgroup_key(key)? {
        crate::cgroup::path_components(cg).map_err(|e| format!("knob '{key}': {e}"))?;
        return Ok(Knob::Cgroup {
            cgroup: cg.to_string(),
            file: file.to_string(),
        });
    }
    if key.starts_with('/') {
        let p = Path::new(key);
        let under = |root: &str| p.starts_with(root);
        if !(under("/proc/sys") || under("/sys"))
            || p.components().any(|c| c == Component::ParentDir)
        {
            return Err(format!(
                "knob '{key}': absolute knob paths must lie under /proc/sys or /sys"
            ));
        }
        let debugfs = p.starts_with("/sys/kernel/debug");
        let path = if let Ok(rest) = p.strip_prefix("/proc/sys") {
            roots.proc_sys.join(rest)
        } else if let Ok(rest) = p.strip_prefix("/sys/kernel/debug") {
            roots.debugfs.join(rest)
        } else {
            roots.sys.join(p.strip_prefix("/sys").unwrap_or(p))
        };
        return Ok(Knob::File {
            key: key.to_string(),
            path,
            debugfs,
        });
    }
    if let Some(def) = knob::lookup(key) {
        return Ok(declared(def, roots));
    }
    if key.starts_with("numalab.") {
        return Err(format!(
            "unknown knob '{key}': not a numalab knob (see `numalab list knobs`)"
        ));
    }
    let nb = key
        .strip_prefix("sched/numa_balancing/")
        .or_else(|| key.strip_prefix("numa_balancing/"))
        .or_else(|| key.strip_prefix("numa_balancing."));
    if let Some(rest) = nb {
        let rel = clean_rel(rest, key)?;
        return Ok(Knob::File {
            key: format!("numa_balancing.{rest}"),
            path: roots.debugfs.join("sched/numa_balancing").join(rel),
            debugfs: true,
        });
    }
    for prefix in [
        "transparent_hugepage/",
        "numa/",
        "mempolicy/",
        "memory_tiering/",
    ] {
        if key.starts_with(prefix) {
            let rel = clean_rel(key, key)?;
            return Ok(Knob::File {
                key: key.to_string(),
                path: roots.sys.join("kernel/mm").join(rel),
                debugfs: false,
            });
        }
    }
    let sysctl_ok = !key.is_empty()
        && key.contains('.')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !key.split('.').any(str::is_empty);
    if !sysctl_ok {
        return Err(format!(
            "unknown knob '{key}': expected a sysctl name (kernel.numa_balancing), numa_balancing/FILE, \
             transparent_hugepage/FILE, an absolute /proc/sys or /sys path, or CGROUP:FILE"
        ));
    }
    Ok(Knob::File {
        key: key.to_string(),
        path: roots.proc_sys.join(key.replace('.', "/")),
        debugfs: false,
    })
}

/// Where declared knob `def` lives on this kernel.
fn declared(def: &'static Def, roots: &KnobRoots) -> Knob {
    let key = def.name.to_string();
    match def.location {
        Location::Sysctl(p) => Knob::File {
            key,
            path: roots.proc_sys.join(p),
            debugfs: false,
        },
        Location::Debugfs {
            path,
            legacy_sysctl,
        } => {
            let dbg = roots.debugfs.join(path);
            match legacy_sysctl.map(|l| roots.proc_sys.join(l)) {
                // A pre-5.13 kernel: the tunable is still a sysctl.
                Some(old) if !dbg.exists() && old.exists() => Knob::File {
                    key,
                    path: old,
                    debugfs: false,
                },
                _ => Knob::File {
                    key,
                    path: dbg,
                    debugfs: true,
                },
            }
        }
        Location::Config(_) | Location::Lab => Knob::Lab { key },
    }
}

/// Resolves every `--set` pair ([`resolve_knob`]) and checks the values of
/// declared knobs against the registry: type and range, then the rules
/// over several knobs among those given. Pass-through knobs are left to
/// the kernel. Nothing is written.
pub fn resolve_sets(
    sets: &[(String, String)],
    roots: &KnobRoots,
) -> Result<Vec<(Knob, String)>, String> {
    let mut out = Vec::new();
    let mut given: BTreeMap<&'static str, u64> = BTreeMap::new();
    for (k, v) in sets {
        let knob = resolve_knob(k, roots)?;
        if let Some(def) = knob::lookup(k) {
            if let Some(e) = numalab_knobs::rules::exclusive_bits(def, v) {
                return Err(e);
            }
            let raw = def.parse(v).map_err(|e| format!("--set {k}: {e}"))?;
            given.insert(def.name, raw);
        }
        out.push((knob, v.clone()));
    }
    numalab_knobs::rules::check_ordered(|d| given.get(d.name).copied())?;
    Ok(out)
}

/// Refuses `kernel.numa_balancing=4` (NUMA_BALANCING_CGROUP, proposal 4)
/// on a kernel without per-cgroup NUMA balancing: the cgroup v2 hierarchy
/// at `cgroup2` (its root, where the cpu controller's files without
/// `CFTYPE_NOT_ON_ROOT` show) must have `cpu.numa_load_balance`. Other
/// keys and values pass. `key` is a canonical knob name.
pub fn probe_numa_balancing_cgroup(
    key: &str,
    value: &str,
    cgroup2: Option<&Path>,
) -> Result<(), String> {
    if key != knob::NUMA_BALANCING.def().name
        || value.trim().parse::<u64>().map_or(true, |v| v & 4 == 0)
    {
        return Ok(());
    }
    let Some(root) = cgroup2 else {
        return Err(format!(
            "refused: --set {key}={value} (NUMA_BALANCING_CGROUP, proposal 4) needs a cgroup v2 hierarchy with cpu.numa_load_balance, and this host has no cgroup2 mount"
        ));
    };
    let file = root.join("cpu.numa_load_balance");
    if !file.is_file() {
        return Err(format!(
            "refused: --set {key}={value}: this kernel has no per-cgroup NUMA balancing ({} does not exist). \
             A mainline kernel accepts 4 (its sysctl range is [0, 4]) but would scan without marking top-tier pages, so nothing would be balanced; \
             boot a kernel with proposal 4 (NUMA_BALANCING_CGROUP) applied",
            file.display()
        ));
    }
    Ok(())
}

/// Checks that a file knob exists and can be written, without writing it.
pub fn check_knob(knob: &Knob) -> Result<(), String> {
    if let Knob::File { key, path, debugfs } = knob {
        if !path.exists() {
            let hint = if *debugfs {
                " (is debugfs mounted at /sys/kernel/debug, and does this kernel have CONFIG_NUMA_BALANCING?)"
            } else {
                ""
            };
            return Err(format!(
                "knob '{key}': {} does not exist{hint}",
                path.display()
            ));
        }
        if !path.is_file() {
            return Err(format!("knob '{key}': {} is not a file", path.display()));
        }
        if !crate::host::access_w(path) {
            return Err(format!(
                "knob '{key}': {} is not writable by this user",
                path.display()
            ));
        }
    }
    Ok(())
}

/// The value a knob file shows: trimmed, and for selection files such as
/// `always [madvise] never` the selected word.
pub fn knob_value(text: &str) -> String {
    let t = text.trim();
    if let (Some(a), Some(b)) = (t.find('['), t.find(']')) {
        if a < b {
            return t[a + 1..b].to_string();
        }
    }
    t.to_string()
}

/// Knobs set for a run; restores the saved values when dropped.
#[derive(Debug, Default)]
pub struct KnobGuard {
    saved: Vec<(String, PathBuf, String)>,
}

impl KnobGuard {
    /// Writes each `(key, path, value)` in order, saving the old value
    /// first. On a failed write, restores what it already changed and
    /// returns the error.
    pub fn apply(changes: &[(String, PathBuf, String)]) -> Result<KnobGuard, String> {
        Self::apply_journaled(changes, None)
    }

    /// [`KnobGuard::apply`], recording each old value in `journal` (and
    /// so on disk) before the knob is written. When a write fails and the
    /// earlier ones are undone, the journal's knobs are cleared again.
    pub fn apply_journaled(
        changes: &[(String, PathBuf, String)],
        mut journal: Option<&mut Journal>,
    ) -> Result<KnobGuard, String> {
        let mut g = KnobGuard::default();
        for (key, path, value) in changes {
            let failure = match fs::read_to_string(path) {
                Err(e) => Some(format!("knob '{key}': cannot read {}: {e}", path.display())),
                Ok(t) => {
                    let old = knob_value(&t);
                    let journaled = match journal.as_deref_mut() {
                        Some(j) => j.add_knob(key, path, &old),
                        None => Ok(()),
                    };
                    match journaled.map(|()| fs::write(path, value)) {
                        Err(e) => Some(format!("knob '{key}': not changed: {e}")),
                        Ok(Err(e)) => Some(format!(
                            "knob '{key}': the kernel refused '{value}' for {}: {e}",
                            path.display()
                        )),
                        Ok(Ok(())) => {
                            g.saved.push((key.clone(), path.clone(), old));
                            None
                        }
                    }
                }
            };
            if let Some(msg) = failure {
                let undo = g.restore().and_then(|()| match journal {
                    Some(j) => j.knobs_restored(),
                    None => Ok(()),
                });
                return Err(format!(
                    "{msg}{}",
                    undo.err().map(|u| format!("; {u}")).unwrap_or_default()
                ));
            }
        }
        Ok(g)
    }

    /// Saved `(key, path, old value)`, in the order they were set.
    pub fn saved(&self) -> &[(String, PathBuf, String)] {
        &self.saved
    }

    /// Writes the saved values back, last changed first. Returns every
    /// failure, having tried them all.
    pub fn restore(&mut self) -> Result<(), String> {
        let mut errs = Vec::new();
        while let Some((key, path, old)) = self.saved.pop() {
            if let Err(e) = fs::write(&path, &old) {
                errs.push(format!(
                    "could not restore {key}={old} ({}): {e}",
                    path.display()
                ));
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }
}

impl Drop for KnobGuard {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("numalab: {e}");
        }
    }
}

/// The NUMA-related knobs in force, by canonical name: the settings a Run
/// record lists. Unreadable knobs are left out.
pub fn snapshot_settings(roots: &KnobRoots) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let declared = knob::ALL.iter().filter_map(|d| match d.location {
        Location::Sysctl(p) => Some((d.name.to_string(), p.to_string())),
        _ => None,
    });
    let observed = OBSERVED_SYSCTLS
        .iter()
        .map(|n| (n.to_string(), n.replace('.', "/")));
    for (name, rel) in declared.chain(observed) {
        if let Ok(t) = fs::read_to_string(roots.proc_sys.join(rel)) {
            m.insert(name, knob_value(&t));
        }
    }
    let nb = roots.debugfs.join("sched/numa_balancing");
    if let Ok(rd) = fs::read_dir(&nb) {
        let mut names: Vec<String> = rd
            .flatten()
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for n in names {
            if let Ok(t) = fs::read_to_string(nb.join(&n)) {
                m.insert(format!("numa_balancing.{n}"), knob_value(&t));
            }
        }
    }
    for name in [
        "transparent_hugepage/enabled",
        "transparent_hugepage/defrag",
        "numa/demotion_enabled",
    ] {
        if let Ok(t) = fs::read_to_string(roots.sys.join("kernel/mm").join(name)) {
            m.insert(name.to_string(), knob_value(&t));
        }
    }
    m
}

#[cfg(test)]
mod numa_balancing_cgroup_tests {
    use super::probe_numa_balancing_cgroup;

    #[test]
    fn mode_4_needs_the_cgroup_file_and_other_modes_do_not() {
        let d = tempfile::tempdir().unwrap();
        let key = "kernel.numa_balancing";
        for v in ["0", "1", "2", "3"] {
            probe_numa_balancing_cgroup(key, v, Some(d.path())).unwrap();
        }
        let e = probe_numa_balancing_cgroup(key, "4", Some(d.path())).unwrap_err();
        assert!(
            e.contains("no per-cgroup NUMA balancing") && e.contains("cpu.numa_load_balance"),
            "{e}"
        );
        assert!(probe_numa_balancing_cgroup(key, "4", None)
            .unwrap_err()
            .contains("no cgroup2 mount"));
        std::fs::write(d.path().join("cpu.numa_load_balance"), "0\n").unwrap();
        probe_numa_balancing_cgroup(key, "4", Some(d.path())).unwrap();
        // Another knob with the value 4 is not probed.
        probe_numa_balancing_cgroup("numa_balancing.scan_size_mb", "4", None).unwrap();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Knob roots under a temporary directory `d` (a fake /proc/sys,
    /// debugfs and /sys).
    pub(crate) fn roots(d: &Path) -> KnobRoots {
        KnobRoots {
            proc_sys: d.join("proc/sys"),
            debugfs: d.join("debug"),
            sys: d.join("sys"),
        }
    }

    /// Writes `t` to `p`, creating its directories.
    pub(crate) fn w(p: &Path, t: &str) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, t).unwrap();
    }

    #[test]
    fn names_resolve_to_kernel_files() {
        let d = tempfile::tempdir().unwrap();
        let r = roots(d.path());
        let k = resolve_knob("kernel.numa_balancing", &r).unwrap();
        assert_eq!(
            k,
            Knob::File {
                key: "kernel.numa_balancing".into(),
                path: d.path().join("proc/sys/kernel/numa_balancing"),
                debugfs: false
            }
        );
        for name in [
            "numa_balancing.scan_delay_ms",
            "numa_balancing/scan_delay_ms",
            "sched/numa_balancing/scan_delay_ms",
            "kernel.numa_balancing_scan_delay_ms",
        ] {
            match resolve_knob(name, &r).unwrap() {
                Knob::File { key, path, debugfs } => {
                    assert_eq!(key, "numa_balancing.scan_delay_ms", "{name}");
                    assert_eq!(
                        path,
                        d.path().join("debug/sched/numa_balancing/scan_delay_ms")
                    );
                    assert!(debugfs);
                }
                k => panic!("{k:?}"),
            }
        }
        assert_eq!(
            resolve_knob("numalab.sample_interval_ms", &r).unwrap(),
            Knob::Lab {
                key: "numalab.sample_interval_ms".into()
            }
        );
        match resolve_knob("transparent_hugepage/enabled", &r).unwrap() {
            Knob::File { path, .. } => {
                assert_eq!(
                    path,
                    d.path().join("sys/kernel/mm/transparent_hugepage/enabled")
                )
            }
            k => panic!("{k:?}"),
        }
        assert_eq!(
            resolve_knob("/db/x:cpuset.cpus", &r).unwrap(),
            Knob::Cgroup {
                cgroup: "/db/x".into(),
                file: "cpuset.cpus".into()
            }
        );
        match resolve_knob("/sys/kernel/debug/sched/numa_balancing/scan_size_mb", &r).unwrap() {
            Knob::File { path, debugfs, .. } => {
                assert!(debugfs);
                assert_eq!(
                    path,
                    d.path().join("debug/sched/numa_balancing/scan_size_mb")
                );
            }
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn declared_knobs_resolve_through_the_registry() {
        let d = tempfile::tempdir().unwrap();
        let r = roots(d.path());
        for (name, key) in [("config.hz", "CONFIG_HZ"), ("CONFIG_HZ", "CONFIG_HZ")] {
            assert_eq!(
                resolve_knob(name, &r).unwrap(),
                Knob::Lab { key: key.into() }
            );
        }
        let e = resolve_knob("numalab.nope", &r).unwrap_err();
        assert!(e.contains("unknown knob 'numalab.nope'"), "{e}");
        // Not modeled, but a real kernel file: passed through.
        match resolve_knob("numa_balancing/hot_threshold_ms", &r).unwrap() {
            Knob::File { key, path, .. } => {
                assert_eq!(key, "numa_balancing.hot_threshold_ms");
                assert_eq!(
                    path,
                    d.path().join("debug/sched/numa_balancing/hot_threshold_ms")
                );
            }
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn a_pre_5_13_kernel_gets_the_legacy_sysctl() {
        let d = tempfile::tempdir().unwrap();
        let r = roots(d.path());
        w(
            &d.path().join("proc/sys/kernel/numa_balancing_scan_size_mb"),
            "256\n",
        );
        for name in [
            "numa_balancing.scan_size_mb",
            "kernel.numa_balancing_scan_size_mb",
        ] {
            assert_eq!(
                resolve_knob(name, &r).unwrap(),
                Knob::File {
                    key: "numa_balancing.scan_size_mb".into(),
                    path: d.path().join("proc/sys/kernel/numa_balancing_scan_size_mb"),
                    debugfs: false
                },
                "{name}"
            );
        }
        // With debugfs present, debugfs wins.
        w(
            &d.path().join("debug/sched/numa_balancing/scan_size_mb"),
            "256\n",
        );
        match resolve_knob("kernel.numa_balancing_scan_size_mb", &r).unwrap() {
            Knob::File { debugfs, .. } => assert!(debugfs),
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn declared_values_are_checked_before_anything_is_written() {
        let r = KnobRoots::default();
        let s = |k: &str, v: &str| (k.to_string(), v.to_string());
        let e = resolve_sets(&[s("numa_balancing/scan_size_mb", "0")], &r).unwrap_err();
        assert!(
            e.contains("numa_balancing/scan_size_mb") && e.contains("out of range"),
            "{e}"
        );
        let e = resolve_sets(&[s("kernel.numa_balancing", "x")], &r).unwrap_err();
        assert!(e.contains("not a non-negative integer"), "{e}");
        let e = resolve_sets(
            &[
                s("numa_balancing.scan_period_max_ms", "1000"),
                s("sched/numa_balancing/scan_period_min_ms", "5000"),
            ],
            &r,
        )
        .unwrap_err();
        assert!(
            e.contains("numa_balancing.scan_period_min_ms=5000")
                && e.contains("numa_balancing.scan_period_max_ms=1000"),
            "{e}"
        );
        // Memory tiering is the kernel's to take on a real run.
        let ok = resolve_sets(
            &[
                s("kernel.numa_balancing", "2"),
                s("vm.zone_reclaim_mode", "anything"),
            ],
            &r,
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
    }

    #[test]
    fn bad_names_are_refused() {
        let r = KnobRoots::default();
        for bad in [
            "numa_balancing/../../x",
            "/etc/passwd",
            "/proc/sys/../x",
            "nodots",
            "kernel..x",
            "db:cpuset.cpus",
            "/db:cpus",
            "/../x:cpuset.cpus",
            "kernel.numa balancing",
        ] {
            assert!(resolve_knob(bad, &r).is_err(), "{bad} should be refused");
        }
        assert!(parse_set("novalue").is_err());
        assert!(parse_set("=1").is_err());
        assert_eq!(
            parse_set("kernel.numa_balancing=2").unwrap(),
            ("kernel.numa_balancing".to_string(), "2".to_string())
        );
        assert_eq!(parse_set("/a:cpu.max=max 100000").unwrap().1, "max 100000");
    }

    #[test]
    fn check_names_missing_and_present_files() {
        let d = tempfile::tempdir().unwrap();
        let r = roots(d.path());
        let k = resolve_knob("numa_balancing/scan_delay_ms", &r).unwrap();
        assert!(check_knob(&k).unwrap_err().contains("debugfs"));
        w(
            &d.path().join("debug/sched/numa_balancing/scan_delay_ms"),
            "1000\n",
        );
        check_knob(&k).unwrap();
    }

    #[test]
    fn apply_then_restore_in_reverse_order() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let b = d.path().join("b");
        w(&a, "1\n");
        w(&b, "always [madvise] never\n");
        {
            let g = KnobGuard::apply(&[
                ("a".into(), a.clone(), "0".into()),
                ("b".into(), b.clone(), "never".into()),
            ])
            .unwrap();
            assert_eq!(fs::read_to_string(&a).unwrap(), "0");
            assert_eq!(g.saved()[1].2, "madvise");
        }
        // Dropped: restored.
        assert_eq!(fs::read_to_string(&a).unwrap(), "1");
        assert_eq!(fs::read_to_string(&b).unwrap(), "madvise");
    }

    #[test]
    fn failed_apply_undoes_earlier_writes() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        w(&a, "5\n");
        let missing = d.path().join("nodir/b");
        let e = KnobGuard::apply(&[
            ("a".into(), a.clone(), "6".into()),
            ("b".into(), missing, "1".into()),
        ])
        .unwrap_err();
        assert!(e.contains("knob 'b'"), "{e}");
        assert_eq!(fs::read_to_string(&a).unwrap(), "5");
    }

    #[test]
    fn settings_snapshot_reads_known_knobs() {
        let d = tempfile::tempdir().unwrap();
        let r = roots(d.path());
        w(&d.path().join("proc/sys/kernel/numa_balancing"), "1\n");
        w(
            &d.path().join("debug/sched/numa_balancing/scan_size_mb"),
            "256\n",
        );
        w(
            &d.path().join("sys/kernel/mm/transparent_hugepage/enabled"),
            "[always] madvise never\n",
        );
        let s = snapshot_settings(&r);
        assert_eq!(s["kernel.numa_balancing"], "1");
        assert_eq!(s["numa_balancing.scan_size_mb"], "256");
        assert_eq!(s["transparent_hugepage/enabled"], "always");
        assert_eq!(s.len(), 3);
    }
}
