//! Cgroup file writes in a model run: the `[[cgroup]]` files and
//! `--set CGROUP:FILE=VALUE` settings applied when a run is set up, and a
//! workload phase's typed write ([`CgroupFileWrite`], typed once by the
//! workload check) applied while tasks run. Left out: files the model does
//! not declare, which are kept on the cgroup without effect.

use crate::kernel::{CgroupId, Kernel};
use numalab_topology::{CpuSet, NodeMask};
use numalab_workload::CgroupFileWrite;

/// The cgroup at `path`, for a write to `file` (named in the error).
fn cgroup_for_write(k: &Kernel, path: &str, file: &str) -> Result<CgroupId, String> {
    k.cgroups
        .find(path)
        .ok_or_else(|| format!("--set {path}:{file}: cgroup {path} does not exist in the workload"))
}

/// Writes `value` to cgroup file `file` of `path` (a `--set CGROUP:FILE=VALUE`
/// or a `[[cgroup]]` file): the cpuset lists are checked against the
/// machine; a file a phase may also write is typed as the workload check
/// types it ([`CgroupFileWrite::parse`]); any other file is kept without
/// effect.
pub(super) fn apply_cgroup_file(
    k: &mut Kernel,
    path: &str,
    file: &str,
    value: &str,
) -> Result<(), String> {
    let id = cgroup_for_write(k, path, file)?;
    match file {
        "cpuset.cpus" => {
            let c = CpuSet::parse_list(value).map_err(|e| format!("--set {path}:{file}: {e}"))?;
            if c.last().is_some_and(|x| x >= k.m.nr_cpus()) {
                return Err(format!(
                    "--set {path}:{file}: CPU {} does not exist",
                    c.last().unwrap_or(0)
                ));
            }
            k.cgroups.all[id].cpus = Some(c.clone());
            k.cgroups.all[id].effective_cpus = c;
        }
        "cpuset.mems" => {
            let m = NodeMask::parse_list(value).map_err(|e| format!("--set {path}:{file}: {e}"))?;
            if m.iter().any(|n| n >= k.m.nr_nodes()) {
                return Err(format!("--set {path}:{file}: node does not exist"));
            }
            k.cgroups.all[id].mems = Some(m);
            k.cgroups.all[id].effective_mems = m;
        }
        _ => match CgroupFileWrite::parse(file, value) {
            Some(w) => {
                let w = w.map_err(|e| format!("{path}:{file}={value}: {e}"))?;
                write_cgroup_file(k, id, w);
            }
            None => {
                k.cgroups.all[id]
                    .files
                    .insert(file.to_string(), value.to_string());
            }
        },
    }
    Ok(())
}

/// Applies a workload phase's typed cgroup write to the cgroup at `path`.
pub(super) fn apply_cgroup_write(
    k: &mut Kernel,
    path: &str,
    w: CgroupFileWrite,
) -> Result<(), String> {
    let id = cgroup_for_write(k, path, w.file())?;
    write_cgroup_file(k, id, w);
    Ok(())
}

/// The kernel side of a typed cgroup write: the file's write handler.
fn write_cgroup_file(k: &mut Kernel, id: CgroupId, w: CgroupFileWrite) {
    match w {
        CgroupFileWrite::NumaLoadBalance(on) => k.cgroups.numa_balance_write(id, on),
    }
}
