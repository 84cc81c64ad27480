//! Cgroup interface files a `--set CGROUP:FILE=VALUE` may write in a model
//! run, declared once with the kind of value they hold.
//!
//! The registry checks the file name; the value is checked by the model
//! when the cgroup exists, against the machine (a CPU list names CPUs the
//! machine must have). A real run passes any cgroup interface file
//! through to the kernel. Left out: every other cgroup v2 file.

/// The kind of value a cgroup file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupValue {
    /// A CPU list such as `0-3,8`.
    CpuList,
    /// A node list such as `0,2`.
    NodeList,
}

impl CgroupValue {
    /// The kind as `list knobs` shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            CgroupValue::CpuList => "cpu list",
            CgroupValue::NodeList => "node list",
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
}

/// Every cgroup file the model understands.
pub const CGROUP_FILES: &[CgroupFile] = &[
    CgroupFile {
        name: "cpuset.cpus",
        value: CgroupValue::CpuList,
        source: "kernel/cgroup/cpuset.c cpuset_write_resmask()",
        description: "CPUs the cgroup's tasks may run on",
    },
    CgroupFile {
        name: "cpuset.mems",
        value: CgroupValue::NodeList,
        source: "kernel/cgroup/cpuset.c cpuset_write_resmask()",
        description: "nodes the cgroup's tasks may allocate from",
    },
];

/// The declared cgroup file called `name`.
pub fn cgroup_file(name: &str) -> Option<&'static CgroupFile> {
    CGROUP_FILES.iter().find(|f| f.name == name)
}
