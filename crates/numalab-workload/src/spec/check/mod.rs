//! Check: the syntax tree into the checked spec ([`WorkloadSpec`]).
//!
//! Resolves names (regions, thread groups, cgroups, loop variables), picks
//! each phase's one verb and the modifiers it allows, parses every
//! expression and set, bounds the values the language bounds (ranges and
//! units), types `cgroup_write` values against the knob registry, and
//! fills defaults. The first problem is the error, naming its field.
//! Phases are checked in [`phase`], cgroups and their files in [`cgroup`].
//! Left out: anything that needs the machine, seed or scale (that is
//! [`mod@super::resolve`]), and the kernel's own legality rules for policies and
//! affinities, which the kernel model applies when the call is made.

mod cgroup;
mod phase;

use super::checked::{CgroupSpec, PhaseSpec, ProcessSpec, RegionSpec, ThreadSpec, WorkloadSpec};
use super::error::{Result, WorkloadError};
use super::limits::BUILTIN_VARS;
use super::parse::{Num, RawRegion, RawSpec};
use crate::expr;
use crate::model::Score;
use crate::ranges;
use std::collections::BTreeSet;

/// Checks a parsed workload. `origin` (a preset name or file path) is named
/// in every error.
pub(crate) fn check(raw: RawSpec, origin: &str) -> Result<WorkloadSpec> {
    Checker { origin }.spec(raw)
}

/// The check of one spec: the origin it names in errors.
struct Checker<'a> {
    origin: &'a str,
}

impl Checker<'_> {
    /// A field error naming `field`.
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> WorkloadError {
        WorkloadError::Field {
            origin: self.origin.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// `v` checked against the plausible range of `key`
    /// ([`ranges::WORKLOAD_RANGES`]), the error naming `field`.
    fn ranged(&self, key: &str, field: &str, v: f64) -> Result<f64> {
        ranges::range(key)
            .check(v)
            .map(|()| v)
            .map_err(|m| self.err(field, m))
    }

    /// `n` is an integer or an expression that parses.
    fn num(&self, n: &Num, field: &str) -> Result<()> {
        if let Num::Expr(s) = n {
            expr::parse(s).map_err(|m| self.err(field, format!("in \"{s}\": {m}")))?;
        }
        Ok(())
    }

    /// `s` is a CPU set the language can write.
    fn cpuset(&self, s: &str, field: &str) -> Result<()> {
        expr::check_cpuset(s).map_err(|m| self.err(field, m))
    }

    /// `s` is a node list the language can write.
    fn nodes(&self, s: &str, field: &str) -> Result<()> {
        expr::check_nodes(s).map_err(|m| self.err(field, m))
    }

    /// `s` is a name: letters, digits, `_`, `-`, `.`.
    fn name(&self, s: &str, field: &str) -> Result<()> {
        if s.is_empty()
            || !s
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(self.err(
                field,
                format!("'{s}' is not a name (letters, digits, '_', '-', '.')"),
            ));
        }
        Ok(())
    }

    /// The whole spec: top-level keys, parameters, cgroups, processes.
    fn spec(&self, raw: RawSpec) -> Result<WorkloadSpec> {
        let name = match raw.name {
            Some(n) => {
                if n.trim().is_empty() {
                    return Err(self.err("name", "must not be empty"));
                }
                n
            }
            None => std::path::Path::new(self.origin).file_stem().map_or_else(
                || self.origin.to_string(),
                |s| s.to_string_lossy().into_owned(),
            ),
        };
        let score = match raw.score.as_deref() {
            None | Some("elapsed") => Score::Elapsed,
            Some("throughput") => Score::Throughput,
            Some(other) => {
                return Err(self.err(
                    "score",
                    format!("unknown score '{other}' (elapsed, throughput)"),
                ))
            }
        };
        for (k, v) in &raw.params {
            let field = format!("params.{k}");
            if !expr::is_identifier(k) || expr::is_unit(k) || BUILTIN_VARS.contains(&k.as_str()) {
                return Err(self.err(
                    &field,
                    format!("'{k}' is not a parameter name (an identifier, not a unit or built-in variable)"),
                ));
            }
            self.num(v, &field)?;
        }
        if let Some(d) = &raw.duration {
            self.num(d, "duration")?;
        }
        let mut cgroups = Vec::new();
        let mut paths = BTreeSet::new();
        for (k, c) in raw.cgroup.into_iter().enumerate() {
            let f = format!("cgroup[{k}]");
            self.cgroup_path(&c.path, &format!("{f}.path"))?;
            if !paths.insert(c.path.clone()) {
                return Err(self.err(
                    format!("{f}.path"),
                    format!("cgroup '{}' is declared twice", c.path),
                ));
            }
            let (cpuset_cpus, cpuset_mems, files) = self.cgroup_files(&c, &f)?;
            if let Some(s) = &cpuset_cpus {
                self.cpuset(s, &format!("{f}.cpuset_cpus"))?;
            }
            if let Some(s) = &cpuset_mems {
                self.nodes(s, &format!("{f}.cpuset_mems"))?;
            }
            cgroups.push(CgroupSpec {
                path: c.path,
                cpuset_cpus,
                cpuset_mems,
                files,
            });
        }
        let mut shared = Vec::new();
        for (si, r) in raw.shared.into_iter().enumerate() {
            let sf = format!("shared[{si}]");
            if shared.iter().any(|s: &RegionSpec| s.name == r.name) {
                return Err(self.err(
                    format!("{sf}.name"),
                    format!("shared region name '{}' is used twice", r.name),
                ));
            }
            shared.push(self.region(r, &sf)?);
        }
        let mut mapped = BTreeSet::new();
        let mut processes = Vec::new();
        let mut pnames = BTreeSet::new();
        for (pi, p) in raw.process.into_iter().enumerate() {
            let f = format!("process[{pi}]");
            self.name(&p.name, &format!("{f}.name"))?;
            if !pnames.insert(p.name.clone()) {
                return Err(self.err(
                    format!("{f}.name"),
                    format!("process name '{}' is used twice", p.name),
                ));
            }
            let count = p.count.unwrap_or(Num::Int(1));
            self.num(&count, &format!("{f}.count"))?;
            let cgroup = p.cgroup.unwrap_or_else(|| "/".to_string());
            let known = cgroup == "/"
                || paths
                    .iter()
                    .any(|c| c == &cgroup || c.starts_with(&format!("{cgroup}/")));
            if !known {
                return Err(self.err(
                    format!("{f}.cgroup"),
                    format!("no cgroup '{cgroup}' is declared (add a [[cgroup]] with that path)"),
                ));
            }
            let mut regions = Vec::new();
            let mut rnames: Vec<String> = Vec::new();
            for (ri, r) in p.region.into_iter().enumerate() {
                let rf = format!("{f}.region[{ri}]");
                if rnames.contains(&r.name) {
                    return Err(self.err(
                        format!("{rf}.name"),
                        format!("region name '{}' is used twice", r.name),
                    ));
                }
                rnames.push(r.name.clone());
                regions.push(self.region(r, &rf)?);
            }
            for (k, s) in p.shared.iter().enumerate() {
                let sf = format!("{f}.shared[{k}]");
                if !shared.iter().any(|r| &r.name == s) {
                    let declared: Vec<&str> = shared.iter().map(|r| r.name.as_str()).collect();
                    return Err(self.err(
                        sf,
                        format!(
                            "no [[shared]] region named '{s}' (declared: {})",
                            if declared.is_empty() {
                                "none".to_string()
                            } else {
                                declared.join(", ")
                            }
                        ),
                    ));
                }
                if p.shared[..k].contains(s) {
                    return Err(self.err(sf, format!("shared region '{s}' is mapped twice")));
                }
                if rnames.contains(s) {
                    return Err(self.err(
                        sf,
                        format!(
                            "'{s}' names both a region of this process and the [[shared]] region it maps: phases could not tell them apart (rename one)"
                        ),
                    ));
                }
                mapped.insert(s.clone());
                rnames.push(s.clone());
            }
            let mut threads = Vec::new();
            let mut gnames: Vec<String> = Vec::new();
            for (ti, t) in p.thread.into_iter().enumerate() {
                let tf = format!("{f}.thread[{ti}]");
                self.name(&t.name, &format!("{tf}.name"))?;
                if gnames.contains(&t.name) {
                    return Err(self.err(
                        format!("{tf}.name"),
                        format!("thread group name '{}' is used twice", t.name),
                    ));
                }
                let count = t.count.unwrap_or(Num::Int(1));
                self.num(&count, &format!("{tf}.count"))?;
                if let Some(a) = &t.affinity {
                    self.cpuset(a, &format!("{tf}.affinity"))?;
                }
                let policy = t
                    .policy
                    .map(|pv| self.policy(pv, &format!("{tf}.policy")))
                    .transpose()?;
                if let Some(g) = &t.start_after {
                    if !gnames.contains(g) {
                        return Err(self.err(
                            format!("{tf}.start_after"),
                            format!("no earlier thread group named '{g}' in this process"),
                        ));
                    }
                }
                let mut phases =
                    self.phases(t.phases, &format!("{tf}.phases"), &rnames, &mut Vec::new())?;
                // The per-task control as the thread's first act (numalab's
                // prctl; the kernel would have it inherited at clone).
                if let Some(w) = &t.numa_balancing {
                    let c = self.numa_ctl(w, &format!("{tf}.numa_balancing"))?;
                    phases.insert(0, PhaseSpec::SetNumaBalancing(c));
                }
                for (k, ph) in phases.iter().enumerate() {
                    self.cgroup_writes_exist(ph, &paths, &format!("{tf}.phases[{k}]"))?;
                }
                gnames.push(t.name.clone());
                threads.push(ThreadSpec {
                    name: t.name,
                    count,
                    affinity: t.affinity,
                    policy,
                    start_after: t.start_after,
                    phases,
                });
            }
            processes.push(ProcessSpec {
                name: p.name,
                count,
                cgroup,
                regions,
                shared: p.shared,
                threads,
            });
        }
        if let Some((si, s)) = shared
            .iter()
            .enumerate()
            .find(|(_, s)| !mapped.contains(&s.name))
        {
            return Err(self.err(
                format!("shared[{si}].name"),
                format!(
                    "shared region '{}' is mapped by no process (list it in a process's `shared`)",
                    s.name
                ),
            ));
        }
        Ok(WorkloadSpec {
            origin: self.origin.to_string(),
            test: raw
                .test
                .unwrap_or_else(|| name.to_uppercase().replace('-', "_")),
            name,
            description: raw.description.unwrap_or_default(),
            score,
            duration: raw.duration,
            cgroups,
            processes,
            shared,
            params: raw.params.into_iter().collect(),
        })
    }

    /// A `[[process.region]]` or `[[shared]]` entry (field path `rf`): its
    /// name, size and policy; names unique where they must be are the
    /// caller's check.
    fn region(&self, r: RawRegion, rf: &str) -> Result<RegionSpec> {
        self.name(&r.name, &format!("{rf}.name"))?;
        self.num(&r.size, &format!("{rf}.size"))?;
        let policy = r
            .policy
            .map(|pv| self.policy(pv, &format!("{rf}.policy")))
            .transpose()?;
        if let Some(n) = &r.vma_size {
            self.num(n, &format!("{rf}.vma_size"))?;
        }
        Ok(RegionSpec {
            name: r.name,
            size: r.size,
            thp: r.thp,
            policy,
            vma_size: r.vma_size,
        })
    }
}
