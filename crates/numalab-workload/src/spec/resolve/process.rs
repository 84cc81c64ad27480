//! Resolve, processes and cgroups: one process instance's regions and
//! threads (thread counts expanded, start-after groups turned into thread
//! indices), region sizes scaled once every thread's slices are known, and
//! the cgroups with their CPU and node sets. Left out: the phases
//! themselves ([`super::phase`]).

use super::phase::{place, PendingRange};
use super::scale::scale_down;
use super::{RegionSize, Resolver};
use crate::expr::{self, Env, Kind};
use crate::model::{Cgroup, PageSize, PolicySpec, Process, Region, Thread};
use crate::ranges;
use crate::spec::checked::{ProcessSpec, RegionSpec, WorkloadSpec};
use crate::spec::error::Result;
use crate::spec::limits::{MAX_THREADS, PAGE};
use std::collections::BTreeMap;

/// A `[[shared]]` region, evaluated before any process.
pub(super) struct SharedRegion {
    /// Name.
    name: String,
    /// Size as written, whole pages.
    bytes: u64,
    /// Transparent huge pages.
    thp: bool,
    /// Its policy (the shared policy `mbind` sets), `None` for default.
    policy: Option<PolicySpec>,
}

/// A process instance after pass 1: every phase resolved, its ranges not
/// yet placed, its regions not yet scaled.
pub(super) struct PendingProcess {
    /// Instance name.
    name: String,
    /// Field path of its `[[process]]`.
    pf: String,
    /// Cgroup path.
    cgroup: String,
    /// How many of `regions` are its own; the rest are shared ones.
    own: usize,
    /// Index in the shared regions of each of `regions[own..]`.
    shared_of: Vec<usize>,
    /// Every region with its size as written and its slice use.
    regions: Vec<(String, RegionSize)>,
    /// Each region's policy.
    region_policies: Vec<Option<PolicySpec>>,
    /// Threads with the ranges they still have to place.
    threads: Vec<(Thread, Vec<PendingRange>)>,
}

impl Resolver<'_> {
    /// A region's size as written (field path `rf`): positive, in the
    /// language's range, rounded up to whole pages.
    fn region_bytes(&self, rs: &RegionSpec, env: &Env, rf: &str) -> Result<u64> {
        let size = self.count(&rs.size, env, Kind::Size, &format!("{rf}.size"))?;
        if size == 0 {
            return Err(self.err(format!("{rf}.size"), "a region must not be empty"));
        }
        ranges::range("process.region.size")
            .check(size as f64)
            .map_err(|m| self.err(format!("{rf}.size"), m))?;
        size.checked_next_multiple_of(PAGE)
            .ok_or_else(|| self.err(format!("{rf}.size"), "size overflows"))
    }

    /// A process region's `vma_size` (field path `rf`): positive, whole
    /// pages, not above the region's size as written.
    fn region_vma_bytes(&self, rs: &RegionSpec, env: &Env, rf: &str) -> Result<Option<u64>> {
        let Some(n) = &rs.vma_size else {
            return Ok(None);
        };
        let f = format!("{rf}.vma_size");
        let v = self.count(n, env, Kind::Size, &f)?;
        if v == 0 {
            return Err(self.err(f, "a VMA must not be empty"));
        }
        Ok(Some(v.div_ceil(PAGE) * PAGE))
    }

    /// The `[[shared]]` regions, evaluated once with the workload's
    /// variables (no process is bound: `p` and `np` are unknown there).
    pub(super) fn shared(&self, spec: &WorkloadSpec, env: &Env) -> Result<Vec<SharedRegion>> {
        spec.shared
            .iter()
            .enumerate()
            .map(|(k, rs)| {
                let rf = format!("shared[{k}]");
                if rs.vma_size.is_some() {
                    return Err(self.err(
                        format!("{rf}.vma_size"),
                        "a [[shared]] region is one memory object: vma_size is for a process's own region",
                    ));
                }
                Ok(SharedRegion {
                    name: rs.name.clone(),
                    bytes: self.region_bytes(rs, env, &rf)?,
                    thp: rs.thp,
                    policy: rs
                        .policy
                        .as_ref()
                        .map(|pv| self.policy(pv, env, &format!("{rf}.policy")))
                        .transpose()?
                        .flatten(),
                })
            })
            .collect()
    }

    /// Resolves one instance of process `ps` (field path `pf`), named
    /// `name`, up to its regions' scaling: [`Resolver::place_process`]
    /// finishes it once every process's use of the `shared` regions is
    /// known.
    pub(super) fn process(
        &mut self,
        ps: &ProcessSpec,
        pf: &str,
        name: String,
        env: &mut Env,
        shared: &[SharedRegion],
    ) -> Result<PendingProcess> {
        let mut regions: Vec<(String, RegionSize)> = Vec::new();
        let mut region_policies = Vec::new();
        for (ri, rs) in ps.regions.iter().enumerate() {
            let rf = format!("{pf}.region[{ri}]");
            let bytes = self.region_bytes(rs, env, &rf)?;
            region_policies.push(
                rs.policy
                    .as_ref()
                    .map(|pv| self.policy(pv, env, &format!("{rf}.policy")))
                    .transpose()?
                    .flatten(),
            );
            regions.push((
                rs.name.clone(),
                RegionSize {
                    bytes,
                    thp: rs.thp,
                    max_of: 0,
                    vma_bytes: self.region_vma_bytes(rs, env, &rf)?,
                },
            ));
        }
        // The mapped shared regions follow the process's own (the check
        // made every name known and distinct from them).
        let mut shared_of = Vec::new();
        for s in &ps.shared {
            let Some(k) = shared.iter().position(|r| &r.name == s) else {
                return Err(self.err(
                    format!("{pf}.shared"),
                    format!("no [[shared]] region named '{s}'"),
                ));
            };
            shared_of.push(k);
            region_policies.push(shared[k].policy.clone());
            regions.push((
                s.clone(),
                RegionSize {
                    bytes: shared[k].bytes,
                    thp: shared[k].thp,
                    max_of: 0,
                    vma_bytes: None,
                },
            ));
        }

        // Each thread with the byte ranges its phases still have to place.
        let mut threads: Vec<(Thread, Vec<PendingRange>)> = Vec::new();
        let mut groups: Vec<(String, std::ops::Range<usize>)> = Vec::new();
        for (ti, ts) in ps.threads.iter().enumerate() {
            let tf = format!("{pf}.thread[{ti}]");
            let n = self.count_in(
                "process.thread.count",
                &ts.count,
                env,
                Kind::Count,
                &format!("{tf}.count"),
            )?;
            self.threads = self.threads.saturating_add(n);
            if self.threads > MAX_THREADS {
                return Err(self.err(
                    format!("{tf}.count"),
                    format!("more than {MAX_THREADS} threads in total"),
                ));
            }
            self.charge(n, &format!("{tf}.count"))?;
            let start_after = match &ts.start_after {
                None => Vec::new(),
                Some(g) => {
                    let range = groups
                        .iter()
                        .find(|(name, _)| name == g)
                        .map(|(_, r)| r.clone())
                        .ok_or_else(|| {
                            self.err(
                                format!("{tf}.start_after"),
                                format!("no earlier thread group named '{g}' in this process"),
                            )
                        })?;
                    range.collect()
                }
            };
            let first = threads.len();
            env.push("n", n as i64);
            for i in 0..n {
                let tname = if n > 1 {
                    format!("{}.{i}", ts.name)
                } else {
                    ts.name.clone()
                };
                // On error the scope is abandoned with `env` and `self.at`
                // still pushed: errors end the resolution.
                env.push("i", i as i64);
                self.at.push(format!("thread {tname}"));
                let affinity = match &ts.affinity {
                    Some(a) => self.cpuset(a, env, &format!("{tf}.affinity"))?,
                    None => None,
                };
                let policy = match &ts.policy {
                    Some(pv) => self.policy(pv, env, &format!("{tf}.policy"))?,
                    None => None,
                };
                let mut pending = Vec::new();
                let phases = self.phases(
                    &ts.phases,
                    &format!("{tf}.phases"),
                    env,
                    &mut regions,
                    &mut pending,
                )?;
                self.at.pop();
                env.pop();
                threads.push((
                    Thread {
                        name: tname,
                        affinity,
                        policy,
                        start_after: start_after.clone(),
                        phases,
                    },
                    pending,
                ));
            }
            env.pop();
            groups.push((ts.name.clone(), first..threads.len()));
        }

        Ok(PendingProcess {
            name,
            pf: pf.to_string(),
            cgroup: ps.cgroup.clone(),
            own: ps.regions.len(),
            shared_of,
            regions,
            region_policies,
            threads,
        })
    }

    /// The scaled size of each `[[shared]]` region: scaled as a process's
    /// own region is, never below one page per slice of it that any
    /// process uses, so every process maps the same size.
    pub(super) fn scale_shared(
        &self,
        shared: &[SharedRegion],
        pending: &[PendingProcess],
    ) -> Result<Vec<u64>> {
        let mut max_of = vec![0u64; shared.len()];
        for p in pending {
            for (j, &k) in p.shared_of.iter().enumerate() {
                max_of[k] = max_of[k].max(p.regions[p.own + j].1.max_of);
            }
        }
        let total_mem = self.machine.total_mem_bytes();
        shared
            .iter()
            .zip(max_of)
            .enumerate()
            .map(|(k, (s, of))| {
                let bytes = self.scaled(s.bytes, of);
                if bytes > total_mem {
                    return Err(self.err(
                        format!("shared[{k}].size"),
                        format!(
                            "shared region '{}' is {bytes} bytes, more than the machine's {total_mem} bytes of memory",
                            s.name
                        ),
                    ));
                }
                Ok(bytes)
            })
            .collect()
    }

    /// `bytes` scaled down to whole pages, never below one page per slice
    /// of the `max_of` slices the region is cut into, nor above `bytes`.
    fn scaled(&self, bytes: u64, max_of: u64) -> u64 {
        if self.scale == 1.0 {
            return bytes;
        }
        let pages = bytes / PAGE;
        let min = max_of.max(1).min(pages);
        scale_down(pages, self.scale).clamp(min, pages) * PAGE
    }

    /// Pass 2 of a process: scales its own regions, takes the shared
    /// regions' sizes from `shared_bytes` ([`Resolver::scale_shared`]),
    /// and places every range.
    pub(super) fn place_process(
        &mut self,
        p: PendingProcess,
        shared_bytes: &[u64],
    ) -> Result<Process> {
        let total_mem = self.machine.total_mem_bytes();
        let PendingProcess {
            name,
            pf,
            cgroup,
            own,
            shared_of,
            regions,
            region_policies,
            threads,
        } = p;
        let mut scaled: Vec<u64> = regions[..own]
            .iter()
            .map(|(_, r)| self.scaled(r.bytes, r.max_of))
            .collect();
        for (ri, &bytes) in scaled.iter().enumerate() {
            if bytes > total_mem {
                self.at.push(format!("process {name}"));
                return Err(self.err(
                    format!("{pf}.region[{ri}].size"),
                    format!(
                        "region '{}' is {bytes} bytes, more than the machine's {total_mem} bytes of memory",
                        regions[ri].0
                    ),
                ));
            }
        }
        scaled.extend(shared_of.iter().map(|&k| shared_bytes[k]));
        let threads = threads
            .into_iter()
            .map(|(mut t, pending)| {
                place(&mut t.phases, &mut pending.into_iter(), &regions, &scaled);
                t
            })
            .collect();
        let regions = regions
            .into_iter()
            .zip(scaled.iter())
            .zip(region_policies)
            .enumerate()
            .map(|(ri, (((name, r), &bytes), policy))| Region {
                name,
                bytes,
                page_size: if r.thp {
                    PageSize::Thp2M
                } else {
                    PageSize::Base4K
                },
                policy,
                runtime: false,
                shared: ri >= own,
                vma_bytes: r.vma_bytes.map(|v| v.min(bytes)),
            })
            .collect();
        Ok(Process {
            name,
            cgroup,
            regions,
            threads,
        })
    }

    /// Resolves the declared cgroups, parents first; ancestors that were
    /// not declared are created empty.
    pub(super) fn cgroups(&self, spec: &WorkloadSpec, env: &Env) -> Result<Vec<Cgroup>> {
        let mut resolved: BTreeMap<String, Cgroup> = BTreeMap::new();
        for (k, c) in spec.cgroups.iter().enumerate() {
            let f = format!("cgroup[{k}]");
            let cpuset_cpus = match &c.cpuset_cpus {
                Some(s) => Some(
                    self.cpuset(s, env, &format!("{f}.cpuset_cpus"))?
                        .unwrap_or_else(|| self.machine.all_cpus()),
                ),
                None => None,
            };
            let cpuset_mems = match &c.cpuset_mems {
                Some(s) => {
                    let nodes = expr::eval_nodes(s, env, self.machine.nr_nodes()).map_err(|m| {
                        self.err(format!("{f}.cpuset_mems"), format!("\"{s}\": {m}"))
                    })?;
                    if nodes.is_empty() {
                        return Err(self.err(format!("{f}.cpuset_mems"), "empty node list"));
                    }
                    Some(nodes)
                }
                None => None,
            };
            resolved.insert(
                c.path.clone(),
                Cgroup {
                    path: c.path.clone(),
                    cpuset_cpus,
                    cpuset_mems,
                    files: c.files.clone(),
                },
            );
        }
        // Parents first; ancestors that were not declared are created empty.
        let mut out: Vec<Cgroup> = Vec::new();
        fn emit(path: &str, resolved: &BTreeMap<String, Cgroup>, out: &mut Vec<Cgroup>) {
            if path == "/" || out.iter().any(|c| c.path == path) {
                return;
            }
            if let Some((parent, _)) = path.rsplit_once('/') {
                if !parent.is_empty() {
                    emit(parent, resolved, out);
                }
            }
            out.push(resolved.get(path).cloned().unwrap_or_else(|| Cgroup {
                path: path.to_string(),
                cpuset_cpus: None,
                cpuset_mems: None,
                files: BTreeMap::new(),
            }));
        }
        for c in &spec.cgroups {
            emit(&c.path, &resolved, &mut out);
        }
        Ok(out)
    }
}
