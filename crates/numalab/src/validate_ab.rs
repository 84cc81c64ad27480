//! `numalab validate --kernel-patch FILE`: every scenario on the stock and
//! the patched kernel (the same Debian source and configuration, without
//! and with the patch series), beside the model without and with the
//! proposal's switch (`--patched-set`).
//!
//! For each scenario it prints the usual two-column tables
//! ([`crate::validate::table`]) for stock (model with `--set` only, stock
//! kernel) and patched (model with `--set` and `--patched-set`, patched
//! kernel), then one four-column summary: the workload's counters, each
//! measured thread's final local share, and the kernel console problems.
//! A run the kernel (or the model) refused is shown as `EINVAL` when that
//! is why (a memory policy only the patch allows), not counted as a
//! failure. Console problems (`BUG:`, `Oops`, `WARNING:`, `Call Trace`)
//! make the exit code 1.
//!
//! `--check` asserts that model and kernel agree, for the stock pair and
//! the patched pair of every scenario, on the facts that do not depend on
//! timing: whether the run was accepted (or refused with the same
//! EINVAL), whether the workload's cgroup migrated pages, whether THPs
//! migrated (each above [`MIGRATION_NOISE`] of the scenario's pages), and
//! each measured thread's final local share within
//! [`SHARE_AGREEMENT`]. Counts themselves are only printed: TCG timing
//! makes them differ by tens of percent.
//!
//! Left out: saved guest records.

use crate::failure::Failure;
use crate::out;
use crate::real::{self, RunArgs};
use crate::validate::{
    final_share, last_common_time, local_shares, measured_threads, memcg, resolve, run_model,
    table, Options, Scenario,
};
use crate::vm_kernel::Stock;
use numalab_record::lab;
use numalab_record::RunRecord;
use numalab_sim::kernel::mm::{HPAGE_PMD_NR, PAGE_SHIFT};
use numalab_topology::Machine;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One column: a record, or why there is none.
pub type Column = Result<RunRecord, String>;

/// How a refused run shows in a cell.
pub fn refusal(e: &str) -> String {
    if e.contains("EINVAL") || e.contains("Invalid argument") {
        "EINVAL".into()
    } else {
        "failed".into()
    }
}

fn guest(s: &Scenario, m: &Machine, o: &Options, tmp: &Path, kernel: &Stock) -> Column {
    let file = tmp.join(format!("{}.toml", s.name));
    out::write_file("", &file, s.text).map_err(|e| e.to_string())?;
    let a = RunArgs {
        workload: file.display().to_string(),
        sets: Vec::new(),
        json: None,
        scale: o.scale,
        seed: o.seed,
        interval: 1.0,
        trace: None,
        trace_events: None,
        probes: Vec::new(),
    };
    let mut v = o.vm.clone();
    v.boot(kernel);
    // The table keeps a failure's first line; the console tail behind it
    // goes to stderr, where a CI log keeps it (a refused policy is a
    // result, not a failure).
    let r = real::vm_outcome(m, &a, &v).map_err(|e| {
        if refusal(&e.message) == "EINVAL" {
            return e.message;
        }
        eprintln!(
            "numalab validate: {}: {}: {}{}",
            s.name,
            kernel.describe(),
            e.message,
            e.detail
                .as_deref()
                .map_or(String::new(), |d| format!("\n{d}"))
        );
        e.message
    })?;
    eprintln!(
        "numalab validate: {}: kernel {} ({}), boot {:.1} s, QEMU {:.1} s, console problems {}",
        s.name,
        r.record.kernel.as_deref().unwrap_or("?"),
        kernel.describe(),
        r.boot_s.unwrap_or(f64::NAN),
        r.qemu_s,
        r.problems.len()
    );
    for p in &r.problems {
        eprintln!("numalab validate: {}: CONSOLE: {p}", s.name);
    }
    Ok(r.record)
}

/// The four-column summary of one scenario.
pub fn summary(
    name: &str,
    w: &numalab_workload::model::Workload,
    m: &Machine,
    cols: &[(&str, &Column)],
) -> String {
    let mut s = format!("== {name}: stock vs patched kernel vs model\n{:<28}", "");
    for (l, _) in cols {
        let _ = write!(s, " {l:>15}");
    }
    s.push('\n');
    type Get = fn(&RunRecord) -> Option<f64>;
    let rows: [(&str, Get); 7] = [
        ("policy accepted", |_| Some(1.0)),
        ("memcg:numa_pte_updates", |r| memcg(r, "numa_pte_updates")),
        ("memcg:numa_hint_faults", |r| memcg(r, "numa_hint_faults")),
        ("memcg:numa_pages_migrated", |r| {
            memcg(r, "numa_pages_migrated")
        }),
        ("numa_pages_migrated", |r| {
            Some(r.vm("numa_pages_migrated") as f64)
        }),
        ("thp_migration_success", |r| {
            Some(r.vm("thp_migration_success") as f64)
        }),
        ("console problems", |r| r.lab.get(lab::VM_CONSOLE_PROBLEMS)),
    ];
    for (label, get) in rows {
        let _ = write!(s, "{label:<28}");
        for (_, c) in cols {
            let cell = match c {
                Ok(r) if label == "policy accepted" => {
                    let _ = r;
                    "yes".to_string()
                }
                Ok(r) => get(r).map_or("-".into(), |v| format!("{v:.0}")),
                Err(e) => refusal(e),
            };
            let _ = write!(s, " {cell:>15}");
        }
        s.push('\n');
    }
    let th = measured_threads(w);
    for (i, t) in th.iter().enumerate() {
        let _ = write!(s, "{:<28}", format!("{} final local", t.thread));
        for (_, c) in cols {
            let cell = match c {
                Ok(r) => {
                    let sh = local_shares(r, m, &th);
                    let at = last_common_time(&sh);
                    final_share(&sh[i], at).map_or("-".into(), |v| format!("{:.0}%", v * 100.0))
                }
                Err(e) => refusal(e),
            };
            let _ = write!(s, " {cell:>15}");
        }
        s.push('\n');
    }
    for (l, c) in cols {
        if let Err(e) = c {
            let _ = writeln!(s, "  {l}: {e}");
        }
    }
    s
}

/// How far apart a thread's final local share may be in the model and the
/// kernel under `--check` (a share, 0-1): the guest's 1-vCPU nodes and TCG
/// timing move a chunk's last pages by a few percent; a thread whose
/// memory stayed or moved differs by far more.
pub const SHARE_AGREEMENT: f64 = 0.25;

/// The share of a scenario's declared pages (its regions, not the runtime
/// mappings the model adds) that migrated pages must exceed to count as
/// "some" under `--check`. The kernel's memcg counter covers every page
/// of the cgroup: the runner's own heap, stacks and libraries, first
/// touched by its main thread, can migrate a handful of pages when a
/// pinned worker touches them (a CI boot of the patched kernel moved a few
/// in `p3-interleave-4k`, where no table page moves). A scenario whose
/// regions migrate moves tens of percent of them.
pub const MIGRATION_NOISE: f64 = 0.01;

/// The pages the workload declares (every process's regions, in base
/// pages).
fn declared_pages(w: &numalab_workload::model::Workload) -> f64 {
    w.processes
        .iter()
        .flat_map(|p| &p.regions)
        .filter(|r| !r.runtime)
        .map(|r| (r.bytes >> PAGE_SHIFT) as f64)
        .sum()
}

/// What `--check` finds different between a model column and a kernel
/// column of scenario `name` (`label`: stock or patched); empty when they
/// agree. Migration counts as "some" above [`MIGRATION_NOISE`] of the
/// declared pages.
pub fn disagreements(
    label: &str,
    w: &numalab_workload::model::Workload,
    m: &Machine,
    model: &Column,
    kernel: &Column,
) -> Vec<String> {
    let (mr, kr) = match (model, kernel) {
        (Err(a), Err(b)) if refusal(a) == refusal(b) => return Vec::new(),
        (Ok(a), Ok(b)) => (a, b),
        _ => {
            let show = |c: &Column| {
                c.as_ref()
                    .map_or_else(|e| refusal(e), |_| "accepted".into())
            };
            return vec![format!(
                "{label}: model {} but kernel {}",
                show(model),
                show(kernel)
            )];
        }
    };
    let mut out = Vec::new();
    let floor = declared_pages(w) * MIGRATION_NOISE;
    let nonzero = |r: &RunRecord, what: &str| match what {
        "memcg:numa_pages_migrated" => memcg(r, "numa_pages_migrated").unwrap_or(0.0) > floor,
        // thp_migration_success counts huge pages: in base pages.
        _ => (r.vm(what) * HPAGE_PMD_NR) as f64 > floor,
    };
    for what in ["memcg:numa_pages_migrated", "thp_migration_success"] {
        let (a, b) = (nonzero(mr, what), nonzero(kr, what));
        if a != b {
            let say = |x: bool| if x { "some" } else { "none" };
            out.push(format!(
                "{label}: {what}: model {} but kernel {}",
                say(a),
                say(b)
            ));
        }
    }
    let th = measured_threads(w);
    let (sm, sk) = (local_shares(mr, m, &th), local_shares(kr, m, &th));
    let (am, ak) = (last_common_time(&sm), last_common_time(&sk));
    for (i, t) in th.iter().enumerate() {
        if let (Some(a), Some(b)) = (final_share(&sm[i], am), final_share(&sk[i], ak)) {
            if (a - b).abs() > SHARE_AGREEMENT {
                out.push(format!(
                    "{label}: {} final local share: model {:.0}% but kernel {:.0}%",
                    t.thread,
                    a * 100.0,
                    b * 100.0
                ));
            }
        }
    }
    out
}

/// `numalab validate --kernel-patch`.
pub fn validate_ab(o: &Options, m: &Machine, scenarios: &[Scenario]) -> Result<(), Failure> {
    numalab_real::vm::qemu::check_vm_machine(m).map_err(numalab_real::RealError::Refused)?;
    let (stock, patched) = crate::vm_kernel::pair(
        &o.kernel_patch,
        o.fuzz,
        o.vm.verbose,
        (o.vm.kernel.as_deref(), o.vm.kernel_image.as_deref()),
    )?;
    let patched_k = Stock::Image(patched.bzimage.clone());
    let mut patched_set = o.model_set.clone();
    patched_set.extend(o.patched_set.iter().cloned());
    let tmp = std::env::temp_dir().join(format!("numalab-validate-ab-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut problems = 0.0;
    let mut text_all = String::new();
    let mut disagree: Vec<String> = Vec::new();
    for s in scenarios {
        let w = resolve(s, m, o.seed, o.scale)?;
        let ms = run_model(&w, m, o.seed, o.scale, &o.model_set);
        let mp = run_model(&w, m, o.seed, o.scale, &patched_set);
        let ks = guest(s, m, o, &tmp, &stock);
        let kp = guest(s, m, o, &tmp, &patched_k);
        if let Some(d) = &o.json_dir {
            std::fs::create_dir_all(d).map_err(|e| format!("--json-dir {d}: {e}"))?;
            for (suffix, c) in [
                ("model", &ms),
                ("model-patched", &mp),
                ("kernel", &ks),
                ("kernel-patched", &kp),
            ] {
                if let Ok(r) = c {
                    let p: PathBuf = Path::new(d).join(format!("{}.{suffix}.json", s.name));
                    out::write_file("--json-dir", &p, &r.to_json())?;
                }
            }
        }
        for r in [&ks, &kp].into_iter().flatten() {
            problems += r.lab.get(lab::VM_CONSOLE_PROBLEMS).unwrap_or(0.0);
        }
        let mut text = String::new();
        for (label, mr, kr) in [("stock", &ms, &ks), ("patched", &mp, &kp)] {
            if mr.is_ok() || kr.is_ok() {
                let (t, _) = table(
                    &format!("{} [{label}]", s.name),
                    &w,
                    m,
                    mr.as_ref().ok(),
                    kr.as_ref().ok(),
                );
                text.push_str(&t);
                text.push('\n');
            }
        }
        let sum = summary(
            s.name,
            &w,
            m,
            &[
                ("kernel stock", &ks),
                ("kernel patched", &kp),
                ("model stock", &ms),
                ("model patched", &mp),
            ],
        );
        text.push_str(&sum);
        if o.check {
            for (label, mr, kr) in [("stock", &ms, &ks), ("patched", &mp, &kp)] {
                for d in disagreements(label, &w, m, mr, kr) {
                    disagree.push(format!("{}: {d}", s.name));
                }
            }
        }
        text.push('\n');
        out::print(&text)?;
        text_all.push_str(&sum);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let _ = writeln!(
        text_all,
        "stock: {}\npatched: {} ({})",
        stock.describe(),
        patched.bzimage.display(),
        o.kernel_patch.join(" ")
    );
    out::print(&format!("== all scenarios\n{text_all}"))?;
    if o.check {
        let mut t = String::from("== --check: model vs kernel, stock and patched\n");
        for d in &disagree {
            let _ = writeln!(t, "FAIL {d}");
        }
        let _ = writeln!(
            t,
            "{} scenario(s), {} disagreement(s)",
            scenarios.len(),
            disagree.len()
        );
        out::print(&t)?;
    }
    if problems > 0.0 {
        return Err(Failure {
            message: format!("{problems:.0} kernel problem line(s) on the guest consoles (BUG:/Oops/WARNING:/Call Trace)"),
            code: 1,
            detail: None,
        });
    }
    if !disagree.is_empty() {
        return Err(Failure {
            message: format!(
                "--check: the model and the kernel disagree in {} place(s) (listed above)",
                disagree.len()
            ),
            code: 1,
            detail: None,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_show_einval_and_rows_cover_every_column() {
        assert_eq!(
            refusal("in the guest: set_mempolicy interleave: EINVAL (Invalid argument)"),
            "EINVAL"
        );
        assert_eq!(refusal("the guest did not finish"), "failed");
        let m = crate::validate::machine(None).unwrap();
        let s =
            crate::validate::pick(&["p3-interleave-4k".to_string()], "guest-4n", false).unwrap()[0];
        let w = resolve(&s, &m, 1, 0.05).unwrap();
        let rec = run_model(
            &w,
            &m,
            1,
            0.05,
            &["numalab.interleave_numa_balancing=on".to_string()],
        );
        let refused: Column = Err("mbind: EINVAL".into());
        let txt = summary("x", &w, &m, &[("a", &refused), ("b", &rec)]);
        assert!(txt.contains("EINVAL"), "{txt}");
        assert!(txt.contains("worker final local"), "{txt}");
    }

    #[test]
    fn check_finds_a_thread_left_behind_and_a_refusal_on_one_side_only() {
        let m = crate::validate::machine(None).unwrap();
        let s = crate::validate::pick(&["pinned-4k".to_string()], "guest-4n", false).unwrap()[0];
        let w = resolve(&s, &m, 1, 0.5).unwrap();
        let stock = run_model(&w, &m, 1, 0.5, &[]);
        // As posted, proposal 3 skips every migration to node 1, so the
        // worker there keeps its chunk remote: a "kernel" that behaved
        // like mainline disagrees on that thread only.
        let posted = run_model(
            &w,
            &m,
            1,
            0.5,
            &["numalab.interleave_numa_balancing=as-posted".to_string()],
        );
        assert!(disagreements("stock", &w, &m, &stock, &stock).is_empty());
        let d = disagreements("patched", &w, &m, &posted, &stock);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].contains("worker.1"), "{d:?}");
        let refused: Column = Err("mbind: EINVAL".into());
        assert!(disagreements("stock", &w, &m, &refused, &refused).is_empty());
        let d = disagreements("stock", &w, &m, &refused, &stock);
        assert!(d[0].contains("model EINVAL but kernel accepted"), "{d:?}");
    }

    #[test]
    fn a_few_pages_outside_the_regions_are_not_a_migration() {
        let m = crate::validate::machine(None).unwrap();
        let s =
            crate::validate::pick(&["p3-interleave-4k".to_string()], "guest-4n", false).unwrap()[0];
        let w = resolve(&s, &m, 1, 0.05).unwrap();
        let on = ["numalab.interleave_numa_balancing=on".to_string()];
        let model = run_model(&w, &m, 1, 0.05, &on).unwrap();
        assert_eq!(memcg(&model, "numa_pages_migrated"), Some(0.0));
        let kernel_moving = |pages: u64| -> Column {
            let mut k = model.clone();
            let root = k.cgroups.get_mut("/").unwrap();
            root.memory_stat.insert("numa_pages_migrated".into(), pages);
            Ok(k)
        };
        let model: Column = Ok(model.clone());
        // Half the noise floor stands for the runner's own memory; a
        // quarter of the table is what a region that migrates moves.
        let pages = declared_pages(&w);
        assert!(pages >= 800.0, "{pages}");
        let few = (pages * MIGRATION_NOISE / 2.0) as u64;
        assert!(disagreements("patched", &w, &m, &model, &kernel_moving(few)).is_empty());
        let d = disagreements("patched", &w, &m, &model, &kernel_moving(pages as u64 / 4));
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].contains("numa_pages_migrated: model none but kernel some"),
            "{d:?}"
        );
    }
}
