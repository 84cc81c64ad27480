//! The reproductions `numalab reproduce` knows, read from their
//! declarations: one TOML file per proposal in
//! `crates/numalab/reproductions/` (built into the binary), in the order
//! `list reproductions` and `reproduce all` show them. A new reproduction
//! is a `[[reproduction]]` table in its proposal's file; a new proposal is
//! a file and one line in [`FILES`].
//!
//! A file declares each reproduction's machine, workloads,
//! configurations and figures; a figure names its metric by an expression
//! ([`Metric::parse`]), its published value (a number, `"mean(A, B, ...)"` for the
//! mean of runs a posting lists one by one, or `"X / Y"` for a ratio of
//! two of those), its tolerance and its known miss by
//! name, and, for a share or ratio whose mechanism needs the full run
//! (a kernel period longer than a scaled-down run), `full_scale_only`
//! with the reason: it is then judged at `--scale` 1 only, as absolute
//! figures are. Tolerances (`[tolerance.NAME]`) and known misses (`[miss]`) are
//! found in the file, then in `common.toml`, which holds those several
//! proposals share. Left out: running and judging (reproduce.rs,
//! verdict.rs).

use crate::reproduce_decl::{Config, Metric, Published, Reproduction};
use crate::verdict::Tolerance;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The proposals' files, in the order their reproductions are listed.
const FILES: [(&str, &str); 5] = [
    (
        "mainline.toml",
        include_str!("../reproductions/mainline.toml"),
    ),
    ("cgroup.toml", include_str!("../reproductions/cgroup.toml")),
    (
        "interleave.toml",
        include_str!("../reproductions/interleave.toml"),
    ),
    ("async.toml", include_str!("../reproductions/async.toml")),
    ("sched.toml", include_str!("../reproductions/sched.toml")),
];

/// What several proposals share.
const COMMON: (&str, &str) = ("common.toml", include_str!("../reproductions/common.toml"));

/// One file: its reproductions, and the tolerances and known misses its
/// figures name.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    reproduction: Vec<ReproductionDecl>,
    #[serde(default)]
    tolerance: BTreeMap<String, ToleranceDecl>,
    #[serde(default)]
    miss: BTreeMap<String, String>,
}

/// A `[[reproduction]]` table ([`Reproduction`]'s fields).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReproductionDecl {
    name: String,
    description: String,
    source: String,
    machine: String,
    workloads: Vec<String>,
    cgroup: Option<String>,
    iterations: u32,
    latency_cgroup: Option<String>,
    configs: Vec<ConfigDecl>,
    figures: Vec<FigureDecl>,
}

/// A configuration ([`Config`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigDecl {
    label: String,
    sets: Vec<String>,
    needs_scan: bool,
}

/// A figure ([`Published`]): a published one has `published` and
/// `tolerance`, a model-only one neither.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FigureDecl {
    config: String,
    metric: String,
    published: Option<Value>,
    tolerance: Option<String>,
    known_miss: Option<String>,
    full_scale_only: Option<String>,
}

/// A published value: a number, `"mean(A, B, ...)"`, or `"X / Y"` of
/// those.
#[derive(Deserialize)]
#[serde(untagged)]
enum Value {
    Number(f64),
    Expression(String),
}

/// A `[tolerance.NAME]` table: exactly one of `rel`, `abs`, `at_least`,
/// and why.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToleranceDecl {
    rel: Option<f64>,
    abs: Option<f64>,
    at_least: Option<bool>,
    why: String,
}

/// A string of the declarations, kept for the life of the process (read
/// once, see [`all`]).
fn keep(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

impl Value {
    fn value(&self) -> Result<f64, String> {
        match self {
            Value::Number(v) => Ok(*v),
            Value::Expression(s) => {
                let bad = || {
                    format!(
                        "published \"{s}\": a number, \"mean(A, B, ...)\" or \"X / Y\" of those"
                    )
                };
                match s.split_once('/') {
                    Some((a, b)) => Ok(published_term(s, a)? / published_term(s, b)?),
                    None if s.trim_start().starts_with("mean(") => published_term(s, s),
                    None => Err(bad()),
                }
            }
        }
    }
}

/// One side of a published `"X / Y"` (or the whole value): a number, or
/// `mean(A, B, ...)`, the mean of the runs a posting lists one by one
/// (mmtests' `Amean`), so the source's own numbers stay in the
/// declaration instead of a rounded reading of them.
fn published_term(whole: &str, term: &str) -> Result<f64, String> {
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .map_err(|_| format!("published \"{whole}\": '{}' is not a number", x.trim()))
    };
    let t = term.trim();
    let Some(list) = t.strip_prefix("mean(").and_then(|r| r.strip_suffix(')')) else {
        return num(t);
    };
    let runs = list
        .split(',')
        .map(num)
        .collect::<Result<Vec<f64>, String>>()?;
    Ok(runs.iter().sum::<f64>() / runs.len() as f64)
}

impl ToleranceDecl {
    fn tolerance(&self, name: &str) -> Result<Tolerance, String> {
        let why = keep(self.why.clone());
        match (self.rel, self.abs, self.at_least) {
            (Some(f), None, None) => Ok(Tolerance::Rel(f, why)),
            (None, Some(d), None) => Ok(Tolerance::Abs(d, why)),
            (None, None, Some(true)) => Ok(Tolerance::AtLeast(why)),
            _ => Err(format!(
                "tolerance {name}: give exactly one of rel, abs, at_least = true"
            )),
        }
    }
}

/// Reads file `name` (text `text`).
fn parse(name: &str, text: &str) -> Result<File, String> {
    toml::from_str(text).map_err(|e| format!("reproductions/{name}: {e}"))
}

/// The reproductions of one file, names resolved in it, then in `common`.
fn declarations(file: &File, common: &File) -> Result<Vec<Reproduction>, String> {
    let tolerance = |name: &str| -> Result<Tolerance, String> {
        file.tolerance
            .get(name)
            .or_else(|| common.tolerance.get(name))
            .ok_or_else(|| format!("no tolerance '{name}'"))?
            .tolerance(name)
    };
    let miss = |name: &str| -> Result<&'static str, String> {
        file.miss
            .get(name)
            .or_else(|| common.miss.get(name))
            .map(|s| keep(s.clone()))
            .ok_or_else(|| format!("no known miss '{name}'"))
    };
    let mut out = Vec::new();
    for r in &file.reproduction {
        let mut published = Vec::new();
        for (i, f) in r.figures.iter().enumerate() {
            let at = |e: String| format!("reproduction {}, figure {}: {e}", r.name, i + 1);
            if !r.configs.iter().any(|c| c.label == f.config) {
                return Err(at(format!("no configuration '{}'", f.config)));
            }
            let (value, tol) = match (&f.published, &f.tolerance) {
                (Some(v), Some(t)) => (
                    Some(v.value().map_err(at)?),
                    Some(tolerance(t).map_err(at)?),
                ),
                (None, None) => (None, None),
                _ => return Err(at("a published value needs a tolerance, and only it".into())),
            };
            if value.is_none() && f.known_miss.is_some() {
                return Err(at(
                    "a known miss needs a published value: a model-only figure cannot miss".into(),
                ));
            }
            if value.is_none() && f.full_scale_only.is_some() {
                return Err(at("full_scale_only needs a published value".into()));
            }
            if f.full_scale_only
                .as_deref()
                .is_some_and(|w| w.trim().is_empty())
            {
                return Err(at("full_scale_only needs a reason".into()));
            }
            published.push(Published {
                config: keep(f.config.clone()),
                metric: Metric::parse(&f.metric).map_err(at)?,
                value,
                tolerance: tol,
                known_miss: f.known_miss.as_deref().map(miss).transpose().map_err(at)?,
                full_scale_only: f.full_scale_only.clone().map(keep),
            });
        }
        let strs = |v: &[String]| -> &'static [&'static str] {
            Box::leak(v.iter().map(|s| keep(s.clone())).collect())
        };
        let configs: Vec<Config> = r
            .configs
            .iter()
            .map(|c| Config {
                label: keep(c.label.clone()),
                sets: strs(&c.sets),
                needs_scan: c.needs_scan,
            })
            .collect();
        out.push(Reproduction {
            name: keep(r.name.clone()),
            description: keep(r.description.clone()),
            source: keep(r.source.clone()),
            machine: keep(r.machine.clone()),
            workloads: strs(&r.workloads),
            cgroup: r.cgroup.clone().map(keep),
            iterations: r.iterations,
            configs: Box::leak(configs.into_boxed_slice()),
            published,
            latency_cgroup: r.latency_cgroup.clone().map(keep),
        });
    }
    Ok(out)
}

/// The known misses `file` declares that none of `files`' figures names:
/// a declaration nothing uses would outlive the miss it explained.
fn unused_misses<'a>(file: &'a File, files: &[&File]) -> Vec<&'a str> {
    file.miss
        .keys()
        .filter(|m| {
            !files.iter().any(|f| {
                f.reproduction
                    .iter()
                    .flat_map(|r| &r.figures)
                    .any(|fig| fig.known_miss.as_deref() == Some(m.as_str()))
            })
        })
        .map(String::as_str)
        .collect()
}

/// Every reproduction of [`FILES`], or what is wrong with a file.
fn load() -> Result<Vec<Reproduction>, String> {
    let common = parse(COMMON.0, COMMON.1)?;
    if !common.reproduction.is_empty() {
        return Err("reproductions/common.toml: holds no reproduction".into());
    }
    let files = FILES
        .iter()
        .map(|(name, text)| Ok((*name, parse(name, text)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let mut all = Vec::new();
    for (name, file) in &files {
        all.extend(declarations(file, &common).map_err(|e| format!("reproductions/{name}: {e}"))?);
        if let Some(m) = unused_misses(file, &[file]).first() {
            return Err(format!(
                "reproductions/{name}: known miss '{m}' is declared but no figure names it"
            ));
        }
    }
    let every: Vec<&File> = files.iter().map(|(_, f)| f).collect();
    if let Some(m) = unused_misses(&common, &every).first() {
        return Err(format!(
            "reproductions/{}: known miss '{m}' is declared but no figure names it",
            COMMON.0
        ));
    }
    Ok(all)
}

/// All reproductions, read once per process. The files are built in and
/// a test reads every one, so a file that does not read is a defect of
/// the build, not of the user's input.
pub fn all() -> Vec<Reproduction> {
    static ALL: OnceLock<Vec<Reproduction>> = OnceLock::new();
    ALL.get_or_init(|| load().unwrap_or_else(|e| panic!("built-in {e}")))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_knobs::knob;

    #[test]
    fn every_file_reads_and_names_are_unique() {
        let all = load().unwrap();
        assert_eq!(all.len(), 10);
        let mut names: Vec<&str> = all.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        for r in &all {
            for w in r.workloads {
                let w = w
                    .split_once(':')
                    .filter(|(l, _)| r.configs.iter().any(|c| c.label == *l))
                    .map_or(*w, |(_, w)| w);
                numalab_workload::presets::load(w).unwrap_or_else(|e| panic!("{w}: {e}"));
            }
            for c in r.configs {
                crate::runner::knobs(c.sets).unwrap_or_else(|e| panic!("{}: {e}", r.name));
            }
        }
    }

    /// A one-reproduction file with figure `figure` and the tables `more`.
    fn file(figure: &str, more: &str) -> String {
        format!(
            "[[reproduction]]\nname = \"x\"\ndescription = \"d\"\nsource = \"s\"\nmachine = \"tiny-2n\"\n\
             workloads = [\"numa01\"]\niterations = 1\n\
             configs = [{{ label = \"a\", sets = [], needs_scan = false }}]\n\
             figures = [{figure}]\n{more}"
        )
    }

    fn read(text: &str) -> Result<Vec<Reproduction>, String> {
        declarations(&parse("t.toml", text)?, &parse(COMMON.0, COMMON.1)?)
    }

    #[test]
    fn a_figure_reads_its_metric_value_tolerance_and_miss() {
        let r = read(&file(
            "{ config = \"a\", metric = \"ratio_vs(a, lab(numa_scan_s))\", published = \"1 / 4\", tolerance = \"t\", known_miss = \"threadlocal-system-time\" }",
            "[tolerance.t]\nabs = 0.5\nwhy = \"w\"\n",
        ))
        .unwrap();
        let p = &r[0].published[0];
        assert_eq!(p.metric.name(), "numa_scan_s / a's");
        assert_eq!(p.value, Some(0.25));
        assert_eq!(p.tolerance.map(|t| t.label()), Some("±0.5".to_string()));
        assert!(p.known_miss.is_some_and(|m| m.contains("system time")));
    }

    #[test]
    fn a_published_mean_is_the_mean_of_the_listed_runs() {
        let v = |s: &str| Value::Expression(s.to_string()).value();
        assert_eq!(v("mean(1, 2, 6)"), Ok(3.0));
        assert_eq!(v("mean(2, 4) / mean(1, 3)"), Ok(1.5));
        assert_eq!(v(" 6 / mean(1,2)"), Ok(4.0));
        let e = v("mean(1, x)").unwrap_err();
        assert!(e.contains("'x' is not a number"), "{e}");
        let e = v("mean(1, 2").unwrap_err();
        assert!(e.contains("'mean(1, 2' is not a number"), "{e}");
        let e = v("median(1, 2)").unwrap_err();
        assert!(e.contains("a number, \"mean(A, B, ...)\""), "{e}");
    }

    #[test]
    fn a_bad_figure_is_refused_with_its_place_and_reason() {
        let err = |figure: &str| read(&file(figure, "")).unwrap_err();
        let e = err("{ config = \"a\", metric = \"lab(no_such)\" }");
        assert!(
            e.contains("figure 1") && e.contains("'no_such' is not a declared lab figure"),
            "{e}"
        );
        let e = err("{ config = \"b\", metric = \"elapsed\" }");
        assert!(e.contains("no configuration 'b'"), "{e}");
        let e = err("{ config = \"a\", metric = \"elapsed\", published = 1.0 }");
        assert!(e.contains("needs a tolerance"), "{e}");
        let e =
            err("{ config = \"a\", metric = \"elapsed\", published = 1.0, tolerance = \"nope\" }");
        assert!(e.contains("no tolerance 'nope'"), "{e}");
        let e = err(
            "{ config = \"a\", metric = \"elapsed\", known_miss = \"threadlocal-system-time\" }",
        );
        assert!(e.contains("a known miss needs a published value"), "{e}");
        let e = err("{ config = \"a\", metric = \"elapsed\", full_scale_only = \"w\" }");
        assert!(e.contains("full_scale_only needs a published value"), "{e}");
        let e = read(&file(
            "{ config = \"a\", metric = \"elapsed\", published = 1.0, tolerance = \"t\", full_scale_only = \" \" }",
            "[tolerance.t]\nabs = 0.5\nwhy = \"w\"\n",
        ))
        .unwrap_err();
        assert!(e.contains("full_scale_only needs a reason"), "{e}");
        let e = err("{ config = \"a\", metric = \"elapsed\", colour = 1 }");
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn a_known_miss_no_figure_names_is_found() {
        let used = parse(
            "t.toml",
            &file(
                "{ config = \"a\", metric = \"elapsed\", published = 1.0, tolerance = \"t\", known_miss = \"used\" }",
                "[tolerance.t]\nabs = 0.5\nwhy = \"w\"\n[miss]\nused = \"u\"\nstale = \"s\"\n",
            ),
        )
        .unwrap();
        assert_eq!(unused_misses(&used, &[&used]), vec!["stale"]);
        // The built-in files have none (load() refuses them).
        assert!(load().is_ok());
    }

    #[test]
    fn metric_expressions_parse_and_print_their_names() {
        for (expr, name) in [
            ("elapsed", "elapsed (s)"),
            ("lab_pct(cpu_busy_share)", "cpu_busy_share (%)"),
            (
                "memory_stat(/mytest, numa_hint_faults)",
                "/mytest numa_hint_faults",
            ),
            ("stat_ratio(/, a, b)", "/ a / b"),
            (
                "of_workload(specjbb, ratio_vs(base, vmstat(numa_pte_updates)))",
                "specjbb: numa_pte_updates / base's",
            ),
            (
                "of_workload(specjbb, sweep_total(48, vmstat(numa_hint_faults)))",
                "specjbb: numa_hint_faults over 48 points",
            ),
            (
                "runs_total(6, memory_stat(/mytest, numa_pte_updates))",
                "/mytest numa_pte_updates, total of 6 runs",
            ),
        ] {
            assert_eq!(Metric::parse(expr).unwrap().name(), name);
        }
        for bad in [
            "",
            "elapsed(x)",
            "vmstat(a, b)",
            "ratio_vs(a)",
            "nope",
            "lab(x",
            "score) x",
            "sweep_total(0, sys)",
            "sweep_total(x, sys)",
            "sweep_total(48)",
            "runs_total(0, sys)",
            "runs_total(six, sys)",
        ] {
            assert!(Metric::parse(bad).is_err(), "{bad}");
        }
    }

    const SWITCHES: [numalab_knobs::BoolKnob; 4] = [
        knob::NUMA_PREFERRED_NODE,
        knob::NUMA_MIGRATE_ON_SELECT,
        knob::NUMA_FAULT_CLASSIFY,
        knob::NUMA_SCAN_ADAPT,
    ];

    fn find(name: &str) -> Reproduction {
        all().into_iter().find(|r| r.name == name).unwrap()
    }

    #[test]
    fn the_baseline_is_39_and_the_series_the_v1_posting_both_on_39s_sysctls() {
        let r = find("sched-numa-integration");
        let base = crate::runner::knobs(r.configs[0].sets).expect("baseline knobs");
        let series = crate::runner::knobs(r.configs[1].sets).expect("series knobs");
        for k in SWITCHES {
            assert!(!base.get(k), "{} on in the baseline", k.def().name);
        }
        assert!(!base.get(knob::NUMA_SERIES_V1));
        // v1: its preferred node and reschedule; its own fault split and
        // scan rule where mainline later put classification and adaptation.
        assert!(series.get(knob::NUMA_PREFERRED_NODE) && series.get(knob::NUMA_MIGRATE_ON_SELECT));
        assert!(!series.get(knob::NUMA_FAULT_CLASSIFY) && !series.get(knob::NUMA_SCAN_ADAPT));
        assert!(series.get(knob::NUMA_SERIES_V1));
        // 3.9's sysctls and 3.8-3.12's pmd_numa in both; patch 8 raised
        // the maximum to 60 s.
        for k in [&base, &series] {
            assert!(k.get(knob::PMD_NUMA_BATCH));
            // 3.9's own scanner, which v1 left alone.
            assert!(k.get(knob::NUMA_SCAN_39));
            assert_eq!(k.get(knob::SCAN_PERIOD_MIN_MS), 100);
            assert_eq!(k.get(knob::SCAN_SIZE_MB), 256);
            assert_eq!(k.get(knob::SCAN_DELAY_MS), 1000);
        }
        assert_eq!(base.get(knob::SCAN_PERIOD_MAX_MS), 5000);
        assert_eq!(series.get(knob::SCAN_PERIOD_MAX_MS), 60_000);
    }

    #[test]
    fn each_ablation_config_turns_off_exactly_one_switch_except_the_ends() {
        let off: Vec<usize> = find("mainline-ablation")
            .configs
            .iter()
            .map(|c| {
                let k = crate::runner::knobs(c.sets).expect("knobs");
                // The ablation is of mainline's parts: never v1's rules.
                assert!(!k.get(knob::NUMA_SERIES_V1), "{}", c.label);
                assert!(!k.get(knob::PMD_NUMA_BATCH), "{}", c.label);
                assert!(!k.get(knob::NUMA_SCAN_39), "{}", c.label);
                SWITCHES.iter().filter(|&&s| !k.get(s)).count()
            })
            .collect();
        assert_eq!(off, vec![0, 1, 1, 1, 1, 4]);
    }
}
