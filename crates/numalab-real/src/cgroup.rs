//! The run's cgroup v2 groups: one dedicated parent, the workload's
//! cgroups below it, removed afterwards.
//!
//! A workload cgroup path such as `/db/shard1` becomes
//! `<cgroup2 mount>/numalab-<pid>/db/shard1`. Processes the workload puts
//! in `/` go to a leaf `numalab-<pid>/numalab.root` (cgroup v2 allows no
//! processes in a group that delegates controllers), and the record's `/`
//! stands for the parent `numalab-<pid>`, which counts every task of the
//! run. Controllers are enabled top-down where needed: `memory` whenever the
//! hierarchy offers it (for memory.stat), `cpuset` when a group sets
//! cpuset.cpus or cpuset.mems, and the controller named by any other file
//! written (`cpu.weight` needs `cpu`).
//!
//! [`CgroupTree`] removes its directories, deepest first, on
//! [`CgroupTree::remove`] or on drop. Left out: cgroup v1, threaded
//! cgroups, and moving the calling process itself.

use std::fs;
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::Duration;

/// Name of the leaf that holds the workload's processes of `/`.
pub const ROOT_LEAF: &str = "numalab.root";

/// The cgroup2 mount in /proc/self/mounts text: /sys/fs/cgroup when it is
/// cgroup2, else the first cgroup2 mount (e.g. /sys/fs/cgroup/unified on a
/// hybrid host).
pub fn find_cgroup2_mount(mounts: &str) -> Option<PathBuf> {
    let all: Vec<PathBuf> = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && f[2] == "cgroup2")
                .then(|| PathBuf::from(crate::mounts::unescape_mount(f[1])))
        })
        .collect();
    all.iter()
        .find(|p| p.as_path() == Path::new("/sys/fs/cgroup"))
        .or_else(|| all.first())
        .cloned()
}

/// Splits a workload cgroup path (`/`, `/a`, `/a/b`) into names, refusing
/// anything that would leave the run's parent or clash with interface files.
pub fn path_components(path: &str) -> Result<Vec<String>, String> {
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| format!("cgroup path '{path}' must start with '/'"))?;
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for name in rest.split('/') {
        if name.is_empty() || name == "." || name == ".." {
            return Err(format!("cgroup path '{path}': bad component '{name}'"));
        }
        if name == ROOT_LEAF || name.starts_with("cgroup.") {
            return Err(format!("cgroup path '{path}': '{name}' is a reserved name"));
        }
        if name.len() > 200 || name.chars().any(|c| c.is_control() || c == '\0') {
            return Err(format!("cgroup path '{path}': bad component '{name}'"));
        }
        out.push(name.to_string());
    }
    Ok(out)
}

/// Directory of a workload cgroup under the run's parent; `/` is the parent
/// itself.
pub fn host_dir(parent: &Path, path: &str) -> Result<PathBuf, String> {
    let mut p = parent.to_path_buf();
    for c in path_components(path)? {
        p.push(c);
    }
    Ok(p)
}

/// Controller that owns an interface file (`cpuset.cpus` → `cpuset`);
/// `None` for core files (`cgroup.*`) that need no controller.
pub fn controller_of(file: &str) -> Option<&str> {
    let c = file.split('.').next()?;
    (c != "cgroup").then_some(c)
}

/// One group to create: workload path and the files to write into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPlan {
    /// Workload path, e.g. `/db`.
    pub path: String,
    /// Files to write, in order.
    pub files: Vec<(String, String)>,
}

/// The run's cgroup directories.
#[derive(Debug)]
pub struct CgroupTree {
    parent: PathBuf,
    created: Vec<PathBuf>,
    root_leaf: Option<PathBuf>,
}

fn write_file(dir: &Path, file: &str, value: &str) -> Result<(), String> {
    let p = dir.join(file);
    fs::write(&p, value).map_err(|e| format!("cgroup: writing '{value}' to {}: {e}", p.display()))
}

impl CgroupTree {
    /// Creates `<mount>/<name>`, enables `controllers` in it (and in every
    /// group that has children), creates the groups (parents first), and a
    /// root leaf when `need_root_leaf`. Writes the files last. On error,
    /// removes what it made.
    pub fn create(
        mount: &Path,
        name: &str,
        controllers: &[String],
        groups: &[GroupPlan],
        need_root_leaf: bool,
    ) -> Result<CgroupTree, String> {
        let parent = mount.join(name);
        let mut t = CgroupTree {
            parent: parent.clone(),
            created: Vec::new(),
            root_leaf: None,
        };
        t.mkdir(&parent)?;
        let enable: String = controllers.iter().map(|c| format!("+{c} ")).collect();
        let enable = enable.trim_end();
        let has_children = |path: &str| {
            let prefix = if path == "/" {
                "/".to_string()
            } else {
                format!("{path}/")
            };
            groups
                .iter()
                .any(|g| g.path != path && g.path.starts_with(&prefix))
        };
        if !enable.is_empty() && (need_root_leaf || !groups.is_empty()) {
            write_file(&parent, "cgroup.subtree_control", enable)?;
        }
        for g in groups {
            let dir = host_dir(&parent, &g.path)?;
            if dir == parent {
                continue;
            }
            if !dir.exists() {
                t.mkdir(&dir)?;
            }
            if !enable.is_empty() && has_children(&g.path) {
                write_file(&dir, "cgroup.subtree_control", enable)?;
            }
        }
        if need_root_leaf {
            let leaf = parent.join(ROOT_LEAF);
            t.mkdir(&leaf)?;
            t.root_leaf = Some(leaf);
        }
        for g in groups {
            let dir = host_dir(&parent, &g.path)?;
            for (f, v) in &g.files {
                write_file(&dir, f, v)?;
            }
        }
        Ok(t)
    }

    fn mkdir(&mut self, dir: &Path) -> Result<(), String> {
        fs::create_dir(dir).map_err(|e| format!("cgroup: cannot create {}: {e}", dir.display()))?;
        self.created.push(dir.to_path_buf());
        Ok(())
    }

    /// The run's parent directory (the record's `/`).
    pub fn parent(&self) -> &Path {
        &self.parent
    }

    /// Directory holding the processes of workload cgroup `path`.
    pub fn procs_dir(&self, path: &str) -> Result<PathBuf, String> {
        if path == "/" {
            return self
                .root_leaf
                .clone()
                .ok_or_else(|| "cgroup: no root leaf was created".to_string());
        }
        host_dir(&self.parent, path)
    }

    /// Directory whose figures stand for workload cgroup `path`.
    pub fn stats_dir(&self, path: &str) -> Result<PathBuf, String> {
        host_dir(&self.parent, path)
    }

    /// Moves process `pid` into workload cgroup `path`.
    pub fn add_pid(&self, path: &str, pid: i32) -> Result<(), String> {
        write_file(&self.procs_dir(path)?, "cgroup.procs", &pid.to_string())
    }

    /// Removes the directories, deepest first, retrying briefly while the
    /// kernel still reaps exiting tasks.
    pub fn remove(&mut self) -> Result<(), String> {
        let mut errs = Vec::new();
        while let Some(dir) = self.created.pop() {
            if let Err(e) = rmdir_retrying(&dir) {
                errs.push(format!("cgroup: could not remove {}: {e}", dir.display()));
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }
}

/// `rmdir` of a cgroup directory, retried for up to ~4 s while the kernel
/// answers EBUSY because it is still reaping the cgroup's exiting tasks.
/// A directory that is already gone counts as removed.
pub(crate) fn rmdir_retrying(dir: &Path) -> std::io::Result<()> {
    let mut attempt = 0;
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt < 50 => {
                sleep(Duration::from_millis(if attempt < 10 { 10 } else { 100 }));
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

impl Drop for CgroupTree {
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            eprintln!("numalab: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount() {
        let hybrid = "cgroup /sys/fs/cgroup/cpu cgroup rw 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";
        assert_eq!(
            find_cgroup2_mount(hybrid).unwrap(),
            PathBuf::from("/sys/fs/cgroup/unified")
        );
        let unified = "cgroup2 /mnt/x cgroup2 rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n";
        assert_eq!(
            find_cgroup2_mount(unified).unwrap(),
            PathBuf::from("/sys/fs/cgroup")
        );
        assert!(find_cgroup2_mount("proc /proc proc rw 0 0\n").is_none());
    }

    #[test]
    fn paths_stay_under_the_parent() {
        assert_eq!(path_components("/").unwrap(), Vec::<String>::new());
        assert_eq!(path_components("/a/b").unwrap(), vec!["a", "b"]);
        for bad in [
            "a",
            "/a/../b",
            "/a//b",
            "/.",
            "/numalab.root",
            "/cgroup.procs",
            "/a/",
        ] {
            assert!(path_components(bad).is_err(), "{bad}");
        }
        let p = Path::new("/sys/fs/cgroup/numalab-7");
        assert_eq!(host_dir(p, "/").unwrap(), p);
        assert_eq!(host_dir(p, "/db/s1").unwrap(), p.join("db/s1"));
        assert_eq!(controller_of("cpuset.mems"), Some("cpuset"));
        assert_eq!(controller_of("cgroup.procs"), None);
    }

    /// On a plain directory tree, creation and removal follow the plan.
    #[test]
    fn tree_is_created_and_removed() {
        let d = tempfile::tempdir().unwrap();
        let groups = vec![
            GroupPlan {
                path: "/a".into(),
                files: vec![],
            },
            GroupPlan {
                path: "/a/b".into(),
                files: vec![("cpuset.cpus".into(), "0".into())],
            },
        ];
        let mut t =
            CgroupTree::create(d.path(), "numalab-1", &["memory".into()], &groups, true).unwrap();
        let parent = d.path().join("numalab-1");
        assert_eq!(
            fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap(),
            "+memory"
        );
        assert_eq!(
            fs::read_to_string(parent.join("a/cgroup.subtree_control")).unwrap(),
            "+memory"
        );
        assert!(!parent.join("a/b/cgroup.subtree_control").exists());
        assert_eq!(
            fs::read_to_string(parent.join("a/b/cpuset.cpus")).unwrap(),
            "0"
        );
        assert_eq!(t.procs_dir("/").unwrap(), parent.join(ROOT_LEAF));
        assert_eq!(t.stats_dir("/").unwrap(), parent);
        assert_eq!(t.procs_dir("/a/b").unwrap(), parent.join("a/b"));
        // Plain directories with files are not removable by rmdir: clear the
        // files a kernel would provide itself.
        for f in [
            "cgroup.subtree_control",
            "a/cgroup.subtree_control",
            "a/b/cpuset.cpus",
        ] {
            fs::remove_file(parent.join(f)).unwrap();
        }
        t.remove().unwrap();
        assert!(!parent.exists());
    }

    #[test]
    fn failed_creation_cleans_up() {
        let d = tempfile::tempdir().unwrap();
        let groups = vec![GroupPlan {
            path: "/a".into(),
            files: vec![("no/such.file".into(), "1".into())],
        }];
        let e = CgroupTree::create(d.path(), "numalab-2", &[], &groups, false).unwrap_err();
        assert!(e.contains("no/such.file"), "{e}");
        assert!(!d.path().join("numalab-2").exists());
    }
}
