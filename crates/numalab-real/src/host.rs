//! The host as a [`Machine`], and the facts a real run checks before it
//! changes anything.
//!
//! [`host_machine`] reads /sys/devices/system/node and
//! /sys/devices/system/cpu (node cpulists, per-node MemTotal, SLIT
//! distances, package/core/thread siblings, the last-level cache's
//! shared_cpu_list) so workloads can be resolved against the box they will
//! run on. The physics constants (latencies, bandwidths) are not measured:
//! they are placeholders, and `sources` says so.
//!
//! [`HostFacts`] collects what the refusal checks need: online and allowed
//! CPUs, nodes with memory, MemAvailable and per-node MemFree, the
//! effective uid, the cgroup v2 mount and its delegated controllers, and
//! where tracefs and debugfs are mounted.
//!
//! Left out: CPU-less memory nodes' tiers, hotplug while a run is going on,
//! sparse (non-contiguous) node or CPU ids, which are refused.

use crate::cgroup;
use crate::mounts::find_mount;
use crate::sample::parse_meminfo;
use crate::sys;
use numalab_topology::{Bandwidth, Cpu, CpuSet, Machine, Node};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Placeholder idle local latency, in ns, scaled by SLIT distance / 10.
pub const PLACEHOLDER_LOCAL_LATENCY_NS: f64 = 100.0;

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_usize(path: &Path) -> Result<usize, String> {
    let s = read(path)?;
    s.trim()
        .parse::<i64>()
        .map(|v| v.max(0) as usize)
        .map_err(|_| format!("{}: not a number: {:?}", path.display(), s.trim()))
}

fn parse_list(path: &Path) -> Result<CpuSet, String> {
    CpuSet::parse_list(&read(path)?).map_err(|e| format!("{}: {e}", path.display()))
}

/// The running host as a [`Machine`], read from /sys.
pub fn host_machine() -> Result<Machine, String> {
    let mut m = host_machine_from(Path::new("/sys"))?;
    m.sources.insert(
        0,
        format!(
            "host topology read from /sys/devices/system/{{node,cpu}} (kernel {})",
            sys::uname_release()
        ),
    );
    Ok(m)
}

/// Reads a machine from a sysfs tree rooted at `sys` (normally `/sys`; a
/// test passes a fake tree).
pub fn host_machine_from(sys: &Path) -> Result<Machine, String> {
    let node_dir = sys.join("devices/system/node");
    let cpu_dir = sys.join("devices/system/cpu");
    let online_cpus = parse_list(&cpu_dir.join("online"))?;
    let nr_cpus = online_cpus.len();
    if nr_cpus == 0 {
        return Err("no online CPU found in /sys/devices/system/cpu/online".to_string());
    }
    if online_cpus.last() != Some(nr_cpus - 1) {
        return Err(format!(
            "online CPUs {online_cpus} are not numbered 0..{}: offline CPUs in between are not supported",
            nr_cpus - 1
        ));
    }
    // Nodes: a kernel without CONFIG_NUMA has no node directory: one node.
    let node_ids: Vec<usize> = if node_dir.join("online").exists() {
        parse_list(&node_dir.join("online"))?.iter().collect()
    } else {
        vec![0]
    };
    for (i, &n) in node_ids.iter().enumerate() {
        if i != n {
            return Err(format!(
                "online nodes {:?} are not numbered 0..{}: sparse node ids are not supported",
                node_ids,
                node_ids.len() - 1
            ));
        }
    }
    let nr_nodes = node_ids.len();
    let mut node_of_cpu = vec![usize::MAX; nr_cpus];
    let mut nodes = Vec::new();
    let mut distance = Vec::new();
    for &n in &node_ids {
        let nd = node_dir.join(format!("node{n}"));
        let (cpus, mem_bytes, dist) = if nd.exists() {
            let cpus = parse_list(&nd.join("cpulist"))?;
            let meminfo = read(&nd.join("meminfo"))?;
            let mem_kb = meminfo
                .lines()
                .find_map(|l| {
                    let rest = l.split_once("MemTotal:")?.1;
                    rest.split_whitespace().next()?.parse::<u64>().ok()
                })
                .ok_or_else(|| format!("{}: no MemTotal line", nd.join("meminfo").display()))?;
            let dist: Vec<u32> = read(&nd.join("distance"))?
                .split_whitespace()
                .map(|t| t.parse::<u32>())
                .collect::<Result<_, _>>()
                .map_err(|_| format!("{}: not a distance row", nd.join("distance").display()))?;
            (cpus, mem_kb * 1024, dist)
        } else {
            let mi = read(Path::new("/proc/meminfo"))?;
            let kb = parse_meminfo(&mi).get("MemTotal").copied().unwrap_or(0);
            (online_cpus.clone(), kb * 1024, vec![10])
        };
        if dist.len() != nr_nodes {
            return Err(format!(
                "node{n}/distance has {} entries for {nr_nodes} nodes",
                dist.len()
            ));
        }
        let cpus = cpus.and(&online_cpus);
        for c in cpus.iter() {
            node_of_cpu[c] = n;
        }
        distance.push(dist);
        nodes.push(Node {
            id: n,
            package: 0,
            cpus,
            mem_bytes,
        });
    }
    if let Some(c) = node_of_cpu.iter().position(|&n| n == usize::MAX) {
        return Err(format!("CPU {c} is online but in no node's cpulist"));
    }
    // CPUs: package, machine-wide core id, SMT index, LLC id.
    let mut core_ids: BTreeMap<(usize, usize, usize), usize> = BTreeMap::new();
    let mut llc_ids: BTreeMap<String, usize> = BTreeMap::new();
    let mut cpus = Vec::new();
    for (c, &node) in node_of_cpu.iter().enumerate() {
        let cd = cpu_dir.join(format!("cpu{c}"));
        let topo = cd.join("topology");
        let package = read_usize(&topo.join("physical_package_id")).unwrap_or(0);
        let die = read_usize(&topo.join("die_id")).unwrap_or(0);
        let core_local = read_usize(&topo.join("core_id")).unwrap_or(c);
        let siblings = parse_list(&topo.join("thread_siblings_list"))
            .unwrap_or_else(|_| std::iter::once(c).collect());
        let smt = siblings.iter().position(|s| s == c).unwrap_or(0);
        let next = core_ids.len();
        let core = *core_ids.entry((package, die, core_local)).or_insert(next);
        let llc_key = llc_shared_list(&cd).unwrap_or_else(|| format!("node{}", node));
        let next = llc_ids.len();
        let llc = *llc_ids.entry(llc_key).or_insert(next);
        cpus.push(Cpu {
            id: c,
            node,
            package,
            core,
            llc,
            smt,
        });
    }
    for node in &mut nodes {
        if let Some(c) = node.cpus.first() {
            node.package = cpus[c].package;
        }
    }
    let latency_ns = distance
        .iter()
        .map(|row| {
            row.iter()
                .map(|&d| PLACEHOLDER_LOCAL_LATENCY_NS * d as f64 / 10.0)
                .collect()
        })
        .collect();
    let bandwidth = Bandwidth {
        node_gbps: vec![20.0; nr_nodes],
        link_gbps: 20.0,
        same_package_link_gbps: 40.0,
        core_gbps: 10.0,
        smt_throughput: 1.2,
    };
    let packages: Vec<usize> = nodes.iter().map(|n| n.package).collect();
    Ok(Machine {
        links: numalab_topology::default_links(
            &packages,
            bandwidth.link_gbps,
            bandwidth.same_package_link_gbps,
        ),
        coherence: Default::default(),
        name: "host".to_string(),
        description: format!("this host: {nr_nodes} node(s), {nr_cpus} CPU(s)"),
        cpus,
        nodes,
        distance,
        latency_ns,
        bandwidth,
        sources: vec![
            "UNMEASURED placeholder: latency_ns = 100 ns x SLIT distance / 10".to_string(),
            "UNMEASURED placeholder: bandwidth node 20 GB/s, link 20 GB/s, same-package link 40 GB/s, core 10 GB/s, SMT throughput 1.2"
                .to_string(),
        ],
        kernel: Default::default(),
    })
}

/// shared_cpu_list of the highest-level cache of a CPU.
fn llc_shared_list(cpu_dir: &Path) -> Option<String> {
    let cache = cpu_dir.join("cache");
    let mut best: Option<(usize, String)> = None;
    for e in fs::read_dir(&cache).ok()?.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("index") {
            continue;
        }
        let level = read_usize(&e.path().join("level")).ok()?;
        let ty = read(&e.path().join("type")).unwrap_or_default();
        if ty.trim() == "Instruction" {
            continue;
        }
        let list = read(&e.path().join("shared_cpu_list")).ok()?;
        if best.as_ref().is_none_or(|(l, _)| level > *l) {
            best = Some((level, list.trim().to_string()));
        }
    }
    best.map(|(_, l)| l)
}

/// The cgroup v2 hierarchy as a run would use it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup2Info {
    /// Mount point, e.g. `/sys/fs/cgroup`.
    pub mount: PathBuf,
    /// Controllers the root delegates to children (`cgroup.subtree_control`).
    pub delegated: Vec<String>,
    /// True when this process may create a directory there.
    pub writable: bool,
}

/// What the refusal checks look at, gathered without changing anything.
#[derive(Clone, Debug, PartialEq)]
pub struct HostFacts {
    /// Online CPUs.
    pub online_cpus: CpuSet,
    /// CPUs this process may run on.
    pub allowed_cpus: CpuSet,
    /// Nodes that have memory (`has_memory`).
    pub memory_nodes: Vec<usize>,
    /// MemAvailable in bytes.
    pub mem_available: u64,
    /// MemFree per node in bytes.
    pub node_free: BTreeMap<usize, u64>,
    /// Effective uid.
    pub euid: u32,
    /// The cgroup v2 hierarchy, if mounted.
    pub cgroup2: Option<Cgroup2Info>,
    /// Where tracefs is mounted, if it is.
    pub tracefs: Option<PathBuf>,
    /// Where debugfs is mounted, if it is.
    pub debugfs: Option<PathBuf>,
}

impl HostFacts {
    /// Reads the facts from the running system.
    pub fn gather() -> Result<HostFacts, String> {
        let online_cpus = parse_list(Path::new("/sys/devices/system/cpu/online"))?;
        let allowed_cpus = sys::get_affinity().map_err(|e| format!("sched_getaffinity: {e}"))?;
        let node_dir = Path::new("/sys/devices/system/node");
        let memory_nodes: Vec<usize> = if node_dir.join("has_memory").exists() {
            parse_list(&node_dir.join("has_memory"))?.iter().collect()
        } else {
            vec![0]
        };
        let meminfo = parse_meminfo(&read(Path::new("/proc/meminfo"))?);
        let mem_available = meminfo
            .get("MemAvailable")
            .or_else(|| meminfo.get("MemFree"))
            .copied()
            .unwrap_or(0)
            * 1024;
        let mut node_free = BTreeMap::new();
        for &n in &memory_nodes {
            let p = node_dir.join(format!("node{n}/meminfo"));
            let free = match fs::read_to_string(&p) {
                Ok(t) => {
                    t.lines()
                        .find_map(|l| {
                            let rest = l.split_once("MemFree:")?.1;
                            rest.split_whitespace().next()?.parse::<u64>().ok()
                        })
                        .unwrap_or(0)
                        * 1024
                }
                Err(_) => mem_available,
            };
            node_free.insert(n, free);
        }
        let mounts = read(Path::new("/proc/self/mounts")).unwrap_or_default();
        let cgroup2 = cgroup::find_cgroup2_mount(&mounts).map(|mount| {
            let delegated = fs::read_to_string(mount.join("cgroup.subtree_control"))
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect();
            let writable = access_w(&mount);
            Cgroup2Info {
                mount,
                delegated,
                writable,
            }
        });
        Ok(HostFacts {
            online_cpus,
            allowed_cpus,
            memory_nodes,
            mem_available,
            node_free,
            euid: sys::euid(),
            cgroup2,
            tracefs: find_mount(&mounts, "tracefs").or_else(|| {
                find_mount(&mounts, "debugfs")
                    .map(|d| d.join("tracing"))
                    .filter(|p| p.join("events").exists())
            }),
            debugfs: find_mount(&mounts, "debugfs"),
        })
    }
}

/// True when the calling process may write into `path`.
pub fn access_w(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// A fake sysfs: 2 nodes, 4 CPUs, 2 SMT siblings per core, one LLC per node.
    fn fake_sys() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        w(r, "devices/system/cpu/online", "0-3\n");
        w(r, "devices/system/node/online", "0-1\n");
        w(r, "devices/system/node/node0/cpulist", "0-1\n");
        w(r, "devices/system/node/node1/cpulist", "2-3\n");
        w(r, "devices/system/node/node0/distance", "10 21\n");
        w(r, "devices/system/node/node1/distance", "21 10\n");
        w(
            r,
            "devices/system/node/node0/meminfo",
            "Node 0 MemTotal:       1048576 kB\nNode 0 MemFree:  1000 kB\n",
        );
        w(
            r,
            "devices/system/node/node1/meminfo",
            "Node 1 MemTotal:       2097152 kB\n",
        );
        for c in 0..4 {
            let t = format!("devices/system/cpu/cpu{c}/topology");
            w(
                r,
                &format!("{t}/physical_package_id"),
                &format!("{}\n", c / 2),
            );
            w(r, &format!("{t}/core_id"), "0\n");
            w(r, &format!("{t}/die_id"), "0\n");
            let sib = if c < 2 { "0-1" } else { "2-3" };
            w(r, &format!("{t}/thread_siblings_list"), &format!("{sib}\n"));
            let cache = format!("devices/system/cpu/cpu{c}/cache");
            w(r, &format!("{cache}/index0/level"), "1\n");
            w(r, &format!("{cache}/index0/type"), "Data\n");
            w(
                r,
                &format!("{cache}/index0/shared_cpu_list"),
                &format!("{sib}\n"),
            );
            w(r, &format!("{cache}/index3/level"), "3\n");
            w(r, &format!("{cache}/index3/type"), "Unified\n");
            w(
                r,
                &format!("{cache}/index3/shared_cpu_list"),
                &format!("{sib}\n"),
            );
        }
        d
    }

    #[test]
    fn reads_a_two_node_smt_box() {
        let d = fake_sys();
        let m = host_machine_from(d.path()).unwrap();
        assert_eq!(m.nr_nodes(), 2);
        assert_eq!(m.nr_cpus(), 4);
        assert_eq!(m.nodes[1].mem_bytes, 2 << 30);
        assert_eq!(m.distance, vec![vec![10, 21], vec![21, 10]]);
        assert_eq!(m.cpu_to_node(3), 1);
        assert_eq!(m.cpus[1].core, m.cpus[0].core);
        assert_ne!(m.cpus[2].core, m.cpus[0].core);
        assert_eq!((m.cpus[0].smt, m.cpus[1].smt), (0, 1));
        assert_eq!(m.cpus[2].package, 1);
        assert_eq!(m.nodes[1].package, 1);
        assert_ne!(m.cpus[0].llc, m.cpus[2].llc);
        assert_eq!(m.latency_ns[0][1], 210.0);
        assert!(m.sources.iter().all(|s| s.contains("UNMEASURED")));
    }

    #[test]
    fn refuses_sparse_nodes_and_orphan_cpus() {
        let d = fake_sys();
        w(d.path(), "devices/system/node/online", "0,2\n");
        assert!(host_machine_from(d.path()).unwrap_err().contains("sparse"));
        let d = fake_sys();
        w(d.path(), "devices/system/node/node1/cpulist", "2\n");
        assert!(host_machine_from(d.path())
            .unwrap_err()
            .contains("CPU 3 is online but in no node"));
    }

    #[test]
    fn reads_this_host() {
        let m = host_machine().unwrap();
        assert!(m.nr_cpus() >= 1 && m.nr_nodes() >= 1);
        assert!(m.total_mem_bytes() > 0);
        let f = HostFacts::gather().unwrap();
        assert!(f.mem_available > 0);
        assert!(!f.online_cpus.is_empty());
    }
}
