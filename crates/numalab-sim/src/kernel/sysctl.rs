//! Knobs by their real names: sysctls, debugfs `numa_balancing/*`, kernel
//! config values, and numalab's own lab switches (`numalab.*`).
//!
//! `--set KEY=VALUE` goes through [`Knobs::set`], which knows every name,
//! its range and its default, and refuses anything else with a message
//! naming the knob. Cgroup files (`CGROUP:FILE=VALUE`) are parsed here and
//! applied by the engine once the cgroup exists. Every knob in force,
//! defaults included, is listed in the Run record's `settings`.
//!
//! Left out: every sysctl numalab does not model (they are refused, not
//! ignored).

use std::collections::BTreeMap;

/// A knob's kind and range.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Unsigned integer in `[min, max]`.
    Uint { min: u64, max: u64 },
    /// One of a fixed list of words.
    Choice { values: &'static [&'static str] },
}

struct Def {
    name: &'static str,
    aliases: &'static [&'static str],
    default: &'static str,
    kind: Kind,
    help: &'static str,
}

const DEFS: &[Def] = &[
    Def {
        name: "kernel.numa_balancing",
        aliases: &[],
        default: "1",
        kind: Kind::Uint { min: 0, max: 3 },
        help: "0 off, 1 NUMA_BALANCING_NORMAL (default with >1 node); 2/3 (memory tiering) are refused: not modeled",
    },
    Def {
        name: "numa_balancing.scan_delay_ms",
        aliases: &["numa_balancing/scan_delay_ms", "kernel.numa_balancing_scan_delay_ms"],
        default: "1000",
        kind: Kind::Uint { min: 0, max: 3_600_000 },
        help: "debugfs sched/numa_balancing/scan_delay_ms: delay before a new mm is first scanned",
    },
    Def {
        name: "numa_balancing.scan_period_min_ms",
        aliases: &["numa_balancing/scan_period_min_ms", "kernel.numa_balancing_scan_period_min_ms"],
        default: "1000",
        kind: Kind::Uint { min: 1, max: 3_600_000 },
        help: "debugfs sched/numa_balancing/scan_period_min_ms",
    },
    Def {
        name: "numa_balancing.scan_period_max_ms",
        aliases: &["numa_balancing/scan_period_max_ms", "kernel.numa_balancing_scan_period_max_ms"],
        default: "60000",
        kind: Kind::Uint { min: 1, max: 3_600_000 },
        help: "debugfs sched/numa_balancing/scan_period_max_ms",
    },
    Def {
        name: "numa_balancing.scan_size_mb",
        aliases: &["numa_balancing/scan_size_mb", "kernel.numa_balancing_scan_size_mb"],
        default: "256",
        kind: Kind::Uint { min: 1, max: 1 << 20 },
        help: "debugfs sched/numa_balancing/scan_size_mb: MB marked per scan",
    },
    Def {
        name: "CONFIG_HZ",
        aliases: &["config.hz"],
        default: "250",
        kind: Kind::Uint { min: 100, max: 1000 },
        help: "scheduler tick rate (jiffies per second)",
    },
    Def {
        name: "numalab.sched_balance_serialize",
        aliases: &[],
        default: "fixed+newidle",
        kind: Kind::Choice {
            values: &["legacy", "v3", "v4", "fixed", "fixed+newidle"],
        },
        help: "lab: SD_SERIALIZE / sched_balance_running ordering: legacy (flag before the due and designated checks, before 6.19), v3 (checks first, redo keeps the held marker: the bug review found), v4 (as posted: redo releases and clears the marker, newidle serialized), fixed (tip 2265c5d4: redo keeps the flag, newidle not serialized), fixed+newidle (mainline 6.19, also 22c929d2)",
    },
    Def {
        name: "numalab.sample_interval_ms",
        aliases: &[],
        default: "1000",
        kind: Kind::Uint { min: 0, max: 3_600_000 },
        help: "lab: time-series sampling interval of the Run record (0 = none)",
    },
];

/// A `CGROUP:FILE=VALUE` setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupFileSetting {
    /// Cgroup path.
    pub cgroup: String,
    /// File name, e.g. `cpu.numa_load_balance`.
    pub file: String,
    /// Value written.
    pub value: String,
}

/// Cgroup files the model understands.
const CGROUP_FILES: &[&str] = &["cpuset.cpus", "cpuset.mems"];

/// All knobs in force.
#[derive(Clone, Debug)]
pub struct Knobs {
    values: BTreeMap<&'static str, String>,
    /// Cgroup file settings, in the order given.
    pub cgroup_files: Vec<CgroupFileSetting>,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            values: DEFS
                .iter()
                .map(|d| (d.name, d.default.to_string()))
                .collect(),
            cgroup_files: Vec::new(),
        }
    }
}

impl Knobs {
    /// Applies one `KEY=VALUE`, refusing unknown keys and bad values.
    pub fn set(&mut self, kv: &str) -> Result<(), String> {
        let (key, value) = kv
            .split_once('=')
            .ok_or_else(|| format!("--set '{kv}': expected KEY=VALUE"))?;
        let (key, value) = (key.trim(), value.trim());
        if let Some((cg, file)) = key.split_once(':') {
            if !CGROUP_FILES.contains(&file) {
                return Err(format!(
                    "--set {key}: unknown cgroup file '{file}' (known: {})",
                    CGROUP_FILES.join(", ")
                ));
            }
            self.cgroup_files.push(CgroupFileSetting {
                cgroup: cg.to_string(),
                file: file.to_string(),
                value: value.to_string(),
            });
            return Ok(());
        }
        let def = DEFS
            .iter()
            .find(|d| d.name == key || d.aliases.contains(&key))
            .ok_or_else(|| format!("--set {key}: unknown knob (see `numalab list knobs`)"))?;
        match def.kind {
            Kind::Uint { min, max } => {
                let v: u64 = value
                    .parse()
                    .map_err(|_| format!("--set {key}: '{value}' is not a non-negative integer"))?;
                if v < min || v > max {
                    return Err(format!("--set {key}: {v} is out of range [{min}, {max}]"));
                }
            }
            Kind::Choice { values } => {
                if !values.contains(&value) {
                    return Err(format!(
                        "--set {key}: '{value}' is not one of {}",
                        values.join(", ")
                    ));
                }
            }
        }
        if def.name == "kernel.numa_balancing" && matches!(value, "2" | "3") {
            return Err(format!(
                "--set kernel.numa_balancing={value}: memory tiering (NUMA_BALANCING_MEMORY_TIERING) is not modeled"
            ));
        }
        self.values.insert(def.name, value.to_string());
        Ok(())
    }

    /// Integer value of a knob (its canonical name).
    pub fn uint(&self, name: &str) -> u64 {
        self.values
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// String value of a knob.
    pub fn str(&self, name: &str) -> &str {
        self.values.get(name).map_or("", |s| s.as_str())
    }

    /// Every knob in force, for the Run record.
    pub fn settings(&self) -> BTreeMap<String, String> {
        let mut m: BTreeMap<String, String> = self
            .values
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        for c in &self.cgroup_files {
            m.insert(format!("{}:{}", c.cgroup, c.file), c.value.clone());
        }
        m
    }

    /// `(name, default, help)` of every knob, for `numalab list knobs`.
    pub fn describe() -> Vec<(&'static str, &'static str, &'static str)> {
        DEFS.iter().map(|d| (d.name, d.default, d.help)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_kernels() {
        let k = Knobs::default();
        assert_eq!(k.uint("kernel.numa_balancing"), 1);
        assert_eq!(k.uint("numa_balancing.scan_delay_ms"), 1000);
        assert_eq!(k.uint("numa_balancing.scan_period_min_ms"), 1000);
        assert_eq!(k.uint("numa_balancing.scan_period_max_ms"), 60000);
        assert_eq!(k.uint("numa_balancing.scan_size_mb"), 256);
        assert_eq!(k.str("numalab.sched_balance_serialize"), "fixed+newidle");
    }

    #[test]
    fn choice_knobs_take_only_their_words() {
        let mut k = Knobs::default();
        k.set("numalab.sched_balance_serialize=legacy").unwrap();
        assert_eq!(k.str("numalab.sched_balance_serialize"), "legacy");
        let e = k.set("numalab.sched_balance_serialize=v5").unwrap_err();
        assert!(
            e.contains("not one of legacy, v3, v4, fixed, fixed+newidle"),
            "{e}"
        );
    }

    #[test]
    fn aliases_and_errors() {
        let mut k = Knobs::default();
        k.set("numa_balancing/scan_size_mb=512").unwrap();
        assert_eq!(k.uint("numa_balancing.scan_size_mb"), 512);
        assert!(k.set("kernel.nope=1").unwrap_err().contains("unknown knob"));
        assert!(k
            .set("kernel.numa_balancing=7")
            .unwrap_err()
            .contains("out of range"));
        assert!(k
            .set("kernel.numa_balancing=2")
            .unwrap_err()
            .contains("not modeled"));
        assert!(k.set("kernel.numa_balancing").is_err());
        assert!(k
            .set("/a:memory.max=1")
            .unwrap_err()
            .contains("unknown cgroup file"));
    }
}
