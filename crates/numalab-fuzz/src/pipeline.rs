//! One fuzz case through the whole model pipeline, and what became of it.
//!
//! [`Case::new`] turns a seed into a mutated machine text, a mutated
//! workload text (at least one of the two changed), a few `--set` knobs, a
//! run seed and a small `--scale`. [`run_case`] then loads the machine,
//! parses and resolves the workload, checks the harness's size bounds
//! ([`Limits`]), builds the `Sim` and runs it with the workload's duration
//! capped, inside `catch_unwind`, and classifies the end as an
//! [`Outcome`].
//!
//! How a case's work is bounded before the engine has its own guard: the
//! modeled time is capped ([`Limits::cap_ns`], a few dozen ticks), so a
//! machine that makes every task crawl (`node_gbps = 1e-300`) costs a few
//! ticks, not 24 modeled hours of them; and the sizes that set the work of
//! one tick, or that the engine walks without advancing time, are bounded
//! before the run: CPUs, nodes, tasks, cgroups, bytes of regions, and the
//! phase steps a thread can take within the cap (a `repeat` whose body
//! takes no modeled time, e.g. `repeat = 1e18, body = [{ compute = "0" }]`,
//! is counted in full). A case beyond them is "refused by harness", not
//! run. Left out: a wall-clock timeout (it would make the counts depend on
//! the machine the fuzzer runs on).

use crate::cli;
use crate::mutate::{mutate, mutate_numbers, Lang};
use numalab_record::RunRecord;
use numalab_sim::engine::RunStats;
use numalab_sim::{Knobs, RunOptions, Sim, SimError};
use numalab_topology::Machine;
use numalab_workload::{Phase, Workload};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The harness's bounds on one case's work (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Modeled time a run may last, ns; the workload's duration is capped
    /// to it.
    pub cap_ns: u64,
    /// Most CPUs of the machine.
    pub max_cpus: usize,
    /// Most nodes of the machine.
    pub max_nodes: usize,
    /// Most threads of the workload, all processes.
    pub max_tasks: usize,
    /// Most cgroups of the workload.
    pub max_cgroups: usize,
    /// Most bytes of the workload's regions, all processes.
    pub max_bytes: u64,
    /// Most phase steps all threads can take within `cap_ns`.
    pub max_steps: u64,
}

impl Limits {
    /// The test suite's: small enough that a case takes milliseconds.
    pub const SUITE: Limits = Limits {
        cap_ns: 40_000_000,
        max_cpus: 64,
        max_nodes: 16,
        max_tasks: 256,
        max_cgroups: 32,
        max_bytes: 1 << 30,
        max_steps: 1_000_000,
    };
    /// The developers' long run: every preset machine fits.
    pub const LONG: Limits = Limits {
        cap_ns: 100_000_000,
        max_cpus: 512,
        max_nodes: 64,
        max_tasks: 1024,
        max_cgroups: 256,
        max_bytes: 4 << 30,
        max_steps: 10_000_000,
    };
}

/// One fuzz case: everything needed to run (and reproduce) it.
#[derive(Clone, Debug)]
pub struct Case {
    /// The seed it was made from.
    pub seed: u64,
    /// Machine preset the machine text started from.
    pub machine_base: &'static str,
    /// Machine spec text (mutated or not).
    pub machine_text: String,
    /// Workload preset the workload text started from.
    pub workload_base: &'static str,
    /// Workload spec text (mutated or not).
    pub workload_text: String,
    /// `--set` arguments.
    pub sets: Vec<String>,
    /// `--seed` of the run.
    pub run_seed: u64,
    /// `--scale` of the run.
    pub scale: f64,
}

/// Small machines, so most workload mutations run fast.
const SMALL_MACHINES: &[&str] = &["tiny-2n", "4s-48"];

impl Case {
    /// The case of `seed`: a preset machine and workload, at least one of
    /// them mutated with 1 to 4 hostile edits (mostly 1).
    pub fn new(seed: u64) -> Case {
        let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x6675_7a7a);
        let machines: Vec<&'static str> = numalab_topology::presets::list()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let workloads: Vec<&'static str> = numalab_workload::presets::list()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        // 0: machine only, 1: workload only, 2: both.
        let what = rng.gen_range(0..6) % 3;
        let machine_base = if what == 1 {
            SMALL_MACHINES
                .choose(&mut rng)
                .copied()
                .unwrap_or("tiny-2n")
        } else {
            machines.choose(&mut rng).copied().unwrap_or("tiny-2n")
        };
        let workload_base = workloads.choose(&mut rng).copied().unwrap_or("numa01");
        let mut machine_text = numalab_topology::presets::preset_toml(machine_base)
            .unwrap_or("")
            .to_string();
        let mut workload_text = numalab_workload::presets::text(workload_base)
            .unwrap_or("")
            .to_string();
        // Mostly one edit, so most cases get past the checks into the model.
        let edits = |rng: &mut Pcg64Mcg| *[1, 1, 1, 2, 2, 3, 4].choose(rng).unwrap_or(&1);
        // A third of the cases edit numbers only, plausibly but to
        // extremes: those get past the type checks into the model.
        let numbers = rng.gen_ratio(1, 3);
        let edit = |text: &str, lang: Lang, rng: &mut Pcg64Mcg| {
            let n = edits(rng);
            if numbers {
                mutate_numbers(text, n, rng)
            } else {
                mutate(text, lang, n, rng)
            }
        };
        if what != 1 {
            machine_text = edit(&machine_text, Lang::Machine, &mut rng);
        }
        if what != 0 {
            workload_text = edit(&workload_text, Lang::Workload, &mut rng);
        }
        let sets = if rng.gen_ratio(1, 4) {
            (0..rng.gen_range(1..=2))
                .map(|_| cli::random_set(&mut rng))
                .collect()
        } else {
            Vec::new()
        };
        // Proposal 3's flagged-interleave presets are EINVAL without its
        // switch (as mainline refuses the policy): give them the switch, as
        // their reproductions do, so they reach the model.
        let mut sets = sets;
        if workload_base.starts_with("numa01-threadlocal-interleave")
            || workload_base.starts_with("interleave-")
        {
            sets.insert(0, "numalab.interleave_numa_balancing=on".to_string());
        }
        let run_seed = rng.gen_range(0..4);
        let scale = *[0.001, 0.005, 0.01, 0.02].choose(&mut rng).unwrap_or(&0.01);
        Case {
            seed,
            machine_base,
            machine_text,
            workload_base,
            workload_text,
            sets,
            run_seed,
            scale,
        }
    }

    /// The case written out so it can be re-run by hand: the two spec
    /// files and the `numalab run` command line.
    pub fn reproducer(&self) -> String {
        let sets: String = self.sets.iter().map(|s| format!(" --set '{s}'")).collect();
        format!(
            "fuzz case seed {} (machine from {}, workload from {})\n\
             --- machine.toml ---\n{}\n--- workload.toml ---\n{}\n---\n\
             numalab run --machine machine.toml --workload workload.toml --seed {} --scale {}{sets}\n\
             (the harness also caps the modeled duration; `cargo run -p xtask -- fuzz 1 --seed {}` re-runs it)",
            self.seed,
            self.machine_base,
            self.workload_base,
            self.machine_text,
            self.workload_text,
            self.run_seed,
            self.scale,
            self.seed,
        )
    }
}

/// Where in the pipeline a clear error came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Loading the machine spec.
    Machine,
    /// `--set` knobs.
    Knobs,
    /// Parsing the workload spec.
    Parse,
    /// Resolving it on the machine.
    Resolve,
    /// Building the `Sim` (the kernel's refusals: cgroups, policies, memory).
    Setup,
    /// Running it.
    Run,
}

/// What became of a case.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The run finished with a Run record.
    Result,
    /// One clear error line.
    ClearError {
        /// Where.
        stage: Stage,
        /// The message.
        message: String,
    },
    /// An error message that is empty or more than one line.
    UnclearError {
        /// Where.
        stage: Stage,
        /// The message.
        message: String,
    },
    /// The engine stopped a runaway run (its time or work budget).
    BudgetStop {
        /// The message.
        message: String,
    },
    /// The model found one of its own invariants broken (a numalab bug).
    Invariant {
        /// The message.
        message: String,
    },
    /// Something panicked (a numalab bug).
    Panic {
        /// The panic's message.
        message: String,
    },
    /// The harness did not run it: beyond [`Limits`].
    Refused {
        /// Which bound.
        why: String,
    },
}

impl Outcome {
    /// True for what the fuzzer exists to find: panics, broken invariants,
    /// unclear errors, runs that broke the work bound.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Outcome::Panic { .. } | Outcome::Invariant { .. } | Outcome::UnclearError { .. }
        )
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Result => write!(f, "result"),
            Outcome::ClearError { stage, message } => write!(f, "error at {stage:?}: {message}"),
            Outcome::UnclearError { stage, message } => {
                write!(f, "UNCLEAR error at {stage:?}: {message:?}")
            }
            Outcome::BudgetStop { message } => write!(f, "budget stop: {message}"),
            Outcome::Invariant { message } => write!(f, "INVARIANT: {message}"),
            Outcome::Panic { message } => write!(f, "PANIC: {message}"),
            Outcome::Refused { why } => write!(f, "refused by harness: {why}"),
        }
    }
}

fn error(stage: Stage, message: String) -> Outcome {
    if message.trim().is_empty() || message.contains('\n') {
        Outcome::UnclearError { stage, message }
    } else {
        Outcome::ClearError { stage, message }
    }
}

/// Whether `e` is the engine stopping a runaway run rather than refusing
/// the input or breaking: its step budget (`SimError::Runaway`) or the
/// 24-hour virtual-time limit.
pub fn is_budget_stop(e: &SimError) -> bool {
    matches!(e, SimError::TooLong(_) | SimError::Runaway(_))
}

/// The engine-work check of one run that ended (the issue's "within a
/// bounded step count"): a run that returned a record took no more engine
/// steps than its budget allows for the whole run
/// (`StepBudget::max_steps`), and stopped
/// within the modeled time the harness allowed.
pub fn check_engine_work(
    run: &Result<(RunRecord, RunStats), SimError>,
    limits: &Limits,
) -> Result<(), String> {
    match run {
        Ok((rec, stats)) => {
            let max = stats.budget.max_steps();
            if stats.steps > max {
                return Err(format!(
                    "the run took {} engine steps, over its budget of {max}",
                    stats.steps
                ));
            }
            let cap_s = limits.cap_ns as f64 / 1e9;
            if rec.elapsed_s <= cap_s * (1.0 + 1e-9) {
                Ok(())
            } else {
                Err(format!(
                    "the run lasted {} s of modeled time, beyond the harness's cap of {cap_s} s",
                    rec.elapsed_s
                ))
            }
        }
        Err(_) => Ok(()),
    }
}

/// Upper bound on the phase steps (`next_phase` turns) one thread takes
/// within `cap_ns`, and a lower bound on the modeled ns its phases take.
/// Compute runs at most `speed` times faster than its nominal ns.
fn steps(phases: &[Phase], cap_ns: f64, speed: f64) -> (f64, f64) {
    let mut n = 0.0;
    let mut ns = 0.0;
    for p in phases {
        let (pn, pns) = match p {
            Phase::Repeat { times, body, .. } => {
                let (bn, bns) = steps(body, cap_ns, speed);
                let times = *times as f64;
                let iters = if bns > 0.0 {
                    times.min(cap_ns / bns + 1.0)
                } else {
                    times
                };
                (iters * (bn + 1.0) + 1.0, times * bns)
            }
            Phase::Compute { ns } => (1.0, *ns as f64 / speed),
            Phase::Sleep { ns } => (1.0, *ns as f64),
            _ => (1.0, 0.0),
        };
        n += pn;
        ns += pns;
    }
    (n, ns)
}

/// Why the harness will not run `w` on `m` within `limits`, if it will not.
pub fn beyond_limits(m: &Machine, w: &Workload, limits: &Limits) -> Option<String> {
    if m.nr_cpus() > limits.max_cpus {
        return Some(format!("{} CPUs > {}", m.nr_cpus(), limits.max_cpus));
    }
    if m.nr_nodes() > limits.max_nodes {
        return Some(format!("{} nodes > {}", m.nr_nodes(), limits.max_nodes));
    }
    if w.cgroups.len() > limits.max_cgroups {
        return Some(format!(
            "{} cgroups > {}",
            w.cgroups.len(),
            limits.max_cgroups
        ));
    }
    let tasks: usize = w.processes.iter().map(|p| p.threads.len()).sum();
    if tasks > limits.max_tasks {
        return Some(format!("{tasks} threads > {}", limits.max_tasks));
    }
    let bytes = w
        .processes
        .iter()
        .flat_map(|p| &p.regions)
        .fold(0u64, |a, r| a.saturating_add(r.bytes));
    if bytes > limits.max_bytes {
        return Some(format!("{bytes} bytes of regions > {}", limits.max_bytes));
    }
    let speed = m.bandwidth.smt_throughput.max(1.0);
    let total: f64 = w
        .processes
        .iter()
        .flat_map(|p| &p.threads)
        .map(|t| steps(&t.phases, limits.cap_ns as f64, speed).0)
        .sum();
    if total > limits.max_steps as f64 {
        return Some(format!("{total:.3e} phase steps > {}", limits.max_steps));
    }
    None
}

/// The pipeline without the panic catching.
fn pipeline(case: &Case, limits: &Limits) -> Outcome {
    let m = match numalab_topology::spec::parse_machine(&case.machine_text, "fuzz-machine.toml") {
        Ok(m) => m,
        Err(e) => return error(Stage::Machine, e.to_string()),
    };
    let knobs = match Knobs::from_sets(&case.sets) {
        Ok(k) => k,
        Err(e) => return error(Stage::Knobs, e),
    };
    let spec = match numalab_workload::spec::parse(&case.workload_text, "fuzz-workload.toml") {
        Ok(s) => s,
        Err(e) => return error(Stage::Parse, e.to_string()),
    };
    if m.nr_cpus() > limits.max_cpus || m.nr_nodes() > limits.max_nodes {
        // Resolving on a huge machine is itself big work (a thread per CPU).
        return Outcome::Refused {
            why: format!("machine of {} CPUs, {} nodes", m.nr_cpus(), m.nr_nodes()),
        };
    }
    let mut w = match numalab_workload::spec::resolve(&spec, &m, case.run_seed, case.scale) {
        Ok(w) => w,
        Err(e) => return error(Stage::Resolve, e.to_string()),
    };
    if let Some(why) = beyond_limits(&m, &w, limits) {
        return Outcome::Refused { why };
    }
    w.duration_ns = Some(
        w.duration_ns
            .map_or(limits.cap_ns, |d| d.min(limits.cap_ns)),
    );
    // The model's invariants are checked at every tick (a run is a few
    // dozen ticks), and one case in four records a trace, so those paths
    // are fuzzed too.
    let opts = RunOptions {
        seed: case.run_seed,
        scale: case.scale,
        trace: case.seed.is_multiple_of(4),
        check_every: 1,
    };
    let sim = match Sim::new(m, w, knobs, opts) {
        Ok(s) => s,
        Err(e) if is_budget_stop(&e) => {
            return Outcome::BudgetStop {
                message: e.to_string(),
            }
        }
        Err(SimError::Invariant(message)) => return Outcome::Invariant { message },
        Err(e) => return error(Stage::Setup, e.to_string()),
    };
    let run = sim
        .run_with_stats(&mut |_| {})
        .map(|(rec, _, stats)| (rec, stats));
    if let Err(message) = check_engine_work(&run, limits) {
        return Outcome::Invariant { message };
    }
    match run {
        Ok(_) => Outcome::Result,
        Err(e) if is_budget_stop(&e) => Outcome::BudgetStop {
            message: e.to_string(),
        },
        Err(SimError::Invariant(message)) => Outcome::Invariant { message },
        Err(e) => error(Stage::Run, e.to_string()),
    }
}

thread_local! {
    /// The last panic's message and place on this thread, kept by the hook
    /// [`quiet_panics`] installs.
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Replaces the panic hook with one that prints nothing and keeps the
/// message and place for [`run_case`]'s report: for the long fuzz command,
/// where panics are counted, not shown as they happen. Not for tests (the
/// hook is process-wide).
pub fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = payload_text(info.payload());
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{place}")));
    }));
}

fn payload_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// Runs `case` through the pipeline within `limits`, a panic caught and
/// classified like any other end.
pub fn run_case(case: &Case, limits: &Limits) -> Outcome {
    LAST_PANIC.with(|p| p.borrow_mut().take());
    match catch_unwind(AssertUnwindSafe(|| pipeline(case, limits))) {
        Ok(o) => o,
        Err(payload) => Outcome::Panic {
            message: LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| payload_text(payload.as_ref())),
        },
    }
}

/// Tallies of many cases.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Cases tried.
    pub tried: u64,
    /// Runs that finished with a record.
    pub results: u64,
    /// Clear errors, by stage.
    pub clear_errors: BTreeMap<String, u64>,
    /// Budget stops.
    pub budget_stops: u64,
    /// Refused by the harness.
    pub refused: u64,
    /// Panics.
    pub panics: u64,
    /// Broken invariants.
    pub invariants: u64,
    /// Unclear errors.
    pub unclear: u64,
}

impl Counts {
    /// Counts one outcome.
    pub fn add(&mut self, o: &Outcome) {
        self.tried += 1;
        match o {
            Outcome::Result => self.results += 1,
            Outcome::ClearError { stage, .. } => {
                *self.clear_errors.entry(format!("{stage:?}")).or_default() += 1
            }
            Outcome::UnclearError { .. } => self.unclear += 1,
            Outcome::BudgetStop { .. } => self.budget_stops += 1,
            Outcome::Invariant { .. } => self.invariants += 1,
            Outcome::Panic { .. } => self.panics += 1,
            Outcome::Refused { .. } => self.refused += 1,
        }
    }

    /// Adds another tally into this one.
    pub fn merge(&mut self, o: &Counts) {
        self.tried += o.tried;
        self.results += o.results;
        for (k, v) in &o.clear_errors {
            *self.clear_errors.entry(k.clone()).or_default() += v;
        }
        self.budget_stops += o.budget_stops;
        self.refused += o.refused;
        self.panics += o.panics;
        self.invariants += o.invariants;
        self.unclear += o.unclear;
    }

    /// Failures (panics, broken invariants, unclear errors).
    pub fn failures(&self) -> u64 {
        self.panics + self.invariants + self.unclear
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors: u64 = self.clear_errors.values().sum();
        let by: Vec<String> = self
            .clear_errors
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(f, "specs tried        {}", self.tried)?;
        writeln!(f, "results            {}", self.results)?;
        writeln!(f, "clear errors       {errors} ({})", by.join(", "))?;
        writeln!(f, "panics             {}", self.panics)?;
        writeln!(f, "budget stops       {}", self.budget_stops)?;
        writeln!(f, "refused by harness {}", self.refused)?;
        writeln!(f, "invariant breaks   {}", self.invariants)?;
        write!(f, "unclear errors     {}", self.unclear)
    }
}
