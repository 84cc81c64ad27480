//! QEMU command line for a guest whose NUMA topology follows a [`Machine`].
//!
//! Each node becomes a `memory-backend-ram` object and a `-numa node` with
//! its CPUs; the SLIT becomes `-numa dist` entries (every ordered pair, so
//! asymmetric matrices survive). A machine without SMT whose packages
//! each lie in one node, with CPUs numbered package by package, keeps its
//! packages as sockets of cores (`-smp N,sockets=P,cores=N/P,threads=1`:
//! the guest then has a core/LLC level inside each node, where fork and
//! wakeup placement choose between the node's CPUs); any other machine
//! gets one socket per vCPU (`-smp N,sockets=N,cores=1,threads=1`), which
//! keeps the guest's scheduler domains NUMA-only and avoids
//! "llc-sibling not on the same node" warnings. Acceleration is TCG with one host thread per vCPU (KVM
//! is not usable on the hosts this was built for), with no network device.
//!
//! Limits (refused with a clear error): at most [`MAX_VCPUS`] vCPUs,
//! [`MAX_NODES`] nodes and [`MAX_GUEST_MEM`] of guest RAM; every node needs
//! at least [`MIN_NODE_MEM`] of memory (a whole number of MiB); remote SLIT
//! distances in 11..=254. Left out: SMT siblings, packages and LLCs of the
//! machine (vCPUs are flat), memory-only nodes' tiers (HMAT), and the
//! machine's latency/bandwidth constants (emulated nodes are all host RAM).

use numalab_topology::{CpuSet, Machine};
use std::path::Path;

/// Most vCPUs a guest may have (TCG on a small host).
pub const MAX_VCPUS: usize = 8;
/// Most NUMA nodes a guest may have.
pub const MAX_NODES: usize = 8;
/// Most guest RAM in bytes.
pub const MAX_GUEST_MEM: u64 = 8 << 30;
/// Least memory per node in bytes.
pub const MIN_NODE_MEM: u64 = 128 << 20;

const MIB: u64 = 1 << 20;

/// Checks that `m` fits a guest; the error names the limit.
pub fn check_vm_machine(m: &Machine) -> Result<(), String> {
    let name = &m.name;
    if m.nr_cpus() == 0 || m.nr_cpus() > MAX_VCPUS {
        return Err(format!(
            "machine '{name}' has {} CPUs; a QEMU guest may have 1..={MAX_VCPUS} (software emulation on a small host)",
            m.nr_cpus()
        ));
    }
    if m.nr_nodes() == 0 || m.nr_nodes() > MAX_NODES {
        return Err(format!(
            "machine '{name}' has {} nodes; a QEMU guest may have 1..={MAX_NODES}",
            m.nr_nodes()
        ));
    }
    let total = m.total_mem_bytes();
    if total > MAX_GUEST_MEM {
        return Err(format!(
            "machine '{name}' has {} MiB of memory; a QEMU guest may have at most {} MiB",
            total / MIB,
            MAX_GUEST_MEM / MIB
        ));
    }
    for (i, n) in m.nodes.iter().enumerate() {
        if n.id != i {
            return Err(format!(
                "machine '{name}': node at index {i} has id {}",
                n.id
            ));
        }
        if n.mem_bytes < MIN_NODE_MEM {
            return Err(format!(
                "machine '{name}': node {i} has {} MiB; a guest node needs at least {} MiB (memory-less nodes are not supported)",
                n.mem_bytes / MIB,
                MIN_NODE_MEM / MIB
            ));
        }
        if n.mem_bytes % MIB != 0 {
            return Err(format!(
                "machine '{name}': node {i} memory ({} bytes) is not a whole number of MiB",
                n.mem_bytes
            ));
        }
        for c in n.cpus.iter() {
            if m.cpus.get(c).map(|x| x.node) != Some(i) {
                return Err(format!(
                    "machine '{name}': node {i} lists CPU {c}, which is not on that node"
                ));
            }
        }
    }
    for (i, c) in m.cpus.iter().enumerate() {
        if c.id != i || c.node >= m.nr_nodes() || !m.nodes[c.node].cpus.contains(i) {
            return Err(format!(
                "machine '{name}': CPU {i} is not in its node's CPU list"
            ));
        }
    }
    if m.distance.len() != m.nr_nodes() || m.distance.iter().any(|r| r.len() != m.nr_nodes()) {
        return Err(format!(
            "machine '{name}': distance matrix is not {0}x{0}",
            m.nr_nodes()
        ));
    }
    for (a, row) in m.distance.iter().enumerate() {
        for (b, &d) in row.iter().enumerate() {
            if a == b && d != 10 {
                return Err(format!(
                    "machine '{name}': distance[{a}][{a}] is {d}; SLIT wants 10"
                ));
            }
            if a != b && !(11..=254).contains(&d) {
                return Err(format!(
                    "machine '{name}': distance[{a}][{b}] is {d}; a guest SLIT needs 11..=254 between different nodes"
                ));
            }
        }
    }
    Ok(())
}

/// `cpus=` options for QEMU: one per contiguous range (`cpus=0-1,cpus=4`).
/// `-smp`'s sockets and cores per socket for `m` (see the module doc).
fn smp_shape(m: &Machine) -> (usize, usize) {
    let n = m.nr_cpus();
    let packages = m.cpus.iter().map(|c| c.package).max().map_or(1, |p| p + 1);
    let per = n / packages.max(1);
    let structured = packages > 0
        && per * packages == n
        && m.cpus.iter().all(|c| c.smt == 0)
        && m.cpus.iter().enumerate().all(|(i, c)| {
            c.package == i / per
                && m.cpus
                    .iter()
                    .filter(|o| o.package == c.package)
                    .all(|o| o.node == c.node)
        });
    if structured {
        (packages, per)
    } else {
        (n, 1)
    }
}

fn cpus_opts(set: &CpuSet) -> String {
    set.to_string()
        .split(',')
        .filter(|r| !r.is_empty())
        .map(|r| format!(",cpus={r}"))
        .collect()
}

/// The full argument list (without the program name) to boot `kernel` with
/// `initrd` on machine `m`, sharing `share` with the guest as 9p tag
/// `host0`, with kernel command line `append`.
pub fn qemu_args(
    m: &Machine,
    kernel: &Path,
    initrd: &Path,
    share: Option<&Path>,
    append: &str,
) -> Result<Vec<String>, String> {
    check_vm_machine(m)?;
    let n = m.nr_cpus();
    let (sockets, cores) = smp_shape(m);
    let mut a: Vec<String> = vec![
        "-machine".into(),
        "q35".into(),
        "-accel".into(),
        "tcg,thread=multi".into(),
        "-cpu".into(),
        "max".into(),
        "-m".into(),
        format!("{}M", m.total_mem_bytes() / MIB),
        "-smp".into(),
        format!("{n},sockets={sockets},cores={cores},threads=1"),
    ];
    for node in &m.nodes {
        a.push("-object".into());
        a.push(format!(
            "memory-backend-ram,id=m{},size={}M",
            node.id,
            node.mem_bytes / MIB
        ));
        a.push("-numa".into());
        a.push(format!(
            "node,nodeid={0}{1},memdev=m{0}",
            node.id,
            cpus_opts(&node.cpus)
        ));
    }
    for (s, row) in m.distance.iter().enumerate() {
        for (d, &v) in row.iter().enumerate() {
            if s != d {
                a.push("-numa".into());
                a.push(format!("dist,src={s},dst={d},val={v}"));
            }
        }
    }
    a.extend([
        "-kernel".into(),
        kernel.display().to_string(),
        "-initrd".into(),
        initrd.display().to_string(),
        "-append".into(),
        append.to_string(),
        "-display".into(),
        "none".into(),
        "-monitor".into(),
        "none".into(),
        "-serial".into(),
        "stdio".into(),
        "-nic".into(),
        "none".into(),
        "-no-reboot".into(),
    ]);
    if let Some(s) = share {
        let p = s.display().to_string();
        if p.contains(',') {
            return Err(format!(
                "share directory {p} contains a comma, which QEMU cannot take"
            ));
        }
        a.push("-virtfs".into());
        a.push(format!(
            "local,path={p},mount_tag=host0,security_model=none,id=share0"
        ));
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smoke::small_machine;
    use std::path::PathBuf;

    #[test]
    fn a_node_of_several_cpus_is_one_socket_of_cores() {
        let m = small_machine(2, 2, 1 << 30, 20);
        assert_eq!(smp_shape(&m), (2, 2));
        let a = qemu_args(
            &m,
            &PathBuf::from("/k/vmlinuz"),
            &PathBuf::from("/w/initrd"),
            None,
            "console=ttyS0",
        )
        .unwrap();
        let s = a.join(" ");
        assert!(s.contains("-smp 4,sockets=2,cores=2,threads=1"), "{s}");
        assert!(s.contains("-numa node,nodeid=1,cpus=2-3,memdev=m1"), "{s}");
        // A package across two nodes stays flat.
        let mut m = small_machine(2, 2, 1 << 30, 20);
        for c in &mut m.cpus {
            c.package = 0;
        }
        assert_eq!(smp_shape(&m), (4, 1));
    }

    #[test]
    fn four_node_guest_command_line() {
        let m = small_machine(4, 1, 1 << 30, 20);
        let a = qemu_args(
            &m,
            &PathBuf::from("/k/vmlinuz"),
            &PathBuf::from("/w/initrd"),
            Some(&PathBuf::from("/w/share")),
            "console=ttyS0",
        )
        .unwrap();
        let s = a.join(" ");
        assert!(s.contains("-m 4096M"), "{s}");
        assert!(s.contains("-smp 4,sockets=4,cores=1,threads=1"), "{s}");
        assert!(s.contains("-accel tcg,thread=multi"), "{s}");
        assert!(
            s.contains(
                "-object memory-backend-ram,id=m3,size=1024M -numa node,nodeid=3,cpus=3,memdev=m3"
            ),
            "{s}"
        );
        assert_eq!(a.iter().filter(|x| x.starts_with("dist,")).count(), 12);
        assert!(s.contains("dist,src=2,dst=1,val=20"));
        assert!(
            s.contains("-virtfs local,path=/w/share,mount_tag=host0,security_model=none,id=share0")
        );
        assert!(s.contains("-nic none") && s.contains("-no-reboot"));
        assert!(s.ends_with("id=share0"));
    }

    #[test]
    fn multi_cpu_nodes_and_asymmetric_distances() {
        let mut m = small_machine(2, 3, 512 << 20, 21);
        m.distance[1][0] = 31;
        let a = qemu_args(&m, Path::new("k"), Path::new("i"), None, "").unwrap();
        let s = a.join(" ");
        assert!(s.contains("node,nodeid=1,cpus=3-5,memdev=m1"), "{s}");
        assert!(s.contains("dist,src=0,dst=1,val=21") && s.contains("dist,src=1,dst=0,val=31"));
        assert!(!s.contains("virtfs"));
        // Non-contiguous CPUs become repeated cpus= options.
        let set = CpuSet::parse_list("0,2-3").unwrap();
        assert_eq!(cpus_opts(&set), ",cpus=0,cpus=2-3");
    }

    #[test]
    fn limits_are_refused_with_the_number() {
        let e = check_vm_machine(&small_machine(2, 5, 1 << 30, 20)).unwrap_err();
        assert!(e.contains("10 CPUs") && e.contains("1..=8"), "{e}");
        let e = check_vm_machine(&small_machine(2, 1, 5 << 30, 20)).unwrap_err();
        assert!(e.contains("10240 MiB"), "{e}");
        let e = check_vm_machine(&small_machine(2, 1, 64 << 20, 20)).unwrap_err();
        assert!(e.contains("at least 128 MiB"), "{e}");
        let e = check_vm_machine(&small_machine(2, 1, 1 << 30, 10)).unwrap_err();
        assert!(e.contains("11..=254"), "{e}");
        let mut m = small_machine(2, 1, (1 << 30) + 5, 20);
        m.name = "odd".into();
        assert!(check_vm_machine(&m)
            .unwrap_err()
            .contains("whole number of MiB"));
        let mut m = small_machine(2, 2, 1 << 30, 20);
        m.cpus[3].node = 0;
        assert!(check_vm_machine(&m).is_err());
        check_vm_machine(&small_machine(8, 1, 1 << 30, 30)).unwrap();
    }
}
