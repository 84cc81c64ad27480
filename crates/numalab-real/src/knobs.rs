//! Kernel knobs named as in `--set KEY=VALUE`: where they live, and
//! setting them for a run with the old values restored afterwards.
//!
//! Names follow the real kernel (and the model's `--set`):
//! - sysctl names, `kernel.numa_balancing` → /proc/sys/kernel/numa_balancing;
//! - debugfs NUMA balancing tunables, `numa_balancing.scan_delay_ms` (the
//!   model's name; also written `numa_balancing/...`,
//!   `sched/numa_balancing/...`, or with the pre-5.13 sysctl names
//!   `kernel.numa_balancing_scan_delay_ms` when the sysctl no longer exists)
//!   → /sys/kernel/debug/sched/numa_balancing/scan_delay_ms;
//! - `numalab.*` lab settings: `numalab.sample_interval_ms` sets the
//!   sampling interval; `CONFIG_HZ` and other lab knobs are refused, a real
//!   kernel fixes them;
//! - /sys/kernel/mm files: `transparent_hugepage/enabled`,
//!   `numa/demotion_enabled`, `mempolicy/weighted_interleave/node0`;
//! - absolute paths under /proc/sys or /sys;
//! - `CGROUP_PATH:FILE` (e.g. `/db:cpuset.cpus`), a file of one of the
//!   workload's cgroups: written into the run's own cgroup, which is removed
//!   afterwards, so nothing needs restoring.
//!
//! [`KnobGuard`] writes values in order and restores the saved ones in
//! reverse order, on [`KnobGuard::restore`] or on drop (an early return, an
//! error, a caught signal). Left out: restoring after SIGKILL of numalab
//! itself, which nothing can catch.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// Where the knob filesystems are (a test points them at a fake tree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnobRoots {
    /// procfs sysctl directory, normally /proc/sys.
    pub proc_sys: PathBuf,
    /// debugfs mount, normally /sys/kernel/debug.
    pub debugfs: PathBuf,
    /// sysfs mount, normally /sys.
    pub sys: PathBuf,
}

impl Default for KnobRoots {
    fn default() -> Self {
        KnobRoots {
            proc_sys: PathBuf::from("/proc/sys"),
            debugfs: PathBuf::from("/sys/kernel/debug"),
            sys: PathBuf::from("/sys"),
        }
    }
}

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

/// Legacy sysctl names of the tunables that moved to debugfs in Linux 5.13.
const LEGACY_DEBUGFS: [&str; 4] = [
    "numa_balancing_scan_delay_ms",
    "numa_balancing_scan_period_min_ms",
    "numa_balancing_scan_period_max_ms",
    "numa_balancing_scan_size_mb",
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
    Ok((k.to_string(), v.trim().to_string()))
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
    if let Some((cg, file)) = key.split_once(':') {
        if !cg.starts_with('/') {
            return Err(format!("knob '{key}': cgroup path must start with '/'"));
        }
        crate::cgroup::path_components(cg).map_err(|e| format!("knob '{key}': {e}"))?;
        if file.is_empty() || file.contains('/') || !file.contains('.') {
            return Err(format!(
                "knob '{key}': '{file}' is not a cgroup interface file (like cpuset.cpus)"
            ));
        }
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
    if key.starts_with("numalab.") || key == "CONFIG_HZ" || key == "config.hz" {
        return Ok(Knob::Lab {
            key: key.to_string(),
        });
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
    let path = roots.proc_sys.join(key.replace('.', "/"));
    if !path.exists() {
        if let Some(name) = key.strip_prefix("kernel.") {
            if LEGACY_DEBUGFS.contains(&name) {
                let file = name.trim_start_matches("numa_balancing_");
                return Ok(Knob::File {
                    key: format!("numa_balancing.{file}"),
                    path: roots.debugfs.join("sched/numa_balancing").join(file),
                    debugfs: true,
                });
            }
        }
    }
    Ok(Knob::File {
        key: key.to_string(),
        path,
        debugfs: false,
    })
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
        let mut g = KnobGuard::default();
        for (key, path, value) in changes {
            let old = match fs::read_to_string(path) {
                Ok(t) => knob_value(&t),
                Err(e) => {
                    let undo = g.restore();
                    return Err(format!(
                        "knob '{key}': cannot read {}: {e}{}",
                        path.display(),
                        undo.err().map(|u| format!("; {u}")).unwrap_or_default()
                    ));
                }
            };
            if let Err(e) = fs::write(path, value) {
                let undo = g.restore();
                return Err(format!(
                    "knob '{key}': the kernel refused '{value}' for {}: {e}{}",
                    path.display(),
                    undo.err().map(|u| format!("; {u}")).unwrap_or_default()
                ));
            }
            g.saved.push((key.clone(), path.clone(), old));
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
    for name in [
        "kernel.numa_balancing",
        "kernel.numa_balancing_promote_rate_limit_MBps",
        "kernel.sched_schedstats",
    ] {
        if let Ok(t) = fs::read_to_string(roots.proc_sys.join(name.replace('.', "/"))) {
            m.insert(name.to_string(), knob_value(&t));
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
mod tests {
    use super::*;

    fn roots(d: &Path) -> KnobRoots {
        KnobRoots {
            proc_sys: d.join("proc/sys"),
            debugfs: d.join("debug"),
            sys: d.join("sys"),
        }
    }

    fn w(p: &Path, t: &str) {
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
