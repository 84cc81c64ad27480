//! The mmtests compare-kernels report for autonumabench-style results.
//!
//! Models what `compare-kernels.sh` prints for an autonumabench run, as
//! `MMTests::Compare`, `MMTests::PrintGeneric`, `MMTests::ExtractAutonumabench`,
//! `MMTests::MonitorDuration` and `MMTests::MonitorMmtestsvmstat` lay it out:
//!
//! * a two-line header of column labels, split at the first `-` as mmtests
//!   splits `kernel-config` test names (a `-rcN` kernel suffix stays on the
//!   first line);
//! * the summary table, statistic-major: for each of `Min`, `Amean`,
//!   `Stddev`, `CoeffVar`, `Max`, `BAmean-50`, `BAmean-95`, `BAmean-99`, a row
//!   per operation, first every `syst-TEST` then every `elsp-TEST` (the order
//!   of `ExtractAutonumabench`; `user-TEST` is not reported). Values are
//!   `%12.2f`, deltas ` (%7.2f%)`, with `*` in place of the parentheses on the
//!   mean row when Welch's t-test finds the difference significant at 95%;
//! * a second table of `Hmean` rows (`tput-TEST`) for runs with a
//!   higher-is-better score (a lower-is-better score gets `Amean` rows,
//!   `score-TEST`);
//! * the `Duration User/System/Elapsed` block: totals of the column's runs;
//! * the `Ops` block: NUMA counters from the runs' /proc/vmstat deltas,
//!   summed over the column, with mmtests' derived rows and its
//!   `AutoNUMA cost` model.
//!
//! A column may hold several workloads (`numalab run -w numa01 -w numa02`):
//! each is a test with its own rows in every block of the summary table
//! ([`CompareRows`] says which runs are which test). A test one column has
//! no run of prints `n/a` there. The `Duration` and `Ops` totals are taken
//! over the tests every column has, with a line naming those left out, so
//! that a missing test does not pass for a difference.
//!
//! Left out: mmtests' ratio and geometric-mean tables, its
//! confidence-interval significance of recent versions (the t-test of the
//! 2019-2023 versions is used), the non-NUMA vmstat rows (reclaim,
//! compaction, THP), per-monitor graphs, HTML output, and mmtests' habit of
//! cutting the last character of a label that has no `-`. A column that has
//! no run of a test prints `n/a` rather than mmtests' misleading `0.00`.
//! Tests are ordered NUMA01, NUMA01_THREADLOCAL, NUMA02, NUMA02_SMT, then
//! the others alphabetically.

pub use crate::compare_rows::{order_tests, CompareRows};
use crate::stats::{self, Better, Stat, MULTIOPS_STATS, SIGNIFICANCE_ALPHA};
use numalab_record::{RunRecord, RunSet};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Width of a value field (mmtests' default `_FieldLength`).
const FIELD_LEN: usize = 12;
/// Width of the percentage inside ` (...%)` (mmtests' `_CompareLength`).
const COMPARE_LEN: usize = 7;
/// Width of a value in the `Ops` block (mmtests' vmstat monitor).
const OPS_FIELD_LEN: usize = 15;
/// Precision of every value printed.
const PRECISION: usize = 2;

/// Splits a column label into the two header lines mmtests prints: the part
/// before the first `-` and the rest (a `-rcN` suffix stays with the first
/// part). A label without `-` goes whole on the second line.
pub fn split_label(label: &str) -> (String, String) {
    let Some(mut idx) = label.find('-') else {
        return (String::new(), label.to_string());
    };
    let rest = &label[idx + 1..];
    if let Some(after_rc) = rest.strip_prefix("rc") {
        let digits = after_rc.chars().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 {
            let end = idx + 1 + 2 + digits;
            match label[end..].find('-') {
                Some(next) => idx = end + next,
                None => return (String::new(), label.to_string()),
            }
        }
    }
    (label[..idx].to_string(), label[idx + 1..].to_string())
}

/// The header lines above a block: labels right-aligned in columns of
/// `field` characters after a left margin of `margin` characters. The first
/// line is left out when no label has a `-`.
fn header_lines(out: &mut String, sets: &[RunSet], margin: usize, field: usize) {
    let parts: Vec<(String, String)> = sets.iter().map(|s| split_label(&s.name)).collect();
    let two_lines = parts.iter().any(|(a, _)| !a.is_empty());
    let mut line = |pick: &dyn Fn(&(String, String)) -> &str| {
        let mut l = format!("{:margin$}", "");
        for p in &parts {
            let _ = write!(l, "{:>field$}", pick(p));
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    if two_lines {
        line(&|p| p.0.as_str());
    }
    line(&|p| p.1.as_str());
}

/// One operation row of a summary table: its name, its direction and its
/// samples in each column (`None` when the column has no run of the test).
struct Operation {
    name: String,
    better: Better,
    samples: Vec<Option<Vec<f64>>>,
}

/// Samples of `pick` for the runs of `test` in each column.
fn samples(
    rows: &CompareRows,
    sets: &[RunSet],
    test: &str,
    pick: &dyn Fn(&RunRecord) -> Option<f64>,
) -> Vec<Option<Vec<f64>>> {
    (0..sets.len())
        .map(|col| {
            let v: Vec<f64> = rows.runs(sets, col, test).filter_map(pick).collect();
            (!v.is_empty()).then_some(v)
        })
        .collect()
}

/// Replaces `NaN` by 0, as mmtests prints statistics it cannot compute.
fn or_zero(v: f64) -> f64 {
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

/// Prints one summary table (header and rows) in mmtests' layout.
fn summary_table(out: &mut String, sets: &[RunSet], ops: &[Operation]) {
    if ops.is_empty() {
        return;
    }
    let stat_w = MULTIOPS_STATS
        .iter()
        .flat_map(|s| ops.iter().map(|o| s.name(o.better).len()))
        .max()
        .unwrap_or(0);
    let op_w = ops.iter().map(|o| o.name.len()).max().unwrap_or(0);
    header_lines(out, sets, stat_w + 1 + op_w, FIELD_LEN + COMPARE_LEN + 4);
    for stat in MULTIOPS_STATS {
        for op in ops {
            let mut line = format!("{:<stat_w$} {:<op_w$}", stat.name(op.better), op.name);
            let base = op.samples.first().and_then(|s| s.as_deref());
            let base_v = base.map(|b| or_zero(stat.value(b, op.better)));
            for (col, s) in op.samples.iter().enumerate() {
                let Some(s) = s.as_deref() else {
                    let _ = write!(line, "{:>FIELD_LEN$}{:w$}", "n/a", "", w = COMPARE_LEN + 4);
                    continue;
                };
                let v = or_zero(stat.value(s, op.better));
                let _ = write!(line, "{v:>FIELD_LEN$.PRECISION$}");
                match (base, base_v) {
                    (Some(b), Some(bv)) => {
                        let d = stat.delta(v, bv, op.better);
                        let sig = col > 0
                            && stat == Stat::Mean
                            && stats::significant(b, s, op.better, SIGNIFICANCE_ALPHA);
                        if sig {
                            let _ = write!(line, " *{d:>COMPARE_LEN$.2}%*");
                        } else {
                            let _ = write!(line, " ({d:>COMPARE_LEN$.2}%)");
                        }
                    }
                    _ => {
                        let _ = write!(line, " ({:>COMPARE_LEN$} )", "n/a");
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

/// The `Duration User/System/Elapsed` block: sums over each column's runs
/// (`runs`, by column).
fn duration_block(out: &mut String, sets: &[RunSet], runs: &[Vec<&RunRecord>]) {
    type Pick = fn(&RunRecord) -> f64;
    let rows: [(&str, Pick); 3] = [
        ("User", |r| r.user_s),
        ("System", |r| r.sys_s),
        ("Elapsed", |r| r.elapsed_s),
    ];
    let op_w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let head = "Duration";
    header_lines(out, sets, head.len() + 1 + op_w, FIELD_LEN);
    for (name, pick) in rows {
        let mut line = format!("{head} {name:<op_w$}");
        for col in runs {
            let total: f64 = col.iter().map(|r| pick(r)).sum();
            let _ = write!(line, "{total:>FIELD_LEN$.PRECISION$}");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// The NUMA figures of the `Ops` block for a group of runs: /proc/vmstat
/// deltas summed over the runs, and mmtests' derived figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NumaOps {
    /// `numa_hit`, when any run has it.
    pub alloc_hit: Option<u64>,
    /// `numa_miss`, when any run has it.
    pub alloc_miss: Option<u64>,
    /// `numa_interleave`, when any run has it.
    pub interleave_hit: Option<u64>,
    /// `numa_local`, when any run has it.
    pub alloc_local: Option<u64>,
    /// `numa_pte_updates`: base pages whose protection the scanner changed,
    /// a huge page counting 512 (mmtests' "base-page range updates").
    pub pte_updates: u64,
    /// `numa_huge_pte_updates`: PMDs updated.
    pub huge_pte_updates: u64,
    /// `numa_hint_faults`.
    pub hint_faults: u64,
    /// `numa_hint_faults_local`.
    pub hint_faults_local: u64,
    /// `numa_pages_migrated`.
    pub pages_migrated: u64,
    /// `numa_task_migrated`, when any run has it.
    pub task_migrated: Option<u64>,
    /// `numa_task_swapped`, when any run has it.
    pub task_swapped: Option<u64>,
}

/// mmtests' AutoNUMA cost model, in millions of cost units: 7 per PTE update
/// (`Ca` = 56/8), 5000 per hinting fault and 19 per migrated page
/// (`Ci` = `Ca` + 12). mmtests also writes a page-copy term but a stray `;`
/// leaves it out of the sum; so does this.
pub fn autonuma_cost(pte_updates: u64, hint_faults: u64, pages_migrated: u64) -> f64 {
    let ca = 56.0 / 8.0;
    let ci = ca + 12.0;
    (ca * pte_updates as f64 + 5000.0 * hint_faults as f64 + ci * pages_migrated as f64) / 1e6
}

impl NumaOps {
    /// Sums the vmstat deltas of `runs`.
    pub fn from_runs<'a, I>(runs: I) -> NumaOps
    where
        I: IntoIterator<Item = &'a RunRecord>,
    {
        let mut o = NumaOps::default();
        let add = |slot: &mut Option<u64>, r: &RunRecord, key: &str| {
            if let Some(v) = r.vmstat.get(key) {
                *slot = Some(slot.unwrap_or(0).saturating_add(*v));
            }
        };
        for r in runs {
            add(&mut o.alloc_hit, r, "numa_hit");
            add(&mut o.alloc_miss, r, "numa_miss");
            add(&mut o.interleave_hit, r, "numa_interleave");
            add(&mut o.alloc_local, r, "numa_local");
            o.pte_updates = o.pte_updates.saturating_add(r.vm("numa_pte_updates"));
            o.huge_pte_updates = o
                .huge_pte_updates
                .saturating_add(r.vm("numa_huge_pte_updates"));
            o.hint_faults = o.hint_faults.saturating_add(r.vm("numa_hint_faults"));
            o.hint_faults_local = o
                .hint_faults_local
                .saturating_add(r.vm("numa_hint_faults_local"));
            o.pages_migrated = o.pages_migrated.saturating_add(r.vm("numa_pages_migrated"));
            add(&mut o.task_migrated, r, "numa_task_migrated");
            add(&mut o.task_swapped, r, "numa_task_swapped");
        }
        o
    }

    /// "NUMA PTE updates": base-page PTEs updated, i.e. `numa_pte_updates`
    /// less 512 per huge PMD update (may be negative if the counters
    /// disagree).
    pub fn base_pte_updates(&self) -> f64 {
        self.pte_updates as f64 - 512.0 * self.huge_pte_updates as f64
    }

    /// "NUMA hint local percent": `100 * local / faults`, 100 when there
    /// were no hinting faults (as mmtests).
    pub fn hint_local_percent(&self) -> f64 {
        if self.hint_faults == 0 {
            100.0
        } else {
            100.0 * self.hint_faults_local as f64 / self.hint_faults as f64
        }
    }

    /// [`autonuma_cost`] of these counters.
    pub fn autonuma_cost(&self) -> f64 {
        autonuma_cost(self.pte_updates, self.hint_faults, self.pages_migrated)
    }
}

/// A row of the `Ops` block: label, whether to show it, value.
type OpsRow = (&'static str, fn(&NumaOps) -> Option<f64>);

/// The rows of the `Ops` block in mmtests' order, plus the task rows of
/// the per-cgroup balancing patches.
const OPS_ROWS: [OpsRow; 14] = [
    ("NUMA alloc hit", |o| o.alloc_hit.map(|v| v as f64)),
    ("NUMA alloc miss", |o| o.alloc_miss.map(|v| v as f64)),
    ("NUMA interleave hit", |o| {
        o.interleave_hit.map(|v| v as f64)
    }),
    ("NUMA alloc local", |o| o.alloc_local.map(|v| v as f64)),
    ("NUMA base-page range updates", |o| {
        Some(o.pte_updates as f64)
    }),
    ("NUMA PTE updates", |o| Some(o.base_pte_updates())),
    ("NUMA PMD updates", |o| Some(o.huge_pte_updates as f64)),
    ("NUMA hint faults", |o| Some(o.hint_faults as f64)),
    // mmtests' label says "%" but the value is the raw count.
    ("NUMA hint local faults %", |o| {
        Some(o.hint_faults_local as f64)
    }),
    ("NUMA hint local percent", |o| Some(o.hint_local_percent())),
    ("NUMA pages migrated", |o| Some(o.pages_migrated as f64)),
    ("AutoNUMA cost", |o| Some(o.autonuma_cost())),
    ("NUMA task migrated", |o| o.task_migrated.map(|v| v as f64)),
    ("NUMA task swapped", |o| o.task_swapped.map(|v| v as f64)),
];

/// The `Ops` block: one row per NUMA counter, one column per set, summed
/// over each column's runs (`runs`, by column).
fn ops_block(out: &mut String, sets: &[RunSet], runs: &[Vec<&RunRecord>]) {
    let figs: Vec<NumaOps> = runs
        .iter()
        .map(|col| NumaOps::from_runs(col.iter().copied()))
        .collect();
    let rows: Vec<&OpsRow> = OPS_ROWS
        .iter()
        .filter(|(_, f)| figs.iter().any(|o| f(o).is_some()))
        .collect();
    let name_w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    header_lines(out, sets, "Ops".len() + 1 + name_w, OPS_FIELD_LEN);
    for (name, f) in rows {
        let mut line = format!("Ops {name:<name_w$}");
        for o in &figs {
            let v = f(o).unwrap_or(0.0);
            let _ = write!(line, "{v:>OPS_FIELD_LEN$.PRECISION$}");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// Prints the mmtests compare-kernels report of `sets`, one column per set,
/// the first being the baseline: the elapsed/system time summary table, a
/// score table when runs have a score, the `Duration` block and the `Ops`
/// block, separated by blank lines. Empty for no sets.
pub fn compare_table(sets: &[RunSet]) -> String {
    let mut out = String::new();
    if sets.is_empty() {
        return out;
    }
    let rows = CompareRows::of(sets);
    let tests = &rows.tests;

    let mut time_ops = Vec::new();
    for (prefix, pick) in [
        (
            "syst",
            (|r: &RunRecord| Some(r.sys_s)) as fn(&RunRecord) -> Option<f64>,
        ),
        ("elsp", |r: &RunRecord| Some(r.elapsed_s)),
    ] {
        for t in tests {
            time_ops.push(Operation {
                name: format!("{prefix}-{t}"),
                better: Better::Lower,
                samples: samples(&rows, sets, t, &pick),
            });
        }
    }

    let mut higher_ops = Vec::new();
    let mut lower_ops = Vec::new();
    for t in tests {
        let first_score = (0..sets.len())
            .flat_map(|col| rows.runs(sets, col, t))
            .find_map(|r| r.score.as_ref());
        let Some(score) = first_score else { continue };
        let better = if score.higher_is_better {
            Better::Higher
        } else {
            Better::Lower
        };
        let pick = |r: &RunRecord| r.score.as_ref().map(|s| s.value);
        let op = Operation {
            name: match better {
                Better::Higher => format!("tput-{t}"),
                Better::Lower => format!("score-{t}"),
            },
            better,
            samples: samples(&rows, sets, t, &pick),
        };
        match better {
            Better::Higher => higher_ops.push(op),
            Better::Lower => lower_ops.push(op),
        }
    }

    let mut blocks: Vec<String> = Vec::new();
    for ops in [&time_ops, &higher_ops, &lower_ops] {
        if !ops.is_empty() {
            let mut b = String::new();
            summary_table(&mut b, sets, ops);
            blocks.push(b);
        }
    }
    // Totals are compared over the tests every column ran: a test one
    // column lacks would make its totals smaller for no other reason.
    let common = rows.common();
    let mut b = String::new();
    if common.len() < tests.len() {
        let left_out: Vec<&str> = tests
            .iter()
            .filter(|t| !common.contains(t))
            .map(String::as_str)
            .collect();
        if common.is_empty() {
            let _ = writeln!(
                b,
                "Duration and Ops: no test is in every column; not compared"
            );
            blocks.push(b);
            out.push_str(&blocks.join("\n"));
            return out;
        }
        let _ = writeln!(
            b,
            "Duration and Ops: {} only (in every column); left out {}",
            common.join(", "),
            left_out.join(", ")
        );
        blocks.push(b);
        b = String::new();
    }
    let runs: Vec<Vec<&RunRecord>> = (0..sets.len())
        .map(|col| {
            common
                .iter()
                .flat_map(|t| rows.runs(sets, col, t))
                .collect()
        })
        .collect();
    duration_block(&mut b, sets, &runs);
    blocks.push(b);
    let mut b = String::new();
    ops_block(&mut b, sets, &runs);
    blocks.push(b);

    out.push_str(&blocks.join("\n"));
    out
}

/// Kernel order of the NUMA balancing counters in memory.stat (the last
/// two come from the per-cgroup NUMA balancing patches).
const MEMCG_NUMA_ORDER: [&str; 5] = [
    "numa_pages_migrated",
    "numa_pte_updates",
    "numa_hint_faults",
    "numa_task_migrated",
    "numa_task_swapped",
];

/// Prints the memory.stat `numa_*` counters of the cgroup `cgroup_path`, one
/// column per set, each value summed over the set's runs (`-` for a column
/// none of whose runs has the cgroup). Rows follow the kernel's
/// memory.stat order, then any other `numa_*` key alphabetically.
pub fn compare_cgroups(sets: &[RunSet], cgroup_path: &str) -> String {
    let mut out = String::new();
    if sets.is_empty() {
        return out;
    }
    let keys: BTreeSet<&str> = sets
        .iter()
        .flat_map(|s| &s.runs)
        .filter_map(|r| r.cgroups.get(cgroup_path))
        .flat_map(|c| c.memory_stat.keys())
        .map(String::as_str)
        .filter(|k| k.starts_with("numa_"))
        .collect();
    let present = sets
        .iter()
        .any(|s| s.runs.iter().any(|r| r.cgroups.contains_key(cgroup_path)));
    if !present {
        let _ = writeln!(out, "cgroup {cgroup_path}: not in any run");
        return out;
    }
    let mut rows: Vec<&str> = MEMCG_NUMA_ORDER
        .iter()
        .copied()
        .filter(|k| keys.contains(k))
        .collect();
    rows.extend(
        keys.iter()
            .copied()
            .filter(|k| !MEMCG_NUMA_ORDER.contains(k)),
    );
    if rows.is_empty() {
        let _ = writeln!(
            out,
            "cgroup {cgroup_path}: no numa_* counters in memory.stat"
        );
        return out;
    }
    let name_w = rows.iter().map(|k| k.len()).max().unwrap_or(0);
    header_lines(
        &mut out,
        sets,
        cgroup_path.len() + 1 + name_w,
        OPS_FIELD_LEN,
    );
    for key in rows {
        let mut line = format!("{cgroup_path} {key:<name_w$}");
        for set in sets {
            let groups: Vec<_> = set
                .runs
                .iter()
                .filter_map(|r| r.cgroups.get(cgroup_path))
                .collect();
            if groups.is_empty() {
                let _ = write!(line, "{:>OPS_FIELD_LEN$}", "-");
            } else {
                let total: u64 = groups
                    .iter()
                    .map(|c| c.memory_stat.get(key).copied().unwrap_or(0))
                    .fold(0u64, u64::saturating_add);
                let _ = write!(line, "{total:>OPS_FIELD_LEN$}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{record, set};

    #[test]
    fn tests_are_ordered_autonumabench_first() {
        let got = order_tests([
            "ZETA",
            "NUMA02_SMT",
            "ALPHA",
            "NUMA01",
            "NUMA01_THREADLOCAL",
            "NUMA01",
        ]);
        assert_eq!(
            got,
            [
                "NUMA01",
                "NUMA01_THREADLOCAL",
                "NUMA02_SMT",
                "ALPHA",
                "ZETA"
            ]
        );
    }

    #[test]
    fn labels_split_like_mmtests() {
        assert_eq!(
            split_label("balancing-off"),
            ("balancing".into(), "off".into())
        );
        assert_eq!(
            split_label("6.8.0-rc3-vanilla"),
            ("6.8.0-rc3".into(), "vanilla".into())
        );
        assert_eq!(split_label("baseline"), ("".into(), "baseline".into()));
        assert_eq!(split_label("a-b-c"), ("a".into(), "b-c".into()));
    }

    #[test]
    fn amean_row_has_mmtests_format_and_sign() {
        let base = set("base-line", vec![record("numa01", 1, 191.32, 10.0, 69.65)]);
        let new = set("new-patch", vec![record("numa01", 1, 104.46, 10.0, 106.73)]);
        let t = compare_table(&[base, new]);
        let amean_elsp = t
            .lines()
            .find(|l| l.starts_with("Amean     elsp-NUMA01"))
            .unwrap();
        assert_eq!(
            amean_elsp,
            "Amean     elsp-NUMA01      191.32 (   0.00%)      104.46 (  45.40%)"
        );
        let amean_syst = t
            .lines()
            .find(|l| l.starts_with("Amean     syst-NUMA01"))
            .unwrap();
        assert!(amean_syst.ends_with("106.73 ( -53.24%)"), "{amean_syst}");
        // One sample per side: never significant.
        assert!(!t.contains('*'));
    }

    #[test]
    fn significance_is_marked_on_mean_rows_only() {
        let a: Vec<_> = [309.0, 310.0, 309.5, 310.5, 308.5]
            .iter()
            .enumerate()
            .map(|(i, e)| record("numa01", i as u64, *e, 1.0, 10.0))
            .collect();
        let b: Vec<_> = [284.0, 285.0, 284.5, 285.5, 283.5]
            .iter()
            .enumerate()
            .map(|(i, e)| record("numa01", i as u64, *e, 1.0, 10.0))
            .collect();
        let t = compare_table(&[set("x", a.clone()), set("y", b)]);
        let amean = t.lines().find(|l| l.starts_with("Amean     elsp")).unwrap();
        assert!(amean.ends_with("284.50 *   8.08%*"), "{amean}");
        for l in t.lines().filter(|l| !l.starts_with("Amean")) {
            assert!(!l.contains('*'), "{l}");
        }
        // Identical samples: no mark.
        let same = compare_table(&[set("x", a.clone()), set("y", a)]);
        assert!(!same.contains('*'));
    }

    #[test]
    fn ops_block_arithmetic() {
        let mut r1 = record("numa01", 1, 10.0, 1.0, 1.0);
        r1.vmstat.insert("numa_pte_updates".into(), 33_000);
        r1.vmstat.insert("numa_huge_pte_updates".into(), 10);
        r1.vmstat.insert("numa_hint_faults".into(), 15_000);
        r1.vmstat.insert("numa_hint_faults_local".into(), 14_000);
        r1.vmstat.insert("numa_pages_migrated".into(), 200);
        let mut r2 = r1.clone();
        r2.vmstat.insert("numa_pte_updates".into(), 475);
        r2.vmstat.insert("numa_huge_pte_updates".into(), 0);
        r2.vmstat.insert("numa_hint_faults".into(), 758);
        r2.vmstat.insert("numa_hint_faults_local".into(), 1_371);
        r2.vmstat.insert("numa_pages_migrated".into(), 35);
        let o = NumaOps::from_runs([&r1, &r2]);
        assert_eq!(o.pte_updates, 33_475);
        assert_eq!(o.base_pte_updates(), 33_475.0 - 5_120.0);
        assert_eq!(o.hint_faults, 15_758);
        assert_eq!(o.pages_migrated, 235);
        // 7*33475 + 5000*15758 + 19*235 = 79028790.
        assert!((o.autonuma_cost() - 79.028_79).abs() < 1e-9);
        assert!((o.hint_local_percent() - 100.0 * 15_371.0 / 15_758.0).abs() < 1e-9);
        assert_eq!(o.alloc_hit, None);
        assert_eq!(NumaOps::default().hint_local_percent(), 100.0);

        let t = compare_table(&[set("a", vec![r1, r2])]);
        let row = |name: &str, v: &str| format!("Ops {name:<28}{v:>15}\n");
        assert!(t.contains(&row("AutoNUMA cost", "79.03")), "{t}");
        assert!(
            t.contains(&row("NUMA hint local faults %", "15371.00")),
            "{t}"
        );
        assert!(t.contains(&row("NUMA hint local percent", "97.54")), "{t}");
        assert!(t.contains(&row("NUMA PTE updates", "28355.00")), "{t}");
        assert!(t.contains(&row("NUMA PMD updates", "10.00")), "{t}");
        assert!(!t.contains("NUMA alloc hit"));
        assert!(!t.contains("NUMA task migrated"));
    }

    #[test]
    fn optional_ops_rows_appear_when_counters_exist() {
        let mut r = record("numa01", 1, 10.0, 1.0, 1.0);
        r.vmstat.insert("numa_hit".into(), 5);
        r.vmstat.insert("numa_task_migrated".into(), 253);
        r.vmstat.insert("numa_task_swapped".into(), 4);
        let other = record("numa01", 2, 10.0, 1.0, 1.0);
        let t = compare_table(&[set("a", vec![other]), set("b", vec![r])]);
        assert!(t.contains("Ops NUMA alloc hit"));
        assert!(!t.contains("Ops NUMA alloc miss"));
        let migrated = t
            .lines()
            .find(|l| l.starts_with("Ops NUMA task migrated"))
            .unwrap();
        assert!(
            migrated.ends_with("           0.00         253.00"),
            "{migrated}"
        );
        assert!(t.contains("Ops NUMA task swapped"));
    }

    #[test]
    fn duration_sums_over_runs() {
        let runs = vec![
            record("numa01", 1, 100.0, 1000.25, 50.5),
            record("numa02", 1, 20.0, 200.0, 9.5),
        ];
        let t = compare_table(&[set("only", runs)]);
        assert!(t.contains("Duration User        1200.25\n"), "{t}");
        assert!(t.contains("Duration System        60.00\n"), "{t}");
        assert!(t.contains("Duration Elapsed      120.00\n"), "{t}");
    }

    #[test]
    fn missing_tests_print_na() {
        let a = set(
            "a",
            vec![
                record("numa01", 1, 10.0, 1.0, 1.0),
                record("numa02", 1, 5.0, 1.0, 1.0),
            ],
        );
        let b = set("b", vec![record("numa01", 1, 9.0, 1.0, 1.0)]);
        let t = compare_table(&[a, b]);
        let l = t
            .lines()
            .find(|l| l.starts_with("Amean     elsp-NUMA02"))
            .unwrap();
        assert!(l.ends_with("5.00 (   0.00%)         n/a"), "{l}");
        let c = set("c", vec![record("numa02", 1, 4.0, 1.0, 1.0)]);
        let b = set("b", vec![record("numa01", 1, 9.0, 1.0, 1.0)]);
        let t = compare_table(&[b, c]);
        let l = t
            .lines()
            .find(|l| l.starts_with("Amean     elsp-NUMA02"))
            .unwrap();
        assert!(l.ends_with("4.00 (    n/a )"), "{l}");
    }

    #[test]
    fn totals_are_over_the_tests_every_column_has() {
        let a = set(
            "a",
            vec![
                record("numa01", 1, 10.0, 1.0, 1.0),
                record("numa02", 1, 5.0, 100.0, 1.0),
            ],
        );
        let b = set("b", vec![record("numa01", 1, 9.0, 2.0, 1.0)]);
        let t = compare_table(&[a.clone(), b]);
        assert!(
            t.contains("Duration and Ops: NUMA01 only (in every column); left out NUMA02\n"),
            "{t}"
        );
        // numa02's 100 user seconds are not in column a's total.
        let user = t.lines().find(|l| l.starts_with("Duration User")).unwrap();
        assert!(user.ends_with("1.00        2.00"), "{user}");
        // Both columns with both tests: every run counts, no note.
        let t = compare_table(&[a.clone(), a]);
        assert!(!t.contains("Duration and Ops:"), "{t}");
        assert!(
            t.contains("Duration User         101.00      101.00\n"),
            "{t}"
        );
        // Nothing in common: no totals at all.
        let t = compare_table(&[
            set("x", vec![record("numa01", 1, 1.0, 1.0, 1.0)]),
            set("y", vec![record("numa02", 1, 1.0, 1.0, 1.0)]),
        ]);
        assert!(t.contains("no test is in every column"), "{t}");
        assert!(!t.contains("Duration User"), "{t}");
        assert!(!t.contains("Ops "), "{t}");
    }

    #[test]
    fn throughput_scores_get_hmean_rows() {
        let mk = |seed, v| {
            let mut r = record("oltp", seed, 60.0, 1.0, 1.0);
            r.score = Some(numalab_record::Score {
                name: "throughput".into(),
                unit: "tx/s".into(),
                value: v,
                higher_is_better: true,
            });
            r
        };
        let t = compare_table(&[
            set("base", vec![mk(1, 1000.0), mk(2, 1010.0)]),
            set("new", vec![mk(1, 1100.0), mk(2, 1111.0)]),
        ]);
        let h = t
            .lines()
            .find(|l| l.starts_with("Hmean     tput-OLTP"))
            .unwrap();
        assert!(h.contains("(   0.00%)"), "{h}");
        assert!(h.contains("  10.00%"), "{h}");
        assert!(t.lines().any(|l| l.starts_with("BHmean-50 tput-OLTP")));
        assert!(t.lines().any(|l| l.starts_with("Amean     elsp-OLTP")));
    }

    #[test]
    fn cgroup_counters_per_column() {
        let mut r = record("numa01_threadlocal", 1, 10.0, 1.0, 1.0);
        let mut cg = numalab_record::CgroupFigures::default();
        cg.memory_stat.insert("numa_pages_migrated".into(), 10);
        cg.memory_stat.insert("numa_hint_faults".into(), 7);
        cg.memory_stat.insert("pgfault".into(), 99);
        r.cgroups.insert("/mytest".into(), cg);
        let plain = record("numa01_threadlocal", 2, 10.0, 1.0, 1.0);
        let t = compare_cgroups(
            &[set("off", vec![plain]), set("on", vec![r.clone(), r])],
            "/mytest",
        );
        assert_eq!(
            t,
            "                                       off             on\n\
             /mytest numa_pages_migrated              -             20\n\
             /mytest numa_hint_faults                 -             14\n"
        );
        assert!(compare_cgroups(&[set("x", vec![])], "/none").contains("not in any run"));
    }

    #[test]
    fn no_sets_no_output() {
        assert_eq!(compare_table(&[]), "");
        assert_eq!(compare_cgroups(&[], "/"), "");
    }
}
