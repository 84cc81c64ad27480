//! Parse: workload TOML into syntax types, as written.
//!
//! Every table is read with unknown keys refused, and a TOML error names
//! its line and column ([`WorkloadError::Toml`]). Numbers stay as written
//! ([`Num`]: an integer or an expression string), sets stay strings, and a
//! phase keeps every verb and modifier key it was given. Left out: every
//! meaning: which verb a phase has, whether a name, an expression or a
//! value is valid, whether a region exists. That is [`super::check`]'s job.

use super::error::{Result, WorkloadError};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// Reads `text` (workload TOML) into its syntax tree. `origin` (a preset
/// name or file path) is named in the error.
pub(crate) fn parse_toml(text: &str, origin: &str) -> Result<RawSpec> {
    toml::from_str(text).map_err(|e| WorkloadError::Toml {
        origin: origin.to_string(),
        message: numalab_topology::spec::one_line_toml_error(text, &e),
    })
}

/// A number field: a TOML integer, or a string holding an integer expression
/// (see `docs/workloads.md`, "Expressions").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Num {
    /// A plain integer (bytes, ns or a count, by field).
    Int(i64),
    /// An expression such as `"ncpus / 2"` or `"3GiB"`.
    Expr(String),
}

impl From<i64> for Num {
    fn from(v: i64) -> Self {
        Num::Int(v)
    }
}

impl From<&str> for Num {
    fn from(s: &str) -> Self {
        Num::Expr(s.to_string())
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Int(v) => write!(f, "{v}"),
            Num::Expr(s) => write!(f, "\"{s}\""),
        }
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or a string expression")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Num, E> {
                Ok(Num::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Num, E> {
                i64::try_from(v)
                    .map(Num::Int)
                    .map_err(|_| E::custom("integer does not fit in 64 bits"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Num, E> {
                Ok(Num::Expr(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A string, or an integer or boolean taken as its text.
pub(crate) struct Text(pub(crate) String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Text, E> {
                Ok(Text(if v { "1" } else { "0" }.to_string()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Text, E> {
                Ok(Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

fn opt_text<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<String>, D::Error> {
    Ok(Some(Text::deserialize(d)?.0))
}

/// A policy table `{ mode, nodes, numa_balancing }` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPolicyTable {
    pub(crate) mode: String,
    #[serde(default, deserialize_with = "opt_text")]
    pub(crate) nodes: Option<String>,
    #[serde(default)]
    pub(crate) numa_balancing: bool,
}

/// A field written either as a word or as a table, e.g. `policy = "local"`
/// or `policy = { mode = "bind", nodes = "0" }`.
pub(crate) enum NameOr<T> {
    /// The word form.
    Name(String),
    /// The table form.
    Table(T),
}

/// What a [`NameOr`] field accepts, for serde's "invalid type" message.
pub(crate) trait Expecting {
    /// The accepted forms, for the message.
    const EXPECTING: &'static str;
}

impl<'de, T: Deserialize<'de> + Expecting> Deserialize<'de> for NameOr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Expecting> Visitor<'de> for V<T> {
            type Value = NameOr<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(T::EXPECTING)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<NameOr<T>, E> {
                Ok(NameOr::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                m: A,
            ) -> std::result::Result<NameOr<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(m)).map(NameOr::Table)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl Expecting for RawPolicyTable {
    const EXPECTING: &'static str =
        "\"default\", \"local\" or a table { mode, nodes, numa_balancing }";
}

/// A policy: a word (`"local"`) or a table.
pub(crate) type RawPolicy = NameOr<RawPolicyTable>;

/// A distribution table `{ zipf }` or `{ hot, probability }` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDistTable {
    pub(crate) zipf: Option<f64>,
    pub(crate) hot: Option<f64>,
    pub(crate) probability: Option<f64>,
}

impl Expecting for RawDistTable {
    const EXPECTING: &'static str = "\"uniform\", { zipf = S } or { hot = F, probability = P }";
}

/// A distribution: a word (`"uniform"`) or a table.
pub(crate) type RawDist = NameOr<RawDistTable>;

/// A whole workload file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSpec {
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) test: Option<String>,
    pub(crate) score: Option<String>,
    pub(crate) duration: Option<Num>,
    #[serde(default)]
    pub(crate) cgroup: Vec<RawCgroup>,
    #[serde(default)]
    pub(crate) process: Vec<RawProcess>,
    /// `[[shared]]`: regions several processes map (MAP_SHARED).
    #[serde(default)]
    pub(crate) shared: Vec<RawRegion>,
    #[serde(default)]
    pub(crate) params: BTreeMap<String, Num>,
}

/// A `[[cgroup]]` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCgroup {
    pub(crate) path: String,
    #[serde(default, deserialize_with = "opt_text")]
    pub(crate) cpuset_cpus: Option<String>,
    #[serde(default, deserialize_with = "opt_text")]
    pub(crate) cpuset_mems: Option<String>,
    #[serde(default)]
    pub(crate) files: BTreeMap<String, Text>,
}

/// A `[[process]]` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProcess {
    pub(crate) name: String,
    pub(crate) count: Option<Num>,
    pub(crate) cgroup: Option<String>,
    #[serde(default)]
    pub(crate) region: Vec<RawRegion>,
    /// Names of the `[[shared]]` regions the process maps.
    #[serde(default)]
    pub(crate) shared: Vec<String>,
    #[serde(default)]
    pub(crate) thread: Vec<RawThread>,
}

/// A `[[process.region]]` or `[[shared]]` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRegion {
    pub(crate) name: String,
    pub(crate) size: Num,
    #[serde(default)]
    pub(crate) thp: bool,
    pub(crate) policy: Option<RawPolicy>,
    /// Size of each of the separate VMAs the region stands for.
    pub(crate) vma_size: Option<Num>,
}

/// A `[[process.thread]]` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawThread {
    pub(crate) name: String,
    pub(crate) count: Option<Num>,
    #[serde(default, deserialize_with = "opt_text")]
    pub(crate) affinity: Option<String>,
    pub(crate) policy: Option<RawPolicy>,
    pub(crate) start_after: Option<String>,
    pub(crate) numa_balancing: Option<String>,
    #[serde(default)]
    pub(crate) phases: Vec<RawPhase>,
}

/// One phase table as written: any verbs and modifiers, checked by [`super::check`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPhase {
    // verbs
    pub(crate) stream: Option<String>,
    pub(crate) random: Option<String>,
    pub(crate) compute: Option<Num>,
    pub(crate) sleep: Option<Num>,
    pub(crate) barrier: Option<String>,
    pub(crate) set_mempolicy: Option<RawPolicy>,
    #[serde(default, deserialize_with = "opt_text")]
    pub(crate) set_affinity: Option<String>,
    pub(crate) set_numa_balancing: Option<String>,
    pub(crate) cgroup_write: Option<String>,
    pub(crate) repeat: Option<Num>,
    #[serde(rename = "for")]
    pub(crate) for_: Option<String>,
    // modifiers
    pub(crate) passes: Option<Num>,
    pub(crate) write: Option<bool>,
    pub(crate) slice: Option<Vec<Num>>,
    pub(crate) offset: Option<Num>,
    pub(crate) len: Option<Num>,
    pub(crate) accesses: Option<Num>,
    pub(crate) distribution: Option<RawDist>,
    pub(crate) write_fraction: Option<f64>,
    pub(crate) mlp: Option<f64>,
    pub(crate) request: Option<bool>,
    pub(crate) range: Option<Vec<Num>>,
    pub(crate) body: Option<Vec<RawPhase>>,
}

/// The keys that name what a phase does; a phase has exactly one.
pub(crate) const VERBS: &[&str] = &[
    "stream",
    "random",
    "compute",
    "sleep",
    "barrier",
    "set_mempolicy",
    "set_affinity",
    "set_numa_balancing",
    "cgroup_write",
    "repeat",
    "for",
];

impl RawPhase {
    /// The verbs present, in [`VERBS`] order.
    pub(crate) fn verbs(&self) -> Vec<&'static str> {
        let present = [
            self.stream.is_some(),
            self.random.is_some(),
            self.compute.is_some(),
            self.sleep.is_some(),
            self.barrier.is_some(),
            self.set_mempolicy.is_some(),
            self.set_affinity.is_some(),
            self.set_numa_balancing.is_some(),
            self.cgroup_write.is_some(),
            self.repeat.is_some(),
            self.for_.is_some(),
        ];
        VERBS
            .iter()
            .zip(present)
            .filter_map(|(v, p)| p.then_some(*v))
            .collect()
    }

    /// The modifier keys present.
    pub(crate) fn modifiers(&self) -> Vec<&'static str> {
        let present = [
            ("passes", self.passes.is_some()),
            ("write", self.write.is_some()),
            ("slice", self.slice.is_some()),
            ("offset", self.offset.is_some()),
            ("len", self.len.is_some()),
            ("accesses", self.accesses.is_some()),
            ("distribution", self.distribution.is_some()),
            ("write_fraction", self.write_fraction.is_some()),
            ("mlp", self.mlp.is_some()),
            ("request", self.request.is_some()),
            ("range", self.range.is_some()),
            ("body", self.body.is_some()),
        ];
        present
            .iter()
            .filter_map(|(m, p)| p.then_some(*m))
            .collect()
    }
}
