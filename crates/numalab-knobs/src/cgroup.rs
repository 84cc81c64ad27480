//! Cgroup interface files a `--set CGROUP:FILE=VALUE` may write in a model
//! run, declared once with the kind of value they hold.
//!
//! The registry checks the file name; the value is checked by the model
//! when the cgroup exists, against the machine (a CPU list names CPUs the
//! machine must have). A real run passes any cgroup interface file
//! through to the kernel. `cpu.numa_load_balance` is proposal 4's (Chen
//! Yu, 2025): not in mainline; the cpuset files are set before a run
//! starts, while a flag file may also be written by a workload phase
//! during a run ([`CgroupFile::during_run`]). Left out: every other cgroup
//! v2 file.

/// The kind of value a cgroup file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupValue {
    /// A CPU list such as `0-3,8`.
    CpuList,
    /// A node list such as `0,2`.
    NodeList,
    /// `0` or `1` (a `read_u64`/`write_u64` flag file).
    Flag,
}

impl CgroupValue {
    /// The kind as `list knobs` shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            CgroupValue::CpuList => "cpu list",
            CgroupValue::NodeList => "node list",
            CgroupValue::Flag => "0 or 1",
        }
    }

    /// Checks a flag value (`0` or `1`); lists are checked against the
    /// machine by the model, which knows its CPUs and nodes.
    pub fn check_flag(value: &str) -> Result<bool, String> {
        match value.trim() {
            "0" => Ok(false),
            "1" => Ok(true),
            v => Err(format!("'{v}' is not 0 or 1")),
        }
    }
}

/// One declared cgroup file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CgroupFile {
    /// File name, e.g. `cpuset.cpus`.
    pub name: &'static str,
    /// What it holds.
    pub value: CgroupValue,
    /// The kernel source it stands for.
    pub source: &'static str,
    /// What it does.
    pub description: &'static str,
    /// True when a workload phase may write it while tasks run (its
    /// effect is read at each use); the cpuset files are set up front.
    pub during_run: bool,
}

/// Every cgroup file the model understands.
pub const CGROUP_FILES: &[CgroupFile] = &[
    CgroupFile {
        name: "cpuset.cpus",
        value: CgroupValue::CpuList,
        source: "kernel/cgroup/cpuset.c cpuset_write_resmask()",
        description: "CPUs the cgroup's tasks may run on",
        during_run: false,
    },
    CgroupFile {
        name: "cpuset.mems",
        value: CgroupValue::NodeList,
        source: "kernel/cgroup/cpuset.c cpuset_write_resmask()",
        description: "nodes the cgroup's tasks may allocate from",
        during_run: false,
    },
    CgroupFile {
        name: "cpu.numa_load_balance",
        value: CgroupValue::Flag,
        source: "proposal 4 (Chen Yu, 2025, not in mainline): kernel/sched/core.c numa_balance_write_u64(), tg->nlb_enabled, read by fair.c tg_numa_balance_enabled()",
        description: "in kernel.numa_balancing=4, 1 lets NUMA balancing scan the cgroup's tasks and account their hinting faults; every cgroup starts at 0. With numalab.numa_balancing_cgroup_hierarchy=1 every ancestor below the root must be 1 too (the root's file governs only the root's own tasks)",
        during_run: true,
    },
];

/// The declared cgroup file called `name`.
pub fn cgroup_file(name: &str) -> Option<&'static CgroupFile> {
    CGROUP_FILES.iter().find(|f| f.name == name)
}

/// Splits a `--set` key of the form `CGROUP:FILE` (`/mytest:cpuset.cpus`):
/// `Ok(None)` for any other key, an error naming what is wrong when the
/// cgroup path does not start with `/` or the file is not an interface
/// file name (`controller.name`, no `/`). The one parser of this syntax:
/// the model then accepts the files it declares ([`cgroup_file`]), a real
/// run any interface file.
pub fn split_cgroup_key(key: &str) -> Result<Option<(&str, &str)>, String> {
    let Some((cg, file)) = key.split_once(':') else {
        return Ok(None);
    };
    if !cg.starts_with('/') {
        return Err(format!(
            "--set {key}: the cgroup path must start with '/' (like /mytest)"
        ));
    }
    if file.is_empty() || file.contains('/') || !file.contains('.') {
        return Err(format!(
            "--set {key}: '{file}' is not a cgroup interface file (like cpuset.cpus)"
        ));
    }
    Ok(Some((cg, file)))
}

#[cfg(test)]
mod split_tests {
    use super::split_cgroup_key;

    #[test]
    fn cgroup_keys_are_split_once_and_checked() {
        assert_eq!(split_cgroup_key("kernel.numa_balancing"), Ok(None));
        assert_eq!(
            split_cgroup_key("/a/b:cpuset.cpus"),
            Ok(Some(("/a/b", "cpuset.cpus")))
        );
        for bad in ["mytest:cpuset.cpus", "/a:", "/a:cpus", "/a:x/y.z"] {
            assert!(split_cgroup_key(bad).is_err(), "{bad}");
        }
    }
}
