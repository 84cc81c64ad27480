//! [`Knobs`]: the value of every declared knob for one model run, plus the
//! cgroup file settings, built from `--set KEY=VALUE` arguments.
//!
//! Values are parsed once, by [`Knobs::set`], and stored typed (see
//! [`crate::def`]); reads take a declared handle and never fail.
//! Left out: sysctls and files the model does not have: they are refused,
//! not ignored (a real run passes them through; see numalab-real).

use crate::cgroup::{cgroup_file, CGROUP_FILES};
use crate::def::{Def, Knob, NameKnob, Type, Value};
use crate::knob::{resolve, ALL};
use crate::rules;
use crate::spelling::nearest_of;
use std::collections::BTreeMap;

/// A `CGROUP:FILE=VALUE` setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupFileSetting {
    /// Cgroup path.
    pub cgroup: String,
    /// File name, one of [`CGROUP_FILES`].
    pub file: String,
    /// Value written (checked by the model against the machine).
    pub value: String,
}

/// All knobs in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knobs {
    /// Raw value of every declared knob, indexed like [`ALL`].
    values: [u64; ALL.len()],
    /// The names given to name knobs ([`Type::Name`]), by knob index;
    /// a knob not here has its default.
    names: BTreeMap<usize, String>,
    /// Cgroup file settings, in the order given.
    pub cgroup_files: Vec<CgroupFileSetting>,
}

impl Default for Knobs {
    fn default() -> Self {
        let mut values = [0; ALL.len()];
        for d in ALL {
            values[d.idx] = d.default_raw;
        }
        Knobs {
            values,
            names: BTreeMap::new(),
            cgroup_files: Vec::new(),
        }
    }
}

impl Knobs {
    /// The knobs `sets` (each `KEY=VALUE`) give, applied in order over the
    /// defaults, then checked against the rules over more than one knob.
    pub fn from_sets<S: AsRef<str>>(sets: &[S]) -> Result<Knobs, String> {
        let mut k = Knobs::default();
        for s in sets {
            k.set(s.as_ref())?;
        }
        k.validate()?;
        Ok(k)
    }

    /// Applies one `KEY=VALUE`, refusing unknown keys (with the nearest
    /// name when one is near), bad values and values the model does not
    /// model. KEY is any spelling [`crate::knob::resolve`] accepts. Rules over more than one knob are
    /// checked by [`Knobs::validate`], once all are set.
    pub fn set(&mut self, kv: &str) -> Result<(), String> {
        let (key, value) = kv
            .split_once('=')
            .ok_or_else(|| format!("--set '{kv}': expected KEY=VALUE"))?;
        let (key, value) = (key.trim(), value.trim());
        if let Some((cg, file)) = crate::cgroup::split_cgroup_key(key)? {
            if cgroup_file(file).is_none() {
                let names = CGROUP_FILES.iter().map(|f| f.name);
                let hint = nearest_of(file, names.clone())
                    .map_or(String::new(), |n| format!("; did you mean {n}?"));
                return Err(format!(
                    "--set {key}: unknown cgroup file '{file}' (known: {}){hint}",
                    names.collect::<Vec<_>>().join(", ")
                ));
            }
            self.cgroup_files.push(CgroupFileSetting {
                cgroup: cg.to_string(),
                file: file.to_string(),
                value: value.to_string(),
            });
            return Ok(());
        }
        let def = resolve(key).map_err(|e| {
            format!(
                "--set {key}: unknown knob (see `numalab list knobs`){}",
                e.hint()
            )
        })?;
        if let Some(e) = rules::exclusive_bits(def, value) {
            return Err(e);
        }
        let raw = def.parse(value).map_err(|e| format!("--set {key}: {e}"))?;
        if let Some(e) = rules::not_modeled(def, raw) {
            return Err(e);
        }
        self.values[def.idx] = raw;
        if let Type::Name { .. } = def.ty {
            self.names.insert(def.idx, value.to_string());
        }
        Ok(())
    }

    /// Checks the rules over more than one knob ([`rules::ORDERED`]).
    pub fn validate(&self) -> Result<(), String> {
        rules::check_ordered(|d| Some(self.values[d.idx]))
    }

    /// The value of declared knob `k`.
    #[inline]
    pub fn get<T: Value>(&self, k: Knob<T>) -> T {
        T::from_raw(self.values[k.def().idx])
    }

    /// The name in force of name knob `k` (checked by the layer that
    /// knows the names, e.g. the model's policy registry).
    pub fn name(&self, k: NameKnob) -> &str {
        let d = k.def();
        match (self.names.get(&d.idx), d.ty) {
            (Some(n), _) => n,
            (None, Type::Name { default }) => default,
            (None, _) => "",
        }
    }

    /// The text of declared knob `d`'s value in force.
    pub fn show(&self, d: &Def) -> String {
        match self.names.get(&d.idx) {
            Some(n) => n.clone(),
            None => d.show(self.values[d.idx]),
        }
    }

    /// Every knob in force, by canonical name, and every cgroup file
    /// setting as `CGROUP:FILE`, for the Run record.
    pub fn settings(&self) -> BTreeMap<String, String> {
        let mut m: BTreeMap<String, String> = ALL
            .iter()
            .map(|d| (d.name.to_string(), self.show(d)))
            .collect();
        for c in &self.cgroup_files {
            m.insert(format!("{}:{}", c.cgroup, c.file), c.value.clone());
        }
        m
    }
}
