//! How a knob may be named: by its name or an alias, by where it lives in a
//! real kernel (`/proc/sys/kernel/numa_balancing`, `kernel/numa_balancing`,
//! `/sys/kernel/debug/sched/numa_balancing/scan_delay_ms`, the pre-5.13
//! sysctl `/proc/sys/kernel/numa_balancing_scan_delay_ms`), or by a bare
//! name (`numa_balancing`, `scan_delay_ms`) when only one knob answers to
//! it. A name no knob answers to gets the nearest spelling as a "did you
//! mean" (edit distance, [`strsim::osa_distance`]), when one is near.
//!
//! Left out: case-insensitive matching (sysctl and debugfs names are case
//! sensitive), and paths with `//`, `./` or a trailing `/` (a path is
//! matched as written).

use crate::def::{Def, Location};

/// Where debugfs is mounted (`Location::Debugfs` paths are below it).
const DEBUGFS: &str = "/sys/kernel/debug/";
/// Where sysctls live (`Location::Sysctl` paths are below it).
const PROC_SYS: &str = "/proc/sys/";

/// Why a name is not a knob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unknown {
    /// No knob answers to it; the nearest spelling, when one is near, and
    /// the canonical name of its knob.
    NoSuch(Option<(String, &'static str)>),
    /// A bare name several knobs answer to (their canonical names).
    Ambiguous(Vec<&'static str>),
}

impl Unknown {
    /// The tail of an error message after `unknown knob`: the suggestion
    /// or the candidates, empty when there is nothing to add.
    pub fn hint(&self) -> String {
        match self {
            Unknown::NoSuch(None) => String::new(),
            Unknown::NoSuch(Some((s, name))) if s == name => format!("; did you mean {s}?"),
            Unknown::NoSuch(Some((s, name))) => format!("; did you mean {s} ({name})?"),
            Unknown::Ambiguous(names) => {
                format!("; the bare name could be {}", names.join(" or "))
            }
        }
    }
}

/// Every full spelling of knob `d`: its name, its aliases, and its
/// locations in a real kernel (absolute, relative to /proc/sys or debugfs,
/// and a sysctl path in sysctl(8)'s dotted form).
pub fn spellings(d: &'static Def) -> Vec<String> {
    let mut out: Vec<String> = std::iter::once(d.name)
        .chain(d.aliases.iter().copied())
        .map(str::to_string)
        .collect();
    let sysctl = |p: &str, out: &mut Vec<String>| {
        out.push(format!("{PROC_SYS}{p}"));
        out.push(p.to_string());
        out.push(p.replace('/', "."));
    };
    match d.location {
        Location::Sysctl(p) => sysctl(p, &mut out),
        Location::Debugfs {
            path,
            legacy_sysctl,
        } => {
            out.push(format!("{DEBUGFS}{path}"));
            out.push(path.to_string());
            if let Some(l) = legacy_sysctl {
                sysctl(l, &mut out);
            }
        }
        Location::Config(s) => out.push(s.to_string()),
        Location::Lab => {}
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|s| seen.insert(s.clone()));
    out
}

/// The bare names of knob `d`: the last component (after the last `/` or
/// `.`) of each of its spellings.
fn bare_names(d: &'static Def) -> Vec<String> {
    let mut out: Vec<String> = spellings(d)
        .iter()
        .map(|s| s.rsplit(['/', '.']).next().unwrap_or(s).to_string())
        .filter(|b| !b.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The knob of `defs` (the registry, [`crate::knob::resolve`], or a
/// test's own declarations) that `key` names, in any spelling
/// [`spellings`] gives, or by a bare name (no `.` or `/`) that only one
/// knob answers to.
pub fn resolve_in(defs: &'static [Def], key: &str) -> Result<&'static Def, Unknown> {
    if let Some(d) = defs.iter().find(|d| d.answers_to(key)) {
        return Ok(d);
    }
    if let Some(d) = defs.iter().find(|d| spellings(d).iter().any(|s| s == key)) {
        return Ok(d);
    }
    if !key.is_empty() && !key.contains(['.', '/']) {
        let hits: Vec<&'static Def> = defs
            .iter()
            .filter(|d| bare_names(d).iter().any(|b| b == key))
            .collect();
        match hits.as_slice() {
            [d] => return Ok(d),
            [] => {}
            many => return Err(Unknown::Ambiguous(many.iter().map(|d| d.name).collect())),
        }
    }
    Err(Unknown::NoSuch(nearest(defs, key)))
}

/// The spelling nearest to `key` and its knob's canonical name, if it is
/// within a typo or two: at most 3 edits, and at most a third of `key`'s
/// length (so that a short name is not "near" every other short name).
fn nearest(defs: &'static [Def], key: &str) -> Option<(String, &'static str)> {
    let most = 3.min(key.chars().count() / 3);
    defs.iter()
        .flat_map(|d| {
            spellings(d)
                .into_iter()
                .chain(bare_names(d))
                .map(move |s| (strsim::osa_distance(key, &s), s, d.name))
        })
        .filter(|(dist, _, _)| *dist > 0 && *dist <= most)
        // The nearest; among equals, the first declared.
        .min_by_key(|(dist, _, _)| *dist)
        .map(|(_, s, name)| (s, name))
}

/// The nearest of `names` to `key` (at most 3 edits and a third of its
/// length), for names outside the knob registry (cgroup files).
pub fn nearest_of<'a>(key: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let most = 3.min(key.chars().count() / 3);
    names
        .into_iter()
        .map(|n| (strsim::osa_distance(key, n), n))
        .filter(|(dist, _)| *dist > 0 && *dist <= most)
        .min_by_key(|(dist, _)| *dist)
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::def::{Type, Unit};
    use crate::knob::{resolve, ALL};

    fn name_of(key: &str) -> Option<&'static str> {
        resolve(key).ok().map(|d| d.name)
    }

    #[test]
    fn proc_sys_paths_and_sysctl_forms_name_the_sysctl() {
        for key in [
            "kernel.numa_balancing",
            "/proc/sys/kernel/numa_balancing",
            "kernel/numa_balancing",
            "numa_balancing",
        ] {
            assert_eq!(name_of(key), Some("kernel.numa_balancing"), "{key}");
        }
    }

    #[test]
    fn debugfs_paths_and_legacy_sysctls_name_the_debugfs_knob() {
        for key in [
            "/sys/kernel/debug/sched/numa_balancing/scan_delay_ms",
            "sched/numa_balancing/scan_delay_ms",
            "numa_balancing/scan_delay_ms",
            "/proc/sys/kernel/numa_balancing_scan_delay_ms",
            "kernel/numa_balancing_scan_delay_ms",
            "kernel.numa_balancing_scan_delay_ms",
            "numa_balancing_scan_delay_ms",
            "scan_delay_ms",
        ] {
            assert_eq!(name_of(key), Some("numa_balancing.scan_delay_ms"), "{key}");
        }
        assert_eq!(
            name_of("/sys/kernel/debug/sched/numa_balancing/scan_size_mb"),
            Some("numa_balancing.scan_size_mb")
        );
    }

    #[test]
    fn a_lab_knob_answers_to_its_bare_name() {
        assert_eq!(name_of("pelt"), Some("numalab.pelt"));
        assert_eq!(name_of("CONFIG_HZ"), Some("CONFIG_HZ"));
    }

    #[test]
    fn paths_are_matched_as_written() {
        // A path under the wrong root, or a bare name with a path's
        // separator, is not a spelling.
        assert!(resolve("/proc/sys/sched/numa_balancing/scan_delay_ms").is_err());
        assert!(resolve("/sys/kernel/debug/kernel/numa_balancing").is_err());
        assert!(resolve("/proc/sys/kernel/numa_balancing/").is_err());
    }

    #[test]
    fn every_bare_name_of_the_registry_is_unambiguous_or_refused_as_such() {
        for d in ALL {
            for b in bare_names(d) {
                match resolve(&b) {
                    Ok(found) => assert_eq!(found.name, d.name, "{b}"),
                    Err(Unknown::Ambiguous(names)) => assert!(names.contains(&d.name), "{b}"),
                    Err(e) => panic!("{b}: {e:?}"),
                }
            }
        }
    }

    /// Two declarations sharing the bare name `scan_delay_ms`.
    static TWO: [Def; 2] = [
        Def {
            idx: 0,
            name: "a.scan_delay_ms",
            aliases: &[],
            ty: Type::Bool,
            default_raw: 0,
            unit: Unit::None,
            location: Location::Lab,
            source: "test",
            description: "test",
        },
        Def {
            idx: 1,
            name: "b.scan_delay_ms",
            aliases: &[],
            ty: Type::Bool,
            default_raw: 0,
            unit: Unit::None,
            location: Location::Lab,
            source: "test",
            description: "test",
        },
    ];

    #[test]
    fn a_bare_name_two_knobs_answer_to_is_refused_naming_both() {
        let e = resolve_in(&TWO, "scan_delay_ms").unwrap_err();
        assert_eq!(
            e,
            Unknown::Ambiguous(vec!["a.scan_delay_ms", "b.scan_delay_ms"])
        );
        assert!(e.hint().contains("a.scan_delay_ms or b.scan_delay_ms"));
        // The full names still resolve.
        assert_eq!(resolve_in(&TWO, "b.scan_delay_ms").map(|d| d.idx), Ok(1));
    }

    #[test]
    fn near_misses_get_the_nearest_spelling() {
        let hint = |k: &str| resolve(k).unwrap_err().hint();
        assert_eq!(
            hint("kernel.numa_balacing"),
            "; did you mean kernel.numa_balancing?"
        );
        assert_eq!(
            hint("numa_balancing.scan_delay"),
            "; did you mean numa_balancing.scan_delay_ms?"
        );
        assert_eq!(
            hint("/proc/sys/kernel/numa_balancng"),
            "; did you mean /proc/sys/kernel/numa_balancing (kernel.numa_balancing)?"
        );
        assert_eq!(
            hint("scan_dealy_ms"),
            "; did you mean scan_delay_ms (numa_balancing.scan_delay_ms)?"
        );
        // Far from everything: no guess.
        assert_eq!(hint("kernel.bogus"), "");
        assert_eq!(hint("xyz"), "");
    }

    #[test]
    fn nearest_of_a_list() {
        let files = ["cpuset.cpus", "cpuset.mems", "cpu.numa_load_balance"];
        assert_eq!(
            nearest_of("cpu.numa_load_balanc", files),
            Some("cpu.numa_load_balance")
        );
        assert_eq!(nearest_of("memory.max", files), None);
    }
}
