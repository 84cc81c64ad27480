//! Refusals: everything a real run checks before it changes anything.
//!
//! [`plan`] looks at the resolved workload, the host's facts and the
//! requested knobs, and either returns the [`Plan`] of changes the run will
//! make or one clear error: the workload is malformed (a phase names a
//! region that does not exist, a thread waits for itself, ...), needs more
//! memory than MemAvailable (or than the free memory of the nodes a region
//! is bound to), names CPUs or nodes the host does not have or this process
//! may not use, sets kernel knobs without `--allow-sysctl` or without root,
//! names a knob file that does not exist, or needs a cgroup v2 feature the
//! host does not offer. [`probe_policies`] then asks the kernel itself
//! whether it takes each memory policy, from a short-lived thread, so a
//! policy the kernel rejects (say `MPOL_F_NUMA_BALANCING` on interleave) is
//! refused before anything changes.
//!
//! Left out: cgroup memory limits and hugetlb reservations.

use crate::cgroup::{controller_of, path_components, GroupPlan};
use crate::host::HostFacts;
use crate::knobs::{check_knob, Knob};
use crate::sys;
use numalab_knobs::knob;
use numalab_topology::CpuSet;
use numalab_workload::model::{Phase, PolicyMode, PolicySpec, Workload};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// What a run will change, once every check passed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Global knobs to set: `(canonical key, file, value)`, in order.
    pub file_knobs: Vec<(String, PathBuf, String)>,
    /// True when the run makes a cgroup tree.
    pub use_cgroups: bool,
    /// Controllers to enable in the run's groups.
    pub controllers: Vec<String>,
    /// Groups to create, parents first, with the files to write.
    pub groups: Vec<GroupPlan>,
    /// True when some process lives in the workload's `/`.
    pub need_root_leaf: bool,
    /// Things the run will do without (no memory.stat, no tracepoints...).
    pub warnings: Vec<String>,
    /// Sampling interval set by `--set numalab.sample_interval_ms`.
    pub interval: Option<std::time::Duration>,
    /// `--set numalab.access_latency=1`: the worker times every random
    /// access (latency.rs); the outlier threshold in microseconds
    /// (`numalab.access_latency_threshold_us`, the model's default unless
    /// set).
    pub access_latency_us: Option<u64>,
}

/// Why a real run refuses the model-only phases.
pub const MODEL_ONLY_PHASES: &str = "set_numa_balancing (numalab's model of a per-task prctl, which no kernel has) and cgroup_write phases run in the model only";

/// Refuses a workload with a phase a real run cannot do: numalab's
/// per-task NUMA balancing control, and cgroup writes during the run (the
/// worker does not know the run's cgroup directories).
fn refuse_model_only_phases(w: &Workload) -> Result<(), String> {
    for p in &w.processes {
        for t in &p.threads {
            let mut found = false;
            Phase::walk(&t.phases, &mut |ph| {
                found |= matches!(ph, Phase::SetNumaBalancing(_) | Phase::CgroupWrite { .. });
            });
            if found {
                return Err(format!(
                    "refused: thread '{}/{}': {MODEL_ONLY_PHASES}",
                    p.name, t.name
                ));
            }
        }
    }
    Ok(())
}

/// Every memory policy the workload uses (tasks, VMAs, phases), with a
/// label for messages; the bool is true for a VMA (`mbind`) policy.
pub fn policies(w: &Workload) -> Vec<(String, PolicySpec, bool)> {
    let mut out = Vec::new();
    for p in &w.processes {
        for r in &p.regions {
            if let Some(s) = &r.policy {
                out.push((format!("{}/{}", p.name, r.name), s.clone(), true));
            }
        }
        for t in &p.threads {
            if let Some(s) = &t.policy {
                out.push((format!("{}/{}", p.name, t.name), s.clone(), false));
            }
            Phase::walk(&t.phases, &mut |ph| {
                if let Phase::SetMempolicy(Some(s)) = ph {
                    out.push((
                        format!("{}/{} set_mempolicy phase", p.name, t.name),
                        s.clone(),
                        false,
                    ));
                }
            });
        }
    }
    out
}

fn check_structure(w: &Workload) -> Result<(), String> {
    if w.processes.is_empty() {
        return Err(format!("workload '{}' has no process", w.name));
    }
    let mut paths = BTreeSet::new();
    paths.insert("/".to_string());
    for c in &w.cgroups {
        let comps = path_components(&c.path).map_err(|e| format!("workload cgroups: {e}"))?;
        if comps.len() > 1 {
            let parent = format!("/{}", comps[..comps.len() - 1].join("/"));
            if !paths.contains(&parent) {
                return Err(format!(
                    "workload cgroup '{}' is listed before (or without) its parent '{parent}'",
                    c.path
                ));
            }
        }
        if !paths.insert(c.path.clone()) && c.path != "/" {
            return Err(format!("workload cgroup '{}' is listed twice", c.path));
        }
        for f in c.files.keys() {
            if f.contains('/') || !f.contains('.') {
                return Err(format!("workload cgroup '{}': bad file name '{f}'", c.path));
            }
        }
    }
    for p in &w.processes {
        if !paths.contains(&p.cgroup) {
            return Err(format!(
                "process '{}' is in cgroup '{}', which the workload does not create",
                p.name, p.cgroup
            ));
        }
        if p.threads.is_empty() {
            return Err(format!("process '{}' has no thread", p.name));
        }
        for r in &p.regions {
            if r.bytes == 0 {
                return Err(format!(
                    "process '{}': region '{}' is empty",
                    p.name, r.name
                ));
            }
        }
        let n = p.threads.len();
        for (i, t) in p.threads.iter().enumerate() {
            for &a in &t.start_after {
                if a >= n || a == i {
                    return Err(format!(
                        "process '{}' thread '{}': start_after {a} is not another thread of the process",
                        p.name, t.name
                    ));
                }
            }
            let mut err = None;
            Phase::walk(&t.phases, &mut |ph| {
                let Some((region, offset, len)) = ph.range() else {
                    return;
                };
                let ok = p.regions.get(region).is_some_and(|r| {
                    offset.checked_add(len).is_some_and(|e| e <= r.bytes) && len > 0
                });
                if !ok && err.is_none() {
                    err = Some(format!(
                        "process '{}' thread '{}': a phase accesses region {region} bytes {offset}..+{len}, outside the process's regions",
                        p.name, t.name
                    ));
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
        // start_after must not form a cycle (Kahn's algorithm).
        let mut waiting: Vec<usize> = p.threads.iter().map(|t| t.start_after.len()).collect();
        let mut ready: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
        let mut seen = 0;
        while let Some(i) = ready.pop() {
            seen += 1;
            for (j, t) in p.threads.iter().enumerate() {
                for _ in t.start_after.iter().filter(|&&a| a == i) {
                    waiting[j] -= 1;
                    if waiting[j] == 0 {
                        ready.push(j);
                    }
                }
            }
        }
        if seen < n {
            return Err(format!(
                "process '{}': threads wait for each other in a cycle (start_after)",
                p.name
            ));
        }
    }
    Ok(())
}

/// Checks the workload and the requested knobs against the host and
/// returns what the run will change. `knobs` pairs each resolved knob with
/// its value.
pub fn plan(
    w: &Workload,
    facts: &HostFacts,
    knobs: &[(Knob, String)],
    allow_sysctl: bool,
) -> Result<Plan, String> {
    check_structure(w)?;
    refuse_model_only_phases(w)?;
    let mut plan = Plan::default();

    // CPUs.
    let mut cpus_needed: BTreeMap<usize, String> = BTreeMap::new();
    let mut need_cpus = |set: &CpuSet, what: String| {
        for c in set.iter() {
            cpus_needed.entry(c).or_insert_with(|| what.clone());
        }
    };
    for c in &w.cgroups {
        if let Some(s) = &c.cpuset_cpus {
            need_cpus(s, format!("cgroup '{}' cpuset.cpus", c.path));
        }
    }
    for p in &w.processes {
        for t in &p.threads {
            if let Some(a) = &t.affinity {
                need_cpus(a, format!("thread '{}/{}' affinity", p.name, t.name));
            }
            Phase::walk(&t.phases, &mut |ph| {
                if let Phase::SetAffinity(Some(a)) = ph {
                    need_cpus(
                        a,
                        format!("thread '{}/{}' sched_setaffinity phase", p.name, t.name),
                    );
                }
            });
        }
    }
    for (c, what) in &cpus_needed {
        if !facts.online_cpus.contains(*c) {
            return Err(format!(
                "refused: {what} needs CPU {c}, but this host has CPUs {} online",
                facts.online_cpus
            ));
        }
        if !facts.allowed_cpus.contains(*c) {
            return Err(format!(
                "refused: {what} needs CPU {c}, but this process may only run on CPUs {} (taskset/cpuset)",
                facts.allowed_cpus
            ));
        }
    }

    // Nodes.
    let mem_nodes: CpuSet = facts.memory_nodes.iter().copied().collect();
    let check_nodes = |nodes: &[usize], what: &str| -> Result<(), String> {
        for &n in nodes {
            if !mem_nodes.contains(n) {
                return Err(format!(
                    "refused: {what} names node {n}, but this host has memory on nodes {mem_nodes} only"
                ));
            }
        }
        Ok(())
    };
    for (what, s, _) in policies(w) {
        check_nodes(&s.nodes, &format!("policy of {what}"))?;
        sys::policy_args(Some(&s)).map_err(|e| format!("policy of {what}: {e}"))?;
    }
    for c in &w.cgroups {
        if let Some(m) = &c.cpuset_mems {
            check_nodes(m, &format!("cgroup '{}' cpuset.mems", c.path))?;
        }
    }

    // Memory: a shared region once, however many processes map it.
    let mut seen_shared = std::collections::BTreeSet::new();
    let regions: Vec<&numalab_workload::Region> = w
        .processes
        .iter()
        .flat_map(|p| p.regions.iter())
        .filter(|r| !r.shared || seen_shared.insert(r.name.as_str()))
        .collect();
    let total: u64 = regions.iter().map(|r| r.bytes).sum();
    if total > facts.mem_available {
        return Err(format!(
            "refused: the workload needs {} MiB of memory but only {} MiB is available (MemAvailable)",
            total >> 20,
            facts.mem_available >> 20
        ));
    }
    let mut bound: BTreeMap<Vec<usize>, u64> = BTreeMap::new();
    for r in &regions {
        if let Some(s) = &r.policy {
            if s.mode == PolicyMode::Bind {
                let mut n = s.nodes.clone();
                n.sort_unstable();
                n.dedup();
                *bound.entry(n).or_default() += r.bytes;
            }
        }
    }
    for (nodes, need) in &bound {
        let free: u64 = nodes
            .iter()
            .map(|n| facts.node_free.get(n).copied().unwrap_or(0))
            .sum();
        if *need > free {
            let set: CpuSet = nodes.iter().copied().collect();
            return Err(format!(
                "refused: regions bound to node(s) {set} need {} MiB, but those nodes have only {} MiB free",
                need >> 20,
                free >> 20
            ));
        }
    }

    // Knobs and privileges.
    let mut cgroup_files: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let (mut latency_on, mut latency_threshold) = (false, None);
    for (k, v) in knobs {
        match k {
            Knob::File { key, path, .. } => {
                if !allow_sysctl {
                    return Err(format!(
                        "refused: --set {key}={v} changes a kernel knob for the whole host; pass --allow-sysctl (as root) to let numalab set it and restore it afterwards"
                    ));
                }
                if facts.euid != 0 {
                    return Err(format!(
                        "refused: --set {key}={v} needs root (effective uid is {})",
                        facts.euid
                    ));
                }
                check_knob(k)?;
                crate::knobs::probe_numa_balancing_cgroup(
                    key,
                    v,
                    facts.cgroup2.as_ref().map(|c| c.mount.as_path()),
                )?;
                plan.file_knobs.push((key.clone(), path.clone(), v.clone()));
            }
            // A real kernel runs its own NUMA balancing: mainline's policy
            // asks for nothing, any other is the model's alone.
            Knob::Lab { key } if key == numalab_knobs::knob::POLICY.def().name => {
                crate::knobs::refuse_model_policy(key, v)?;
            }
            Knob::Lab { key } if key == knob::ACCESS_LATENCY.def().name => {
                latency_on = match v.as_str() {
                    "1" | "true" => true,
                    "0" | "false" => false,
                    _ => return Err(format!("refused: --set {key}={v}: 0 or 1")),
                };
            }
            Knob::Lab { key } if key == knob::ACCESS_LATENCY_THRESHOLD_US.def().name => {
                match v.parse::<u64>() {
                    Ok(us) if us > 0 => latency_threshold = Some(us),
                    _ => {
                        return Err(format!(
                            "refused: --set {key}={v}: a threshold > 0 microseconds"
                        ))
                    }
                }
            }
            Knob::Lab { key } => {
                if key != "numalab.sample_interval_ms" {
                    return Err(format!(
                        "refused: --set {key}: a model setting with no meaning on a real kernel (CONFIG_HZ is fixed when the kernel is built)"
                    ));
                }
                match v.parse::<u64>() {
                    Ok(ms) if ms > 0 => plan.interval = Some(std::time::Duration::from_millis(ms)),
                    _ => {
                        return Err(format!(
                            "refused: --set {key}={v}: a real run needs a sampling interval > 0 ms"
                        ))
                    }
                }
            }
            Knob::Cgroup { cgroup, file } => {
                if cgroup != "/" && !w.cgroups.iter().any(|c| &c.path == cgroup) {
                    return Err(format!(
                        "--set {cgroup}:{file}: the workload has no cgroup '{cgroup}'"
                    ));
                }
                cgroup_files
                    .entry(cgroup.clone())
                    .or_default()
                    .push((file.clone(), v.clone()));
            }
        }
    }
    plan.access_latency_us = latency_on.then(|| {
        latency_threshold.unwrap_or(knob::ACCESS_LATENCY_THRESHOLD_US.def().default_raw())
    });

    // Cgroups.
    let mut groups: Vec<GroupPlan> = Vec::new();
    if let Some(files) = cgroup_files.get("/") {
        groups.push(GroupPlan {
            path: "/".into(),
            files: files.clone(),
        });
    }
    for c in &w.cgroups {
        let mut files = Vec::new();
        if let Some(s) = &c.cpuset_cpus {
            files.push(("cpuset.cpus".to_string(), s.to_string()));
        }
        if let Some(m) = &c.cpuset_mems {
            let set: CpuSet = m.iter().copied().collect();
            files.push(("cpuset.mems".to_string(), set.to_string()));
        }
        for (f, v) in &c.files {
            files.push((f.clone(), v.clone()));
        }
        if let Some(extra) = cgroup_files.get(&c.path) {
            files.extend(extra.iter().cloned());
        }
        if c.path != "/" {
            groups.push(GroupPlan {
                path: c.path.clone(),
                files,
            });
        } else if !files.is_empty() {
            groups.push(GroupPlan {
                path: "/".into(),
                files,
            });
        }
    }
    let needs_cgroups = groups.iter().any(|g| g.path != "/" || !g.files.is_empty());
    let mut controllers: BTreeSet<String> = BTreeSet::new();
    for g in &groups {
        for (f, _) in &g.files {
            if let Some(c) = controller_of(f) {
                controllers.insert(c.to_string());
            }
        }
    }
    match &facts.cgroup2 {
        None if needs_cgroups => {
            return Err(
                "refused: the workload needs cgroups, but no cgroup v2 hierarchy is mounted"
                    .to_string(),
            )
        }
        None => plan
            .warnings
            .push("no cgroup v2 hierarchy: the record has no memory.stat figures".to_string()),
        Some(cg) if !cg.writable => {
            if needs_cgroups {
                return Err(format!(
                    "refused: the workload needs cgroups, but {} is not writable by this user",
                    cg.mount.display()
                ));
            }
            plan.warnings.push(format!(
                "{} is not writable: the record has no memory.stat figures",
                cg.mount.display()
            ));
        }
        Some(cg) => {
            for c in &controllers {
                if !cg.delegated.contains(c) {
                    return Err(format!(
                        "refused: the workload needs the cgroup v2 '{c}' controller, but {}/cgroup.subtree_control offers only [{}]",
                        cg.mount.display(),
                        cg.delegated.join(" ")
                    ));
                }
            }
            if cg.delegated.iter().any(|c| c == "memory") {
                controllers.insert("memory".to_string());
            } else {
                plan.warnings.push(format!(
                    "the cgroup v2 memory controller is not enabled in {}: the record has no memory.stat figures",
                    cg.mount.display()
                ));
            }
            plan.use_cgroups = true;
        }
    }
    if facts.tracefs.is_none() {
        plan.warnings
            .push("tracefs is not mounted: no sched_*_numa tracepoint counts".to_string());
    }
    plan.controllers = controllers.into_iter().collect();
    plan.need_root_leaf = plan.use_cgroups && w.processes.iter().any(|p| p.cgroup == "/");
    plan.groups = groups;
    Ok(plan)
}

/// Asks the kernel whether it accepts each policy, from a thread that exits
/// right after (task policies) and on a scratch mapping (VMA policies).
pub fn probe_policies(w: &Workload) -> Result<(), String> {
    let pols = policies(w);
    if pols.is_empty() {
        return Ok(());
    }
    std::thread::spawn(move || -> Result<(), String> {
        let scratch = sys::Mapping::new(
            sys::PAGE_SIZE as u64,
            numalab_workload::model::PageSize::Base4K,
        )
        .map_err(|e| format!("mmap: {e}"))?;
        for (what, s, vma) in &pols {
            let r = if *vma {
                // SAFETY: the scratch mapping belongs to this process.
                unsafe { sys::mbind(scratch.base(), scratch.len(), Some(s), 0) }
            } else {
                sys::set_mempolicy(Some(s))
            };
            if let Err(e) = r {
                return Err(format!(
                    "refused: the kernel rejects memory policy {} of {what}: {e}",
                    sys::policy_name(Some(s))
                ));
            }
        }
        Ok(())
    })
    .join()
    .map_err(|_| "policy probe thread panicked".to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Cgroup2Info;
    use numalab_workload::model::{Cgroup, PageSize, Process, Region, Score, Thread};

    pub(crate) fn facts() -> HostFacts {
        HostFacts {
            online_cpus: CpuSet::parse_list("0-3").unwrap(),
            allowed_cpus: CpuSet::parse_list("0-3").unwrap(),
            memory_nodes: vec![0, 1],
            mem_available: 1 << 30,
            node_free: [(0, 512 << 20), (1, 256 << 20)].into_iter().collect(),
            euid: 0,
            cgroup2: Some(Cgroup2Info {
                mount: PathBuf::from("/sys/fs/cgroup"),
                delegated: vec!["cpuset".into(), "cpu".into(), "memory".into()],
                writable: true,
            }),
            tracefs: Some(PathBuf::from("/sys/kernel/tracing")),
            debugfs: Some(PathBuf::from("/sys/kernel/debug")),
        }
    }

    pub(crate) fn workload() -> Workload {
        Workload {
            name: "t".into(),
            test: "T".into(),
            description: "test".into(),
            cgroups: vec![],
            processes: vec![Process {
                name: "p".into(),
                cgroup: "/".into(),
                regions: vec![Region {
                    name: "r".into(),
                    bytes: 64 << 20,
                    page_size: PageSize::Base4K,
                    policy: None,
                    runtime: false,
                    shared: false,
                    vma_bytes: None,
                }],
                threads: vec![Thread {
                    name: "t0".into(),
                    affinity: Some(CpuSet::parse_list("1").unwrap()),
                    policy: None,
                    start_after: vec![],
                    phases: vec![Phase::Stream {
                        region: 0,
                        offset: 0,
                        len: 64 << 20,
                        passes: 1,
                        write: true,
                    }],
                }],
            }],
            score: Score::Elapsed,
            duration_ns: None,
        }
    }

    #[test]
    fn a_fitting_workload_gets_a_plan() {
        let p = plan(&workload(), &facts(), &[], false).unwrap();
        assert!(p.use_cgroups && p.need_root_leaf);
        assert_eq!(p.controllers, vec!["memory"]);
        assert!(p.file_knobs.is_empty());
    }

    #[test]
    fn too_much_memory_is_refused() {
        let mut w = workload();
        w.processes[0].regions[0].bytes = 2 << 30;
        w.processes[0].threads[0].phases.clear();
        let e = plan(&w, &facts(), &[], false).unwrap_err();
        assert!(e.contains("2048 MiB") && e.contains("MemAvailable"), "{e}");
        let mut w = workload();
        w.processes[0].regions[0].bytes = 300 << 20;
        w.processes[0].threads[0].phases.clear();
        w.processes[0].regions[0].policy = Some(PolicySpec {
            mode: PolicyMode::Bind,
            nodes: vec![1],
            numa_balancing: false,
        });
        let e = plan(&w, &facts(), &[], false).unwrap_err();
        assert!(e.contains("node(s) 1"), "{e}");
    }

    #[test]
    fn missing_cpus_and_nodes_are_refused() {
        let mut w = workload();
        w.processes[0].threads[0].affinity = Some(CpuSet::parse_list("7").unwrap());
        let e = plan(&w, &facts(), &[], false).unwrap_err();
        assert!(e.contains("CPU 7") && e.contains("0-3"), "{e}");
        let mut f = facts();
        f.allowed_cpus = CpuSet::parse_list("0").unwrap();
        let e = plan(&workload(), &f, &[], false).unwrap_err();
        assert!(e.contains("may only run on CPUs 0"), "{e}");
        let mut w = workload();
        w.processes[0].threads[0].phases.insert(
            0,
            Phase::SetMempolicy(Some(PolicySpec {
                mode: PolicyMode::Interleave,
                nodes: vec![0, 3],
                numa_balancing: false,
            })),
        );
        let e = plan(&w, &facts(), &[], false).unwrap_err();
        assert!(e.contains("node 3"), "{e}");
    }

    #[test]
    fn knobs_need_the_flag_and_root() {
        let k = Knob::File {
            key: "kernel.numa_balancing".into(),
            path: PathBuf::from("/nonexistent/numa_balancing"),
            debugfs: false,
        };
        let e = plan(&workload(), &facts(), &[(k.clone(), "1".into())], false).unwrap_err();
        assert!(e.contains("--allow-sysctl"), "{e}");
        let mut f = facts();
        f.euid = 1000;
        let e = plan(&workload(), &f, &[(k.clone(), "1".into())], true).unwrap_err();
        assert!(e.contains("needs root"), "{e}");
        let e = plan(&workload(), &facts(), &[(k, "1".into())], true).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        let lab = |k: &str| Knob::Lab { key: k.into() };
        let p = plan(
            &workload(),
            &facts(),
            &[(lab("numalab.sample_interval_ms"), "250".into())],
            false,
        )
        .unwrap();
        assert_eq!(p.interval, Some(std::time::Duration::from_millis(250)));
        assert!(plan(
            &workload(),
            &facts(),
            &[(lab("CONFIG_HZ"), "1000".into())],
            false
        )
        .unwrap_err()
        .contains("CONFIG_HZ"));
        // The model's policies: only mainline, which a real kernel runs.
        let policy = |v: &str| {
            plan(
                &workload(),
                &facts(),
                &[(lab("numalab.policy"), v.into())],
                false,
            )
        };
        assert!(policy("mainline").is_ok());
        let e = policy("two-touch").unwrap_err();
        assert!(
            e.contains("numalab.policy=two-touch") && e.contains("only in the model"),
            "{e}"
        );
        assert!(crate::knobs::parse_set("numalab.policy=mainline").is_ok());
        let e = crate::knobs::parse_set("numalab.policy=two-touch").unwrap_err();
        assert!(
            e.contains("refused") && e.contains("only in the model"),
            "{e}"
        );
    }

    #[test]
    fn cgroup_needs_are_checked() {
        let mut w = workload();
        w.cgroups.push(Cgroup {
            path: "/a".into(),
            cpuset_cpus: Some(CpuSet::parse_list("0-1").unwrap()),
            cpuset_mems: Some(vec![0]),
            files: Default::default(),
        });
        w.processes[0].cgroup = "/a".into();
        let p = plan(&w, &facts(), &[], false).unwrap();
        assert_eq!(p.controllers, vec!["cpuset", "memory"]);
        assert!(!p.need_root_leaf);
        assert_eq!(
            p.groups[0].files,
            vec![
                ("cpuset.cpus".into(), "0-1".into()),
                ("cpuset.mems".into(), "0".into())
            ]
        );
        let mut f = facts();
        f.cgroup2.as_mut().unwrap().delegated = vec!["memory".into()];
        let e = plan(&w, &f, &[], false).unwrap_err();
        assert!(e.contains("'cpuset' controller"), "{e}");
        let mut f = facts();
        f.cgroup2 = None;
        assert!(plan(&w, &f, &[], false)
            .unwrap_err()
            .contains("no cgroup v2"));
        // Without cgroups needed, a missing hierarchy is only a warning.
        let p = plan(&workload(), &f, &[], false).unwrap();
        assert!(!p.use_cgroups && !p.warnings.is_empty());
        // A cgroup knob on an unknown group.
        let k = Knob::Cgroup {
            cgroup: "/zzz".into(),
            file: "cpu.weight".into(),
        };
        assert!(plan(&w, &facts(), &[(k, "50".into())], false)
            .unwrap_err()
            .contains("no cgroup '/zzz'"));
        let k = Knob::Cgroup {
            cgroup: "/a".into(),
            file: "cpu.weight".into(),
        };
        let p = plan(&w, &facts(), &[(k, "50".into())], false).unwrap();
        assert_eq!(p.controllers, vec!["cpu", "cpuset", "memory"]);
    }

    #[test]
    fn malformed_workloads_are_refused() {
        let mut w = workload();
        w.processes[0].threads[0].phases.push(Phase::Stream {
            region: 0,
            offset: 60 << 20,
            len: 8 << 20,
            passes: 1,
            write: false,
        });
        assert!(plan(&w, &facts(), &[], false)
            .unwrap_err()
            .contains("outside"));
        let mut w = workload();
        w.processes[0].threads[0].start_after = vec![0];
        assert!(plan(&w, &facts(), &[], false)
            .unwrap_err()
            .contains("start_after"));
        let mut w = workload();
        let mut t1 = w.processes[0].threads[0].clone();
        t1.start_after = vec![0];
        w.processes[0].threads[0].start_after = vec![1];
        w.processes[0].threads.push(t1);
        assert!(plan(&w, &facts(), &[], false)
            .unwrap_err()
            .contains("cycle"));
        let mut w = workload();
        w.processes[0].cgroup = "/nope".into();
        assert!(plan(&w, &facts(), &[], false)
            .unwrap_err()
            .contains("does not create"));
    }

    #[test]
    fn probe_accepts_default_and_rejects_nonsense() {
        let mut w = workload();
        w.processes[0].threads[0].policy = Some(PolicySpec {
            mode: PolicyMode::Local,
            nodes: vec![],
            numa_balancing: false,
        });
        probe_policies(&w).unwrap();
        // Node 63 is not online on any test host.
        w.processes[0].threads[0].policy = Some(PolicySpec {
            mode: PolicyMode::Bind,
            nodes: vec![63],
            numa_balancing: false,
        });
        assert!(probe_policies(&w).unwrap_err().contains("bind:63"));
    }
}
