//! Check, cgroups: `[[cgroup]]` paths and files, and `cgroup_write` phases.
//! Files are checked against the knob registry's declared cgroup files
//! (`numalab_knobs::cgroup::CGROUP_FILES`): an unknown file, a value of the
//! wrong kind, a file set twice, or a phase writing a file that is set up
//! front is an error. Left out: whether CPU and node lists fit the machine
//! (resolve and the kernel model check that).

use super::Checker;
use crate::model::CgroupFileWrite;
use crate::spec::checked::PhaseSpec;
use crate::spec::error::Result;
use crate::spec::parse::{RawCgroup, Text};
use numalab_knobs::cgroup::CgroupValue;
use numalab_topology::{CpuSet, NodeMask};
use std::collections::{BTreeMap, BTreeSet};

/// A cgroup's `cpuset_cpus`, `cpuset_mems` and flag files, as
/// [`Checker::cgroup_files`] folds them.
type CgroupFiles = (Option<String>, Option<String>, BTreeMap<String, String>);

impl Checker<'_> {
    /// A `cgroup_write = "CGROUP:FILE=VALUE"` phase: the file must be one
    /// the registry lets a phase write during a run, the value of its kind.
    /// Whether the cgroup exists is checked once all cgroups are known
    /// ([`Checker::spec`]).
    pub(super) fn cgroup_write(&self, w: &str, field: &str) -> Result<PhaseSpec> {
        let bad = || self.err(field, format!("'{w}': expected \"CGROUP:FILE=VALUE\""));
        let (key, value) = w.split_once('=').ok_or_else(bad)?;
        let (cgroup, file) = key.trim().split_once(':').ok_or_else(bad)?;
        if cgroup != "/" {
            self.cgroup_path(cgroup, field)?;
        }
        let decl = numalab_knobs::cgroup::cgroup_file(file)
            .ok_or_else(|| self.err(field, format!("unknown cgroup file '{file}'")))?;
        if !decl.during_run {
            let ok: Vec<&str> = numalab_knobs::cgroup::CGROUP_FILES
                .iter()
                .filter(|f| f.during_run)
                .map(|f| f.name)
                .collect();
            return Err(self.err(
                field,
                format!(
                    "{file} is set before the run starts (as a `[[cgroup]]` key or --set), not by a phase; a phase may write {}",
                    ok.join(", ")
                ),
            ));
        }
        // Typed here, once: the engine applies the value without parsing it.
        let write = CgroupFileWrite::parse(file, value)
            .ok_or_else(|| self.err(field, format!("the model cannot write {file} during a run")))?
            .map_err(|e| self.err(field, e))?;
        Ok(PhaseSpec::CgroupWrite {
            cgroup: cgroup.to_string(),
            write,
        })
    }

    /// A cgroup path below the root: `/`-separated names, no `.` or `..`.
    pub(super) fn cgroup_path(&self, path: &str, field: &str) -> Result<()> {
        let Some(rest) = path.strip_prefix('/') else {
            return Err(self.err(field, format!("'{path}' must start with '/'")));
        };
        if rest.is_empty() {
            return Err(self.err(
                field,
                "the root cgroup '/' always exists; declare only cgroups below it",
            ));
        }
        for comp in rest.split('/') {
            if comp.is_empty()
                || comp == "."
                || comp == ".."
                || !comp
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            {
                return Err(self.err(field, format!("'{path}': '{comp}' is not a cgroup name")));
            }
        }
        Ok(())
    }

    /// Checks a cgroup's `files` against the knob registry's declared
    /// cgroup files (`numalab_knobs::cgroup::CGROUP_FILES`): an unknown file,
    /// a value of the wrong kind, or a file also set by its own key is an
    /// error. The cpuset files have their own keys, so their values are
    /// folded into `cpuset_cpus` / `cpuset_mems`; flag files
    /// (`cpu.numa_load_balance`) stay in `files`, normalised to `0`/`1`.
    /// The model and the real runner both apply all three. Returns the two
    /// keys and the flag files.
    pub(super) fn cgroup_files(&self, c: &RawCgroup, f: &str) -> Result<CgroupFiles> {
        let mut cpus = c.cpuset_cpus.clone();
        let mut mems = c.cpuset_mems.clone();
        let mut flags = BTreeMap::new();
        for (name, Text(value)) in &c.files {
            let ff = format!("{f}.files.\"{name}\"");
            let Some(decl) = numalab_knobs::cgroup::cgroup_file(name) else {
                let known: Vec<String> = numalab_knobs::cgroup::CGROUP_FILES
                    .iter()
                    .map(|d| format!("{} ({})", d.name, d.value.as_str()))
                    .collect();
                return Err(self.err(
                    ff,
                    format!(
                        "unknown cgroup file '{name}': the model knows {}",
                        known.join(", ")
                    ),
                ));
            };
            let (slot, key) = match decl.value {
                CgroupValue::CpuList => {
                    CpuSet::parse_list(value)
                        .map_err(|e| self.err(&ff, format!("'{value}' is not a cpu list: {e}")))?;
                    (&mut cpus, "cpuset_cpus")
                }
                CgroupValue::NodeList => {
                    NodeMask::parse_list(value)
                        .map_err(|e| self.err(&ff, format!("'{value}' is not a node list: {e}")))?;
                    (&mut mems, "cpuset_mems")
                }
                CgroupValue::Flag => {
                    let on = CgroupValue::check_flag(value).map_err(|e| self.err(&ff, e))?;
                    flags.insert(name.clone(), if on { "1" } else { "0" }.to_string());
                    continue;
                }
            };
            if slot.is_some() {
                return Err(self.err(ff, format!("{name} is also given as `{key}`: give it once")));
            }
            *slot = Some(value.clone());
        }
        Ok((cpus, mems, flags))
    }

    /// Checks that every `cgroup_write` in `ph` names `/` or a declared
    /// cgroup.
    pub(super) fn cgroup_writes_exist(
        &self,
        ph: &PhaseSpec,
        paths: &BTreeSet<String>,
        field: &str,
    ) -> Result<()> {
        match ph {
            PhaseSpec::CgroupWrite { cgroup, .. } => {
                let known = cgroup == "/"
                    || paths
                        .iter()
                        .any(|c| c == cgroup || c.starts_with(&format!("{cgroup}/")));
                if !known {
                    return Err(self.err(
                        format!("{field}.cgroup_write"),
                        format!("cgroup '{cgroup}' is not declared in [[cgroup]]"),
                    ));
                }
                Ok(())
            }
            PhaseSpec::Repeat { body, .. } | PhaseSpec::For { body, .. } => {
                for (k, b) in body.iter().enumerate() {
                    self.cgroup_writes_exist(b, paths, &format!("{field}.body[{k}]"))?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
