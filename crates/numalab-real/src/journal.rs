//! The real-run journal: every host setting a real run changes is written
//! down before it is changed, so that a run that dies without undoing its
//! changes (SIGKILL, a crash, a power cut) can be undone later.
//!
//! The journal lives in the state directory ([`state_dir`]:
//! `$NUMALAB_STATE_DIR`, else `$XDG_STATE_HOME/numalab`, else
//! `$HOME/.local/state/numalab`) as `real-run.json`, written atomically
//! and fsynced ([`numalab_record::write_atomic`]) before each change: a
//! knob's file and old value ([`Journal::add_knob`]), the run's cgroup
//! directory ([`Journal::set_cgroup`]). When the run undoes a change it
//! drops the entry; when nothing is left the file is removed.
//!
//! A run holds `real-run.lock` (flock, with its pid in it) from before
//! its first change until it exits; the kernel releases the lock when the
//! process dies, however it dies. [`Journal::open`] takes the lock and,
//! finding a journal, restores it first: knobs last-changed first, then
//! the cgroup tree removed deepest first. A lock still held means the run
//! that wrote the journal (or one of its children) is alive: that is an
//! error, never a restore under a running run. `numalab real run` opens
//! the journal after its checks pass and before its first change;
//! `numalab real restore` ([`restore`]) only recovers.
//!
//! A journal is input that root acts on, so it is checked first: it must
//! belong to the effective user, knob paths must lie under the knob roots
//! (/proc/sys, /sys, debugfs) without `..`, and the cgroup directory must
//! be named `numalab-PID`; only empty directories are ever removed.
//!
//! Left out: a crash between writing the journal and changing the
//! setting is harmless (the restore writes the value the file still has);
//! a crash while the journal itself is replaced leaves the old journal,
//! which describes a subset of the changes made, never a wrong value.

use crate::knob_roots::KnobRoots;
use crate::RealError;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};

/// The journal's file name in the state directory.
pub const JOURNAL_FILE: &str = "real-run.json";
/// The lock file's name in the state directory.
pub const LOCK_FILE: &str = "real-run.lock";
/// Environment variable naming the state directory (tests, or a host
/// whose home is not writable).
pub const STATE_DIR_ENV: &str = "NUMALAB_STATE_DIR";
/// The `format` field of a journal.
pub const JOURNAL_FORMAT: &str = "numalab-real-journal";

/// A knob changed by the run: where, and the value to put back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobEntry {
    /// Canonical knob name (for messages).
    pub key: String,
    /// The knob's file.
    pub path: PathBuf,
    /// Its value before the run.
    pub old: String,
}

/// The journal file's content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalState {
    /// [`JOURNAL_FORMAT`].
    pub format: String,
    /// 1.
    pub version: u32,
    /// The run that wrote it.
    pub pid: u32,
    /// Knobs changed, in the order they were changed.
    pub knobs: Vec<KnobEntry>,
    /// The run's cgroup directory, once it is about to be created.
    pub cgroup: Option<PathBuf>,
}

impl JournalState {
    fn new() -> JournalState {
        JournalState {
            format: JOURNAL_FORMAT.to_string(),
            version: 1,
            pid: std::process::id(),
            knobs: Vec::new(),
            cgroup: None,
        }
    }

    fn is_empty(&self) -> bool {
        self.knobs.is_empty() && self.cgroup.is_none()
    }
}

/// The state directory: `$NUMALAB_STATE_DIR`, else `$XDG_STATE_HOME/numalab`
/// (when absolute), else `$HOME/.local/state/numalab` (`/root` without
/// `HOME`, as in the VM guest).
pub fn state_dir() -> PathBuf {
    state_dir_from(|n| std::env::var_os(n))
}

/// [`state_dir`] with the environment given as a lookup.
fn state_dir_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    let var = |n: &str| var(n).filter(|v| !v.is_empty());
    if let Some(d) = var(STATE_DIR_ENV) {
        return PathBuf::from(d);
    }
    if let Some(x) = var("XDG_STATE_HOME").map(PathBuf::from) {
        if x.is_absolute() {
            return x.join("numalab");
        }
    }
    let home = var("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".local/state/numalab")
}

/// What [`Journal::open`] restored from a journal left by a run that did
/// not finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovered {
    /// The pid of the run that left it.
    pub pid: u32,
    /// One line per action: `kernel.numa_balancing=1 (/proc/sys/...)`,
    /// `removed cgroup /sys/fs/cgroup/numalab-123`.
    pub actions: Vec<String>,
}

/// The journal of the running run: holds the lock while it lives.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    /// Held with flock until dropped (or the process dies).
    _lock: File,
    state: JournalState,
}

fn failed(e: impl std::fmt::Display) -> RealError {
    RealError::Failed(e.to_string())
}

impl Journal {
    /// Takes the lock of state directory `dir` (creating it) and, when a
    /// journal from a run that did not finish is there, restores what it
    /// records ([`Recovered`]) and removes it. Errors: another run holds
    /// the lock ([`RealError::Refused`]), or a restore failed
    /// ([`RealError::Failed`]; the journal stays for another try).
    pub fn open(dir: &Path, roots: &KnobRoots) -> Result<(Journal, Option<Recovered>), RealError> {
        fs::create_dir_all(dir).map_err(|e| {
            RealError::Refused(format!(
                "state directory {}: {e} (set {STATE_DIR_ENV} to a writable directory)",
                dir.display()
            ))
        })?;
        let lock_path = dir.join(LOCK_FILE);
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| RealError::Refused(format!("{}: {e}", lock_path.display())))?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(RealError::Failed(format!(
                    "locking {}: {e}",
                    lock_path.display()
                )));
            }
            let mut text = String::new();
            let _ = lock.read_to_string(&mut text);
            let who = match text.trim().parse::<u32>() {
                Ok(pid) => format!("pid {pid}"),
                Err(_) => "another process".to_string(),
            };
            return Err(RealError::Refused(format!(
                "another numalab real run ({who}) is running and holds {}: it restores its own \
                 changes when it ends; wait for it",
                lock_path.display()
            )));
        }
        // Our pid in the lock file, for the message above.
        let _ = lock.set_len(0);
        let _ = lock.rewind();
        let _ = writeln!(lock, "{}", std::process::id());
        let _ = lock.flush();
        let mut j = Journal {
            dir: dir.to_path_buf(),
            _lock: lock,
            state: JournalState::new(),
        };
        let recovered = j.recover(roots)?;
        Ok((j, recovered))
    }

    /// The journal file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(JOURNAL_FILE)
    }

    /// What the journal holds now.
    pub fn state(&self) -> &JournalState {
        &self.state
    }

    fn recover(&mut self, roots: &KnobRoots) -> Result<Option<Recovered>, RealError> {
        let path = self.path();
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(failed(format!("{}: {e}", path.display()))),
        };
        check_owner(&path)?;
        let old: JournalState = serde_json::from_str(&text).map_err(|e| {
            failed(format!(
                "{}: not a numalab journal ({e}); check it by hand and remove it",
                path.display()
            ))
        })?;
        if old.format != JOURNAL_FORMAT || old.version != 1 {
            return Err(failed(format!(
                "{}: format {} version {}, expected {JOURNAL_FORMAT} version 1",
                path.display(),
                old.format,
                old.version
            )));
        }
        let actions = restore_state(&old, roots).map_err(|e| {
            failed(format!(
                "restoring what run pid {} left changed ({}): {e}; fix it and run `numalab real restore`",
                old.pid,
                path.display()
            ))
        })?;
        remove_file_synced(&path).map_err(failed)?;
        Ok(Some(Recovered {
            pid: old.pid,
            actions,
        }))
    }

    /// Records knob `key` at `path` with value `old`, before it is changed.
    pub fn add_knob(&mut self, key: &str, path: &Path, old: &str) -> Result<(), String> {
        self.state.knobs.push(KnobEntry {
            key: key.to_string(),
            path: path.to_path_buf(),
            old: old.to_string(),
        });
        self.save()
    }

    /// Every journaled knob has its old value again.
    pub fn knobs_restored(&mut self) -> Result<(), String> {
        self.state.knobs.clear();
        self.save()
    }

    /// Records the run's cgroup directory, before it is created.
    pub fn set_cgroup(&mut self, dir: &Path) -> Result<(), String> {
        self.state.cgroup = Some(dir.to_path_buf());
        self.save()
    }

    /// The run's cgroup directory is gone.
    pub fn cgroup_removed(&mut self) -> Result<(), String> {
        self.state.cgroup = None;
        self.save()
    }

    /// Writes the journal (fsynced), or removes it when it records nothing.
    fn save(&self) -> Result<(), String> {
        let path = self.path();
        if self.state.is_empty() {
            return remove_file_synced(&path);
        }
        let text = serde_json::to_string_pretty(&self.state).map_err(|e| e.to_string())? + "\n";
        numalab_record::write_atomic(&path, text)
            .map_err(|e| format!("journal {}: {e}", path.display()))
    }
}

/// `numalab real restore`: takes the lock of `dir` and restores a journal
/// left there. `None` when there was nothing to restore.
pub fn restore(dir: &Path, roots: &KnobRoots) -> Result<Option<Recovered>, RealError> {
    if !dir.join(JOURNAL_FILE).exists() && !dir.join(LOCK_FILE).exists() {
        // Nothing was ever journaled here: do not create the directory.
        return Ok(None);
    }
    Journal::open(dir, roots).map(|(_, r)| r)
}

fn remove_file_synced(path: &Path) -> Result<(), String> {
    match fs::remove_file(path) {
        Ok(()) => {
            if let Some(d) = path.parent().and_then(|d| File::open(d).ok()) {
                let _ = d.sync_all();
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// A journal root acts on must be the effective user's own.
fn check_owner(path: &Path) -> Result<(), RealError> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(path).map_err(|e| failed(format!("{}: {e}", path.display())))?;
    // SAFETY: no arguments.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me {
        return Err(RealError::Refused(format!(
            "{} belongs to uid {}, not to this user (uid {me}): not restoring from it",
            path.display(),
            m.uid()
        )));
    }
    Ok(())
}

fn plain(p: &Path) -> bool {
    p.is_absolute() && !p.components().any(|c| c == Component::ParentDir)
}

/// Puts back what `s` records: knobs in reverse order, then the cgroup
/// tree. Tries everything; returns the actions, or every failure.
fn restore_state(s: &JournalState, roots: &KnobRoots) -> Result<Vec<String>, String> {
    let mut actions = Vec::new();
    let mut errs = Vec::new();
    for k in s.knobs.iter().rev() {
        let under = [&roots.proc_sys, &roots.debugfs, &roots.sys]
            .iter()
            .any(|r| k.path.starts_with(r));
        if !plain(&k.path) || !under {
            errs.push(format!(
                "knob '{}': {} is not under {}, {} or {}: not written",
                k.key,
                k.path.display(),
                roots.proc_sys.display(),
                roots.sys.display(),
                roots.debugfs.display()
            ));
            continue;
        }
        match fs::write(&k.path, &k.old) {
            Ok(()) => actions.push(format!("{}={} ({})", k.key, k.old, k.path.display())),
            Err(e) => errs.push(format!(
                "could not restore {}={} ({}): {e}",
                k.key,
                k.old,
                k.path.display()
            )),
        }
    }
    if let Some(cg) = &s.cgroup {
        let named = cg.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n.strip_prefix("numalab-")
                .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        });
        if !plain(cg) || !named {
            errs.push(format!(
                "cgroup {}: not a numalab-PID directory: not removed",
                cg.display()
            ));
        } else if cg.exists() {
            match remove_tree(cg) {
                Ok(()) => actions.push(format!("removed cgroup {}", cg.display())),
                Err(e) => errs.push(e),
            }
        }
    }
    if errs.is_empty() {
        Ok(actions)
    } else {
        Err(errs.join("; "))
    }
}

/// Removes directory `top` and the directories below it, deepest first,
/// with `rmdir` only (a cgroup's interface files go with it; any other
/// file makes it fail). Retries briefly while the kernel still reaps the
/// dead run's tasks.
fn remove_tree(top: &Path) -> Result<(), String> {
    let mut dirs = vec![top.to_path_buf()];
    let mut i = 0;
    while i < dirs.len() {
        if let Ok(rd) = fs::read_dir(&dirs[i]) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(e.path());
                }
            }
        }
        i += 1;
    }
    for d in dirs.iter().rev() {
        crate::cgroup::rmdir_retrying(d)
            .map_err(|e| format!("could not remove cgroup {}: {e}", d.display()))?;
    }
    Ok(())
}

impl Recovered {
    /// One line for stderr: what was restored and why.
    pub fn describe(&self) -> String {
        format!(
            "run pid {} did not finish; restored what it left changed: {}",
            self.pid,
            if self.actions.is_empty() {
                "nothing was changed yet".to_string()
            } else {
                self.actions.join(", ")
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::knobs::tests::{roots, w};

    #[test]
    fn a_journal_is_written_before_and_removed_after() {
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("state");
        let r = roots(d.path());
        let (mut j, rec) = Journal::open(&state, &r).unwrap();
        assert!(rec.is_none());
        assert!(!j.path().exists(), "no journal while nothing changed");
        let knob = d.path().join("proc/sys/kernel/numa_balancing");
        j.add_knob("kernel.numa_balancing", &knob, "1").unwrap();
        let on_disk: JournalState =
            serde_json::from_str(&fs::read_to_string(j.path()).unwrap()).unwrap();
        assert_eq!(on_disk, *j.state());
        assert_eq!(on_disk.pid, std::process::id());
        assert_eq!(on_disk.knobs[0].old, "1");
        j.set_cgroup(&d.path().join("cg/numalab-7")).unwrap();
        j.knobs_restored().unwrap();
        assert!(j.path().exists(), "the cgroup is still recorded");
        j.cgroup_removed().unwrap();
        assert!(!j.path().exists());
        // The lock holder is alive: a second open is refused.
        let e = Journal::open(&state, &r).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("pid {}", std::process::id())) && msg.contains("running"),
            "{msg}"
        );
        drop(j);
        assert!(Journal::open(&state, &r).unwrap().1.is_none());
    }

    #[test]
    fn a_left_journal_is_restored_in_reverse_order() {
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("state");
        let r = roots(d.path());
        let a = d.path().join("proc/sys/kernel/numa_balancing");
        let b = d.path().join("debug/sched/numa_balancing/scan_delay_ms");
        w(&a, "0\n");
        w(&b, "5\n");
        let cg = d.path().join("cg/numalab-4242");
        fs::create_dir_all(cg.join("db/shard")).unwrap();
        fs::create_dir_all(cg.join("numalab.root")).unwrap();
        let left = JournalState {
            pid: 4242,
            knobs: vec![
                KnobEntry {
                    key: "kernel.numa_balancing".into(),
                    path: a.clone(),
                    old: "1".into(),
                },
                KnobEntry {
                    key: "numa_balancing.scan_delay_ms".into(),
                    path: b.clone(),
                    old: "1000".into(),
                },
                // The same file twice: the first old value wins.
                KnobEntry {
                    key: "kernel.numa_balancing".into(),
                    path: a.clone(),
                    old: "0".into(),
                },
            ],
            cgroup: Some(cg.clone()),
            ..JournalState::new()
        };
        w(
            &state.join(JOURNAL_FILE),
            &serde_json::to_string(&left).unwrap(),
        );
        let got = restore(&state, &r).unwrap().unwrap();
        assert_eq!(got.pid, 4242);
        assert_eq!(got.actions.len(), 4, "{:?}", got.actions);
        assert!(got.describe().contains("run pid 4242 did not finish"));
        assert_eq!(fs::read_to_string(&a).unwrap(), "1");
        assert_eq!(fs::read_to_string(&b).unwrap(), "1000");
        assert!(!cg.exists());
        assert!(!state.join(JOURNAL_FILE).exists());
        assert!(restore(&state, &r).unwrap().is_none());
    }

    #[test]
    fn hostile_journals_are_not_acted_on() {
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("state");
        let r = roots(d.path());
        let outside = d.path().join("etc/passwd");
        w(&outside, "root\n");
        let notnumalab = d.path().join("cg/important");
        fs::create_dir_all(&notnumalab).unwrap();
        let left = JournalState {
            knobs: vec![
                KnobEntry {
                    key: "x".into(),
                    path: outside.clone(),
                    old: "pwned".into(),
                },
                KnobEntry {
                    key: "y".into(),
                    path: d.path().join("proc/sys/../../etc/passwd"),
                    old: "pwned".into(),
                },
            ],
            cgroup: Some(notnumalab.clone()),
            ..JournalState::new()
        };
        w(
            &state.join(JOURNAL_FILE),
            &serde_json::to_string(&left).unwrap(),
        );
        let e = restore(&state, &r).unwrap_err();
        let msg = e.to_string();
        assert_eq!(e.exit_code(), 1);
        assert!(
            msg.contains("knob 'x'") && msg.contains("knob 'y'") && msg.contains("not removed"),
            "{msg}"
        );
        assert_eq!(fs::read_to_string(&outside).unwrap(), "root\n");
        assert!(notnumalab.exists());
        assert!(state.join(JOURNAL_FILE).exists(), "kept for another try");
        // Garbage is refused, not guessed at.
        w(&state.join(JOURNAL_FILE), "{\"format\":");
        assert!(restore(&state, &r)
            .unwrap_err()
            .to_string()
            .contains("not a numalab journal"));
    }

    #[test]
    fn nothing_to_restore_creates_nothing() {
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("never-used");
        assert!(restore(&state, &roots(d.path())).unwrap().is_none());
        assert!(!state.exists());
    }

    #[test]
    fn the_state_dir_follows_the_environment_rules() {
        fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<std::ffi::OsString> {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            move |n: &str| pairs.iter().find(|(k, _)| k == n).map(|(_, v)| v.into())
        }
        let all = [
            (STATE_DIR_ENV, "/t/s"),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(state_dir_from(env(&all)), PathBuf::from("/t/s"));
        assert_eq!(state_dir_from(env(&all[1..])), PathBuf::from("/x/numalab"));
        let rel = [("XDG_STATE_HOME", "rel"), ("HOME", "/h")];
        assert_eq!(
            state_dir_from(env(&rel)),
            PathBuf::from("/h/.local/state/numalab")
        );
        assert_eq!(
            state_dir_from(env(&[(STATE_DIR_ENV, "")])),
            PathBuf::from("/root/.local/state/numalab")
        );
    }
}
