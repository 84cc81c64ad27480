//! Resolve: a checked spec plus a machine, a seed and a scale into the
//! engine's [`Workload`].
//!
//! Evaluates every expression (with the machine's `ncpus`, `nnodes`, ...,
//! the parameters, and `p`/`i`/`n`/`np` and loop variables where they are
//! bound), expands process and thread counts and `for` loops, and applies
//! `--scale`. Two passes: the first resolves every phase of every process
//! ([`phase`]) and notes which slices use each region, the second scales
//! region sizes and places every range in them; it runs once every process
//! is through the first, so a `[[shared]]` region, which several processes
//! map, is scaled once for all of them. Processes, regions and
//! cgroups are in [`process`], the scaling arithmetic in [`scale`]. Left
//! out: the kernel's legality rules for policies and affinities (the kernel
//! model applies them when the workload makes the call).

mod phase;
mod process;
pub(crate) mod scale;

use crate::expr::{self, Env, Kind};
use crate::model::{PolicyMode, PolicySpec, Workload};
use crate::ranges;
use crate::spec::checked::{PolicyValue, WorkloadSpec};
use crate::spec::error::{Result, WorkloadError};
use crate::spec::limits::{MAX_PHASES, MAX_PROCESSES};
use crate::spec::parse::Num;
use numalab_topology::{CpuSet, Machine};
use scale::scale_down;
use std::collections::BTreeSet;

/// A region of the process being resolved, before scaling.
struct RegionSize {
    /// Size in bytes as written (whole pages).
    bytes: u64,
    /// Backed with transparent huge pages.
    thp: bool,
    /// Largest `of` of a slice using the region (1 for offset/len uses).
    max_of: u64,
    /// `vma_size` evaluated, whole pages.
    vma_bytes: Option<u64>,
}

/// The resolution of one spec for one machine and scale.
struct Resolver<'a> {
    origin: &'a str,
    machine: &'a Machine,
    scale: f64,
    work: u64,
    threads: u64,
    /// Where we are (process instance, thread, loop variables), for messages.
    at: Vec<String>,
}

impl Resolver<'_> {
    /// A field error, with where the resolution is (process, thread, loop).
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> WorkloadError {
        let mut message = message.into();
        if !self.at.is_empty() {
            message = format!("{message} (in {})", self.at.join(", "));
        }
        WorkloadError::Field {
            origin: self.origin.to_string(),
            field: field.into(),
            message,
        }
    }

    /// The value of `n`, an expression evaluated in `env` with unit `kind`.
    fn num(&self, n: &Num, env: &Env, kind: Kind, field: &str) -> Result<i64> {
        match n {
            Num::Int(v) => Ok(*v),
            Num::Expr(s) => {
                expr::eval_str(s, env, kind).map_err(|m| self.err(field, format!("\"{s}\": {m}")))
            }
        }
    }

    /// A non-negative count.
    fn count(&self, n: &Num, env: &Env, kind: Kind, field: &str) -> Result<u64> {
        let v = self.num(n, env, kind, field)?;
        u64::try_from(v).map_err(|_| self.err(field, format!("{n} is {v}: must not be negative")))
    }

    /// A non-negative count (as [`Resolver::count`]) within the plausible
    /// range of `key` ([`ranges::WORKLOAD_RANGES`]), checked before scaling.
    fn count_in(&self, key: &str, n: &Num, env: &Env, kind: Kind, field: &str) -> Result<u64> {
        let v = self.count(n, env, kind, field)?;
        ranges::range(key)
            .check(v as f64)
            .map_err(|m| self.err(field, m))?;
        Ok(v)
    }

    /// Counts `units` of expanded work against [`MAX_PHASES`].
    fn charge(&mut self, units: u64, field: &str) -> Result<()> {
        self.work += units;
        if self.work > MAX_PHASES {
            return Err(self.err(
                field,
                format!(
                    "the workload expands to more than {MAX_PHASES} phases and loop iterations"
                ),
            ));
        }
        Ok(())
    }

    /// A policy with its node list evaluated; `None` for MPOL_DEFAULT.
    fn policy(&self, pv: &PolicyValue, env: &Env, field: &str) -> Result<Option<PolicySpec>> {
        let PolicyValue::Policy {
            mode,
            nodes,
            numa_balancing,
        } = pv
        else {
            return Ok(None);
        };
        let nodes = match nodes {
            Some(s) => expr::eval_nodes(s, env, self.machine.nr_nodes())
                .map_err(|m| self.err(format!("{field}.nodes"), format!("\"{s}\": {m}")))?,
            None => Vec::new(),
        };
        let needs_nodes = !matches!(mode, PolicyMode::Default | PolicyMode::Local);
        if needs_nodes && nodes.is_empty() {
            return Err(self.err(
                format!("{field}.nodes"),
                format!("mode '{}' with an empty node list", mode.word()),
            ));
        }
        if !needs_nodes && !nodes.is_empty() {
            return Err(self.err(
                format!("{field}.nodes"),
                format!("mode '{}' takes no nodes", mode.word()),
            ));
        }
        Ok(Some(PolicySpec {
            mode: *mode,
            nodes,
            numa_balancing: *numa_balancing,
        }))
    }

    /// A CPU set evaluated for the machine; `None` for all CPUs.
    fn cpuset(&self, s: &str, env: &Env, field: &str) -> Result<Option<CpuSet>> {
        expr::eval_cpuset(s, env, self.machine)
            .map_err(|m| self.err(field, format!("\"{s}\": {m}")))
    }

    /// The index of region `name` in the process being resolved.
    fn region(&self, name: &str, regions: &[(String, RegionSize)], field: &str) -> Result<usize> {
        regions
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| self.err(field, format!("no region named '{name}' in this process")))
    }
}

/// Resolves `spec` for `machine`: evaluates every expression, expands
/// process and thread counts and `for` loops, and applies `scale`.
///
/// `seed` is the run's seed; expressions see it (mod 2^63) as `seed`.
/// `scale` (0 < F <= 1) shrinks region sizes (rounded down to whole pages,
/// never below one page per slice that uses the region), passes, accesses,
/// repeat counts (rounded up, at least 1) and `duration`; compute and sleep
/// times stay. The shape (which thread touches which slice, where memory is
/// first touched, every binding) does not change. The result is a pure
/// function of the arguments.
pub fn resolve(spec: &WorkloadSpec, machine: &Machine, seed: u64, scale: f64) -> Result<Workload> {
    if !(scale.is_finite() && scale > 0.0 && scale <= 1.0) {
        return Err(WorkloadError::Scale(scale));
    }
    let mut r = Resolver {
        origin: &spec.origin,
        machine,
        scale,
        work: 0,
        threads: 0,
        at: Vec::new(),
    };
    let ncpus = machine.nr_cpus();
    let nnodes = machine.nr_nodes();
    if ncpus == 0 || nnodes == 0 || machine.nodes.len() != nnodes {
        return Err(r.err("machine", "the machine has no CPUs or no nodes"));
    }
    let mut env = Env::new();
    env.push("ncpus", ncpus as i64);
    env.push("nnodes", nnodes as i64);
    env.push("ncores", machine.nr_cores() as i64);
    env.push("cpus_per_node", (ncpus / nnodes) as i64);
    env.push("seed", (seed & i64::MAX as u64) as i64);
    for (k, v) in &spec.params {
        let value = r.num(v, &env, Kind::Count, &format!("params.{k}"))?;
        env.push(k, value);
    }

    let duration_ns = match &spec.duration {
        Some(d) => {
            let ns = r.num(d, &env, Kind::Time, "duration")?;
            if ns <= 0 {
                return Err(r.err("duration", format!("{d} is {ns} ns: must be positive")));
            }
            ranges::range("duration")
                .check(ns as f64)
                .map_err(|m| r.err("duration", format!("{d} is {ns} ns: {m}")))?;
            Some(scale_down(ns as u64, scale).max(1))
        }
        None => None,
    };
    let cgroups = r.cgroups(spec, &env)?;
    let shared = r.shared(spec, &env)?;

    let mut pending = Vec::new();
    let mut names = BTreeSet::new();
    let mut instances = 0u64;
    for (pi, ps) in spec.processes.iter().enumerate() {
        let pf = format!("process[{pi}]");
        if ps.cgroup != "/" && !cgroups.iter().any(|c| c.path == ps.cgroup) {
            return Err(r.err(
                format!("{pf}.cgroup"),
                format!("no cgroup '{}' is declared", ps.cgroup),
            ));
        }
        let np = r.count_in(
            "process.count",
            &ps.count,
            &env,
            Kind::Count,
            &format!("{pf}.count"),
        )?;
        instances = instances.saturating_add(np);
        if instances > MAX_PROCESSES {
            return Err(r.err(
                format!("{pf}.count"),
                format!("more than {MAX_PROCESSES} processes in total"),
            ));
        }
        env.push("np", np as i64);
        for p in 0..np {
            let name = if np > 1 {
                format!("{}.{p}", ps.name)
            } else {
                ps.name.clone()
            };
            if !names.insert(name.clone()) {
                return Err(r.err(
                    format!("{pf}.name"),
                    format!("two processes are named '{name}'"),
                ));
            }
            env.push("p", p as i64);
            r.at.push(format!("process {name}"));
            pending.push(r.process(ps, &pf, name, &mut env, &shared)?);
            r.at.pop();
            env.pop();
        }
        env.pop();
    }
    // Pass 2, once every process's use of the shared regions is known.
    let shared_bytes = r.scale_shared(&shared, &pending)?;
    let processes = pending
        .into_iter()
        .map(|p| r.place_process(p, &shared_bytes))
        .collect::<Result<Vec<_>>>()?;
    if r.threads == 0 {
        return Err(r.err(
            "process",
            "the workload has no threads (no [[process.thread]], or every count is 0)",
        ));
    }
    Ok(Workload {
        name: spec.name.clone(),
        description: spec.description.clone(),
        test: spec.test.clone(),
        cgroups,
        processes,
        score: spec.score.clone(),
        duration_ns,
    })
}
