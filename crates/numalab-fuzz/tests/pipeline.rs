//! The mutation fuzzer in the test suite: seeded cases of mutated preset
//! machines and workloads through the whole model pipeline (load, parse,
//! resolve, build, run with the modeled time capped), asserting a result or
//! one clear error, never a panic, a broken invariant or an unbounded run.
//!
//! Deterministic: the proptest runner has a fixed RNG seed (it does not
//! read PROPTEST_RNG_SEED or persist failures), so every run of the suite
//! tries the same cases. Work per case is bounded by
//! `numalab_fuzz::Limits::SUITE` (see numalab_fuzz::pipeline); the whole
//! file takes a few seconds. The developers' long run is
//! `cargo run --profile test -p xtask -- fuzz N`.

use numalab_fuzz::{run_case, Case, Counts, Limits, Outcome};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::sync::Mutex;

/// Cases per run of the suite.
const CASES: u32 = 2000;

fn runner() -> TestRunner {
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        // A failing case is reported by its seed and text, which reproduce
        // it; shrinking a seed finds nothing smaller.
        max_shrink_iters: 0,
        ..Config::default()
    };
    TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &[0x18; 32]),
    )
}

#[test]
fn mutated_presets_give_a_result_or_one_clear_error() {
    let counts = Mutex::new(Counts::default());
    let result = runner().run(&proptest::num::u64::ANY, |seed| {
        let case = Case::new(seed);
        let o = run_case(&case, &Limits::SUITE);
        if let Ok(mut c) = counts.lock() {
            c.add(&o);
        }
        if o.is_failure() {
            return Err(TestCaseError::fail(format!("{o}\n{}", case.reproducer())));
        }
        Ok(())
    });
    let counts = counts.into_inner().unwrap_or_default();
    println!("{counts}");
    if let Err(e) = result {
        panic!("{e}");
    }
    // The fuzzer must reach the model, not only the parsers: some cases
    // run to a result, and the harness refuses few.
    assert!(counts.results >= u64::from(CASES) / 10, "{counts}");
    assert!(counts.refused <= u64::from(CASES) / 3, "{counts}");
}

/// The two machines the first fuzzer found grinding for minutes end within
/// the harness's modeled-time cap, with a result or a clear error.
#[test]
fn tiny_bandwidth_machines_end() {
    let base = numalab_topology::presets::preset_toml("tiny-2n").unwrap_or("");
    for v in ["1e-300", "0.0000001"] {
        let mut t: toml::Table = base.parse().unwrap_or_default();
        if let Some(toml::Value::Table(bw)) = t.get_mut("bandwidth") {
            bw.insert(
                "node_gbps".into(),
                toml::Value::Float(v.parse().unwrap_or(0.0)),
            );
        }
        let case = Case {
            seed: 0,
            machine_base: "tiny-2n",
            machine_text: toml::to_string(&t).unwrap_or_default(),
            workload_base: "numa01",
            workload_text: numalab_workload::presets::text("numa01")
                .unwrap_or("")
                .into(),
            sets: Vec::new(),
            run_seed: 1,
            scale: 0.01,
        };
        let o = run_case(&case, &Limits::SUITE);
        assert!(
            matches!(
                o,
                Outcome::Result | Outcome::ClearError { .. } | Outcome::BudgetStop { .. }
            ),
            "node_gbps = {v}: {o}"
        );
    }
}

/// A repeat whose body takes no modeled time would loop inside one tick
/// for ever; the harness counts its steps in full and refuses it.
#[test]
fn zero_time_repeats_are_refused_by_the_harness() {
    let case = Case {
        seed: 0,
        machine_base: "tiny-2n",
        machine_text: numalab_topology::presets::preset_toml("tiny-2n")
            .unwrap_or("")
            .into(),
        workload_base: "-",
        workload_text:
            "name = \"spin\"\n[[process]]\nname = \"p\"\n[[process.thread]]\nname = \"t\"\n\
                        phases = [{ repeat = 1_000_000_000, body = [{ compute = \"0\" }] }]\n"
                .into(),
        sets: Vec::new(),
        run_seed: 1,
        scale: 1.0,
    };
    let o = run_case(&case, &Limits::SUITE);
    assert!(matches!(o, Outcome::Refused { .. }), "{o}");
}

/// Regression (fuzz seed 101916): an asymmetric SLIT matrix, which
/// docs/machines.md allows, gives CPUs domain stacks of different depths,
/// and placing a forked task indexed the new CPU's stack at the old CPU's
/// level: index out of bounds in `select_task_rq_fork`.
#[test]
fn asymmetric_distances_place_forked_tasks() {
    let base = numalab_topology::presets::preset_toml("4s-48").unwrap_or("");
    let machine_text = base.replacen("[10, 21, 21, 21],", "[10, 22, 20, 21],", 1);
    assert_ne!(machine_text, base);
    for w in ["numa01", "oltp"] {
        let case = Case {
            seed: 101916,
            machine_base: "4s-48",
            machine_text: machine_text.clone(),
            workload_base: w,
            workload_text: numalab_workload::presets::text(w).unwrap_or("").into(),
            sets: Vec::new(),
            run_seed: 1,
            scale: 0.01,
        };
        let o = run_case(&case, &Limits::SUITE);
        assert_eq!(o, Outcome::Result, "{w}: {o}");
    }
}
