//! Resolve, processes and cgroups: one process instance's regions and
//! threads (thread counts expanded, start-after groups turned into thread
//! indices), region sizes scaled once every thread's slices are known, and
//! the cgroups with their CPU and node sets. Left out: the phases
//! themselves ([`super::phase`]).

use super::phase::{place, PendingRange};
use super::scale::scale_down;
use super::{RegionSize, Resolver};
use crate::expr::{self, Env, Kind};
use crate::model::{Cgroup, PageSize, Process, Region, Thread};
use crate::ranges;
use crate::spec::checked::{ProcessSpec, WorkloadSpec};
use crate::spec::error::Result;
use crate::spec::limits::{MAX_THREADS, PAGE};
use std::collections::BTreeMap;

impl Resolver<'_> {
    /// Resolves one instance of process `ps` (field path `pf`), named `name`.
    pub(super) fn process(
        &mut self,
        ps: &ProcessSpec,
        pf: &str,
        name: String,
        env: &mut Env,
    ) -> Result<Process> {
        let total_mem = self.machine.total_mem_bytes();
        let mut regions: Vec<(String, RegionSize)> = Vec::new();
        let mut region_policies = Vec::new();
        for (ri, rs) in ps.regions.iter().enumerate() {
            let rf = format!("{pf}.region[{ri}]");
            let size = self.count(&rs.size, env, Kind::Size, &format!("{rf}.size"))?;
            if size == 0 {
                return Err(self.err(format!("{rf}.size"), "a region must not be empty"));
            }
            ranges::range("process.region.size")
                .check(size as f64)
                .map_err(|m| self.err(format!("{rf}.size"), m))?;
            let bytes = size
                .checked_next_multiple_of(PAGE)
                .ok_or_else(|| self.err(format!("{rf}.size"), "size overflows"))?;
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

        // Pass 2: scale region sizes, then place every range.
        let scaled: Vec<u64> = regions
            .iter()
            .map(|(_, r)| {
                if self.scale == 1.0 {
                    return r.bytes;
                }
                let pages = r.bytes / PAGE;
                let min = r.max_of.max(1).min(pages);
                scale_down(pages, self.scale).clamp(min, pages) * PAGE
            })
            .collect();
        for (ri, &bytes) in scaled.iter().enumerate() {
            if bytes > total_mem {
                return Err(self.err(
                    format!("{pf}.region[{ri}].size"),
                    format!(
                        "region '{}' is {bytes} bytes, more than the machine's {total_mem} bytes of memory",
                        regions[ri].0
                    ),
                ));
            }
        }
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
            .map(|(((name, r), &bytes), policy)| Region {
                name,
                bytes,
                page_size: if r.thp {
                    PageSize::Thp2M
                } else {
                    PageSize::Base4K
                },
                policy,
                runtime: false,
            })
            .collect();
        Ok(Process {
            name,
            cgroup: ps.cgroup.clone(),
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
