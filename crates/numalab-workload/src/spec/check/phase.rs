//! Check, phases: a thread's phase tables into [`PhaseSpec`]s. Each phase
//! has exactly one verb and only the modifiers that verb takes; region
//! names must exist in the process, loop variables must not shadow, and
//! memory policies, distributions and byte ranges are checked here too.
//! Left out: cgroup writes' files and values ([`super::cgroup`]), and every
//! value that depends on the machine (resolve).

use super::Checker;
use crate::expr;
use crate::model::{Distribution, NumaBalancingCtl, PolicyMode};
use crate::spec::checked::{PhaseSpec, PolicyValue, RangeSpec};
use crate::spec::error::Result;
use crate::spec::limits::BUILTIN_VARS;
use crate::spec::parse::{NameOr, Num, RawDist, RawPhase, RawPolicy, VERBS};

impl Checker<'_> {
    /// A memory policy: a known mode, nodes exactly when the mode takes
    /// them; `default` without the flag is [`PolicyValue::Default`].
    pub(super) fn policy(&self, p: RawPolicy, field: &str) -> Result<PolicyValue> {
        let (mode, nodes, numa_balancing, mode_field) = match p {
            NameOr::Name(s) => (s, None, false, field.to_string()),
            NameOr::Table(t) => (t.mode, t.nodes, t.numa_balancing, format!("{field}.mode")),
        };
        let Some(mode) = PolicyMode::from_word(&mode) else {
            return Err(self.err(
                mode_field,
                format!(
                    "unknown mode '{mode}' (default, bind, preferred, preferred-many, interleave, local)"
                ),
            ));
        };
        match (mode, &nodes) {
            (PolicyMode::Default | PolicyMode::Local, Some(_)) => {
                return Err(self.err(
                    format!("{field}.nodes"),
                    format!("mode '{}' takes no nodes", mode.word()),
                ))
            }
            (PolicyMode::Default | PolicyMode::Local, None) => {}
            (_, None) => {
                return Err(self.err(
                    field,
                    format!(
                        "mode '{}' needs nodes: write {{ mode = \"{}\", nodes = \"...\" }}",
                        mode.word(),
                        mode.word()
                    ),
                ))
            }
            (_, Some(s)) => self.nodes(s, &format!("{field}.nodes"))?,
        }
        if mode == PolicyMode::Default && !numa_balancing {
            return Ok(PolicyValue::Default);
        }
        Ok(PolicyValue::Policy {
            mode,
            nodes,
            numa_balancing,
        })
    }

    /// A random phase's distribution, its parameters in range.
    pub(super) fn distribution(&self, d: RawDist, field: &str) -> Result<Distribution> {
        match d {
            NameOr::Name(s) if s == "uniform" => Ok(Distribution::Uniform),
            NameOr::Name(s) => Err(self.err(
                field,
                format!("unknown distribution '{s}' (\"uniform\", {{ zipf = S }}, {{ hot = F, probability = P }})"),
            )),
            NameOr::Table(t) => match (t.zipf, t.hot, t.probability) {
                (Some(s), None, None) => {
                    if !(s.is_finite() && s > 0.0) {
                        return Err(self.err(format!("{field}.zipf"), format!("{s}: must be > 0")));
                    }
                    let s = self.ranged("random.distribution.zipf", &format!("{field}.zipf"), s)?;
                    Ok(Distribution::Zipf { s })
                }
                (None, Some(h), Some(p)) => {
                    if !(h > 0.0 && h <= 1.0) {
                        return Err(self.err(format!("{field}.hot"), format!("{h}: must be in (0, 1]")));
                    }
                    if !(0.0..=1.0).contains(&p) {
                        return Err(self.err(
                            format!("{field}.probability"),
                            format!("{p}: must be in [0, 1]"),
                        ));
                    }
                    let h = self.ranged("random.distribution.hot", &format!("{field}.hot"), h)?;
                    let p = self.ranged(
                        "random.distribution.probability",
                        &format!("{field}.probability"),
                        p,
                    )?;
                    Ok(Distribution::Hot {
                        fraction: h,
                        probability: p,
                    })
                }
                _ => Err(self.err(
                    field,
                    "expected { zipf = S } or { hot = F, probability = P }",
                )),
            },
        }
    }

    /// A stream or random phase's byte range: a slice, or offset/len, or
    /// the whole region; the keys are taken out of `ph`.
    pub(super) fn range(&self, ph: &mut RawPhase, field: &str) -> Result<RangeSpec> {
        let slice = ph.slice.take();
        let offset = ph.offset.take();
        let len = ph.len.take();
        match (slice, offset.is_some() || len.is_some()) {
            (Some(_), true) => Err(self.err(
                format!("{field}.slice"),
                "give either slice or offset/len, not both",
            )),
            (Some(v), false) => {
                let [index, of]: [Num; 2] = v.try_into().map_err(|v: Vec<Num>| {
                    self.err(
                        format!("{field}.slice"),
                        format!("expected [INDEX, OF], got {} items", v.len()),
                    )
                })?;
                self.num(&index, &format!("{field}.slice[0]"))?;
                self.num(&of, &format!("{field}.slice[1]"))?;
                Ok(RangeSpec::Slice { index, of })
            }
            (None, true) => {
                if let Some(o) = &offset {
                    self.num(o, &format!("{field}.offset"))?;
                }
                if let Some(l) = &len {
                    self.num(l, &format!("{field}.len"))?;
                }
                Ok(RangeSpec::Bytes { offset, len })
            }
            (None, false) => Ok(RangeSpec::Whole),
        }
    }

    /// A list of phases, `field` naming the list; `loops` are the loop
    /// variables in scope.
    pub(super) fn phases(
        &self,
        raw: Vec<RawPhase>,
        field: &str,
        regions: &[String],
        loops: &mut Vec<String>,
    ) -> Result<Vec<PhaseSpec>> {
        raw.into_iter()
            .enumerate()
            .map(|(k, ph)| self.phase(ph, &format!("{field}[{k}]"), regions, loops))
            .collect()
    }

    /// `name` must be one of the process's `regions`.
    pub(super) fn region_name(&self, name: &str, regions: &[String], field: &str) -> Result<()> {
        if !regions.iter().any(|r| r == name) {
            return Err(self.err(
                field,
                format!(
                    "no region named '{name}' in this process (regions: {})",
                    if regions.is_empty() {
                        "none".to_string()
                    } else {
                        regions.join(", ")
                    }
                ),
            ));
        }
        Ok(())
    }

    /// One phase: exactly one verb, only the modifiers it takes, each value
    /// checked and defaults filled in.
    pub(super) fn phase(
        &self,
        mut ph: RawPhase,
        field: &str,
        regions: &[String],
        loops: &mut Vec<String>,
    ) -> Result<PhaseSpec> {
        let verbs = ph.verbs();
        let verb = match verbs.as_slice() {
            [v] => *v,
            [] => {
                return Err(self.err(
                    field,
                    format!("a phase needs exactly one of: {}", VERBS.join(", ")),
                ))
            }
            many => {
                return Err(self.err(
                    field,
                    format!("a phase takes exactly one verb, found {}", many.join(", ")),
                ))
            }
        };
        let allowed: &[&str] = match verb {
            "stream" => &["passes", "write", "slice", "offset", "len"],
            "random" => &[
                "accesses",
                "distribution",
                "write_fraction",
                "mlp",
                "slice",
                "offset",
                "len",
            ],
            "repeat" => &["request", "body"],
            "for" => &["range", "body"],
            _ => &[],
        };
        if let Some(m) = ph.modifiers().into_iter().find(|m| !allowed.contains(m)) {
            return Err(self.err(
                format!("{field}.{m}"),
                format!("`{m}` does not apply to a `{verb}` phase"),
            ));
        }
        let vf = format!("{field}.{verb}");
        Ok(match verb {
            "stream" => {
                let region = ph.stream.take().unwrap_or_default();
                self.region_name(&region, regions, &vf)?;
                let passes = ph.passes.take().unwrap_or(Num::Int(1));
                self.num(&passes, &format!("{field}.passes"))?;
                PhaseSpec::Stream {
                    region,
                    passes,
                    write: ph.write.unwrap_or(true),
                    range: self.range(&mut ph, field)?,
                }
            }
            "random" => {
                let region = ph.random.take().unwrap_or_default();
                self.region_name(&region, regions, &vf)?;
                let accesses = ph.accesses.take().ok_or_else(|| {
                    self.err(
                        format!("{field}.accesses"),
                        "a random phase needs `accesses`",
                    )
                })?;
                self.num(&accesses, &format!("{field}.accesses"))?;
                let distribution = match ph.distribution.take() {
                    Some(d) => self.distribution(d, &format!("{field}.distribution"))?,
                    None => Distribution::Uniform,
                };
                let write_fraction = ph.write_fraction.unwrap_or(0.0);
                if !(0.0..=1.0).contains(&write_fraction) {
                    return Err(self.err(
                        format!("{field}.write_fraction"),
                        format!("{write_fraction}: must be in [0, 1]"),
                    ));
                }
                let write_fraction = self.ranged(
                    "random.write_fraction",
                    &format!("{field}.write_fraction"),
                    write_fraction,
                )?;
                let mlp = ph.mlp.unwrap_or(1.0);
                if !(mlp.is_finite() && mlp >= 1.0) {
                    return Err(self.err(format!("{field}.mlp"), format!("{mlp}: must be >= 1")));
                }
                let mlp = self.ranged("random.mlp", &format!("{field}.mlp"), mlp)?;
                PhaseSpec::Random {
                    region,
                    accesses,
                    distribution,
                    write_fraction,
                    mlp,
                    range: self.range(&mut ph, field)?,
                }
            }
            "compute" | "sleep" => {
                let t = ph.compute.take().or(ph.sleep.take()).unwrap_or(Num::Int(0));
                self.num(&t, &vf)?;
                if verb == "compute" {
                    PhaseSpec::Compute(t)
                } else {
                    PhaseSpec::Sleep(t)
                }
            }
            "barrier" => {
                let name = ph.barrier.take().unwrap_or_default();
                if !expr::is_identifier(&name) {
                    return Err(self.err(
                        &vf,
                        format!("'{name}' is not a barrier name (letters, digits and _, not starting with a digit)"),
                    ));
                }
                PhaseSpec::Barrier(name)
            }
            "set_mempolicy" => {
                let p = ph.set_mempolicy.take().map(|p| self.policy(p, &vf));
                PhaseSpec::SetMempolicy(p.unwrap_or(Ok(PolicyValue::Default))?)
            }
            "set_affinity" => {
                let s = ph.set_affinity.take().unwrap_or_default();
                self.cpuset(&s, &vf)?;
                PhaseSpec::SetAffinity(s)
            }
            "set_numa_balancing" => {
                let w = ph.set_numa_balancing.take().unwrap_or_default();
                PhaseSpec::SetNumaBalancing(self.numa_ctl(&w, &vf)?)
            }
            "cgroup_write" => {
                let w = ph.cgroup_write.take().unwrap_or_default();
                self.cgroup_write(&w, &vf)?
            }
            "repeat" => {
                let times = ph.repeat.take().unwrap_or(Num::Int(1));
                self.num(&times, &vf)?;
                let body = ph.body.take().ok_or_else(|| {
                    self.err(format!("{field}.body"), "a repeat phase needs `body`")
                })?;
                PhaseSpec::Repeat {
                    times,
                    request: ph.request.unwrap_or(false),
                    body: self.phases(body, &format!("{field}.body"), regions, loops)?,
                }
            }
            _ => {
                let var = ph.for_.take().unwrap_or_default();
                if !expr::is_identifier(&var) {
                    return Err(self.err(&vf, format!("'{var}' is not a variable name")));
                }
                if BUILTIN_VARS.contains(&var.as_str()) || loops.contains(&var) {
                    return Err(self.err(
                        &vf,
                        format!("loop variable '{var}' would shadow a variable already defined"),
                    ));
                }
                if expr::is_unit(&var) {
                    return Err(self.err(&vf, format!("'{var}' is a unit name")));
                }
                let range = ph.range.take().ok_or_else(|| {
                    self.err(
                        format!("{field}.range"),
                        "a for phase needs `range = [START, END]`",
                    )
                })?;
                let [start, end]: [Num; 2] = range.try_into().map_err(|v: Vec<Num>| {
                    self.err(
                        format!("{field}.range"),
                        format!("expected [START, END], got {} items", v.len()),
                    )
                })?;
                self.num(&start, &format!("{field}.range[0]"))?;
                self.num(&end, &format!("{field}.range[1]"))?;
                let body = ph
                    .body
                    .take()
                    .ok_or_else(|| self.err(format!("{field}.body"), "a for phase needs `body`"))?;
                loops.push(var.clone());
                let body = self.phases(body, &format!("{field}.body"), regions, loops);
                loops.pop();
                PhaseSpec::For {
                    var,
                    start,
                    end,
                    body: body?,
                }
            }
        })
    }

    /// A `numa_balancing` word (numalab's per-task control).
    pub(super) fn numa_ctl(&self, w: &str, field: &str) -> Result<NumaBalancingCtl> {
        NumaBalancingCtl::from_word(w).ok_or_else(|| {
            self.err(
                field,
                format!("'{w}' is not one of default, enabled, disabled"),
            )
        })
    }
}
