//! Argument definitions and the subcommands.

use crate::failure::Failure;
use crate::{bench, out, parallel, real, reproduce, runner, validate, vm_kernel};
use clap::{Args, CommandFactory, Parser, Subcommand};
use numalab_record::RunSet;
use std::io::Read;
use std::path::Path;

/// A laboratory for Linux automatic NUMA balancing.
#[derive(Parser, Debug)]
#[command(name = "numalab", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Progress on stderr for commands that run longer than 2 s: a status
    /// line on a terminal, a plain line every 5 s otherwise (CI logs,
    /// nohup). The default; overrides an earlier --no-progress.
    #[arg(long, global = true, overrides_with = "no_progress")]
    progress: bool,
    /// No progress on stderr (warnings still show).
    #[arg(long, global = true, overrides_with = "progress")]
    no_progress: bool,
}

/// `--seeds DIR`, shared by the commands that build the project's patch
/// series (`vm kernel build --series`, `validate --series`).
#[derive(clap::Args, Debug)]
struct SeedsDir {
    /// Where the series' seeds (NNN_*.txt postings) are.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "../shared/seeds",
        requires = "series"
    )]
    seeds: String,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a workload on a modeled machine.
    Run {
        /// Machine preset or TOML spec file.
        #[arg(long, short)]
        machine: String,
        /// Workload preset or TOML spec file (repeat to run several).
        #[arg(long, short, required = true)]
        workload: Vec<String>,
        /// Kernel knob by its real name, KEY=VALUE; or CGROUP:FILE=VALUE.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// PRNG seed (iterations use seed, seed+1, ...).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Run each workload this many times with successive seeds.
        #[arg(long, default_value_t = 1)]
        iterations: u32,
        /// Write the Run JSON here ("-" for stdout, then nothing else goes
        /// there). Several runs make a RunSet. The summary still prints.
        #[arg(long)]
        json: Option<String>,
        /// Label of the RunSet (a compare column); default: the settings.
        #[arg(long)]
        label: Option<String>,
        /// Shrink memory and passes by this factor, keeping the shape.
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Indent the JSON (default compact: a RunSet stays under 1 MB a
        /// full-scale run).
        #[arg(long, requires = "json")]
        json_pretty: bool,
        /// Write trace events (ftrace text format) to this file.
        #[arg(long)]
        trace: Option<String>,
        /// Only these events, comma-separated (default all the model has;
        /// see docs/model.md).
        #[arg(long, value_name = "A,B", requires = "trace")]
        trace_events: Option<String>,
        /// Only events in this window of virtual time, seconds FROM..TO
        /// (either side may be empty).
        #[arg(long, value_name = "FROM..TO", requires = "trace")]
        trace_window: Option<String>,
        /// Runs at once for --iterations and several workloads (default:
        /// all cores); output is the same for any value
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
    },
    /// Read an ftrace text file (a model's `run --trace` or a real
    /// kernel's `real run --trace`) and print events per name and task.
    Trace {
        /// The trace file.
        file: String,
        /// Only these events, comma-separated.
        #[arg(long, value_name = "A,B")]
        events: Option<String>,
        /// Only events in this window, seconds FROM..TO.
        #[arg(long, value_name = "FROM..TO")]
        window: Option<String>,
    },
    /// List presets, knobs and NUMA balancing policies.
    List {
        /// machines, workloads, reproductions, knobs or policies.
        what: String,
    },
    /// Print the JSON Schema of the Run or RunSet format.
    Schema {
        /// run or runset.
        what: String,
    },
    /// Machine specs: import a real host's topology, or show a preset.
    Machine {
        #[command(subcommand)]
        cmd: MachineCmd,
    },
    /// Print the mmtests compare-kernels table of Run/RunSet JSON files.
    Compare {
        /// Run or RunSet JSON files, one column each; the first is the base.
        #[arg(required = true)]
        files: Vec<String>,
        /// Also print this cgroup's memory.stat NUMA counters per column.
        #[arg(long)]
        cgroup: Option<String>,
        /// Print one CSV line per run instead.
        #[arg(long)]
        csv: bool,
        /// Compare runs of different machines, workloads or scales (with a
        /// warning) instead of refusing.
        #[arg(long)]
        force: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish,
    /// powershell) on stdout.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff) on stdout: numalab(1), or a subcommand's
    /// (`numalab man run`, `numalab man machine import`); `| man -l -`
    /// shows it.
    Man {
        /// The subcommand whose page to print (default numalab(1)).
        subcommand: Vec<String>,
        /// Write every page (numalab.1, numalab-run.1, ...) into this
        /// directory instead (created).
        #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
        out: Option<String>,
    },
    /// Run a sweep file (a grid or list over knobs, workloads, machines
    /// and seeds) on all cores; resumes where a previous run stopped.
    #[command(after_help = crate::sweep::FORMAT_HELP)]
    Sweep {
        /// The sweep TOML file.
        file: String,
        /// Output directory (default NAME.sweep).
        #[arg(long, short)]
        out: Option<String>,
        /// Parallel runs (default: all cores).
        #[arg(long, short)]
        jobs: Option<usize>,
    },
    /// Draw figures of Run or RunSet JSON files (PNG and SVG): memory per
    /// node, local share, activity, each task's node, and a compare chart
    /// for several files.
    Plot {
        /// Run or RunSet JSON files.
        #[arg(required = true)]
        files: Vec<String>,
        /// Output directory (created).
        #[arg(long, short)]
        out: String,
        /// Formats, comma-separated: png, svg.
        #[arg(long, default_value = "png,svg")]
        format: String,
    },
    /// Run a published experiment and print modeled beside published,
    /// with a verdict per figure; `all` runs every one in parallel and
    /// ends with a summary table.
    Reproduce {
        /// Reproduction name (see `numalab list reproductions`), or `all`.
        name: String,
        /// Shrink memory and passes (1 = as published).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Iterations (seeds) per configuration (default: the
        /// reproduction's, as `list reproductions` shows).
        #[arg(long)]
        iterations: Option<u32>,
        /// First seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write each configuration's RunSet JSON into this directory.
        #[arg(long)]
        json_dir: Option<String>,
        /// Exit 1 when a published figure misses its tolerance and is not
        /// declared a known miss.
        #[arg(long)]
        check: bool,
        /// Runs at once (default: the available cores); the output does
        /// not depend on it.
        #[arg(short = 'j', long)]
        jobs: Option<usize>,
        /// Draw each run's figures and the compare chart into this
        /// directory (PNG and SVG).
        #[arg(long)]
        plots: Option<String>,
        /// Write the report as one self-contained HTML page, DIR/index.html
        /// (as `numalab report` does).
        #[arg(long, value_name = "DIR")]
        html: Option<String>,
        /// A knob set in every configuration after its own, e.g.
        /// numalab.task_group=cgroups (repeatable): the published figures
        /// judged under an ablation of the model; the header names it.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// One of the reproduction's workload presets replaced by a
        /// workload file whose `name` is the same (repeatable): the
        /// published figures judged under another workload, with the
        /// reproduction's parameters; the header names it.
        #[arg(long = "workload", value_name = "NAME=FILE")]
        workload: Vec<String>,
    },
    /// Write one self-contained HTML page (DIR/index.html) of Run/RunSet
    /// files and reproductions: the compare tables, verdicts, figures,
    /// latency histograms, knobs and machine.
    Report {
        /// Run or RunSet JSON files (one compare column each, the first
        /// the base), or directories `numalab reproduce NAME --json-dir
        /// DIR` wrote (a reproduction with its verdicts).
        #[arg(required = true, value_name = "RUN|RUNSET|REPRODUCTION")]
        inputs: Vec<String>,
        /// Output directory (created); the page is DIR/index.html.
        #[arg(long, short, value_name = "DIR")]
        out: String,
        /// Compare runs of different machines, workloads or scales (with a
        /// warning) instead of refusing.
        #[arg(long)]
        force: bool,
    },
    /// Run a workload on this host's real kernel (docs/real.md).
    Real {
        #[command(subcommand)]
        cmd: RealCmd,
    },
    /// Run a workload on a real kernel in a QEMU guest shaped like a
    /// (small) machine spec (docs/real.md).
    Vm {
        #[command(subcommand)]
        cmd: VmCmd,
    },
    /// Run the validation scenarios in the model and in a QEMU guest and
    /// print them side by side (docs/real.md).
    Validate {
        /// Guest machine spec (preset or file); default the built-in
        /// 4-node guest (crates/numalab/validate/guest-4n.toml).
        #[arg(long, short)]
        machine: Option<String>,
        /// Only these scenarios (repeatable); default all.
        #[arg(long = "scenario", value_name = "NAME")]
        scenarios: Vec<String>,
        /// Write NAME.model.json and NAME.kernel.json into this directory.
        #[arg(long)]
        json_dir: Option<String>,
        /// Run the model only: no guest, the kernel column stays empty.
        #[arg(long, conflicts_with_all = ["guest_json", "boots"])]
        model_only: bool,
        /// Compare against saved guest records (DIR/NAME.kernel.json)
        /// instead of booting guests.
        #[arg(long, value_name = "DIR")]
        guest_json: Option<String>,
        /// Judge the model against several saved boots of the kernel
        /// (DIR/NAME.bootN.kernel.json, DIR/known.toml), figure by figure,
        /// instead of booting a guest; with --check, exit 1 on a figure
        /// outside the kernel's band that known.toml does not declare
        /// (crates/numalab/validate/kernel/guest-4n holds the built-in
        /// guest's).
        #[arg(long, value_name = "DIR", conflicts_with = "guest_json")]
        boots: Option<String>,
        /// Model PRNG seed (also passed to the guest's random streams).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// With --boots: judge each figure's median over the model's runs
        /// at N seeds, counting up from the seed (one model run varies from
        /// seed to seed as a boot does); the side-by-side table and the
        /// written records stay the first seed's run. Default 21.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
        model_seeds: Option<u32>,
        /// Shrink memory and passes (the model-only CI check uses this).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Guest kernel: a 6.12 version (default the newest), or the path
        /// of a built bzImage.
        #[arg(long)]
        kernel: Option<String>,
        /// Kill a guest after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
        /// Echo the guests' consoles to stderr.
        #[arg(long)]
        verbose: bool,
        /// Also assert the deterministic facts of the kernel's records
        /// (pinned-4k: counters non-zero and consistent, placement
        /// converged, workers where pinned); exit code 1 if one fails.
        #[arg(long)]
        check: bool,
        /// A knob for the model's side only, e.g. numalab.pelt=0
        /// (repeatable; ablations).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Also run every scenario on a kernel built with this patch
        /// (repeatable: a series, in order), beside the same source and
        /// configuration without it (`numalab vm kernel build`).
        #[arg(long = "kernel-patch", value_name = "FILE", conflicts_with_all = ["model_only", "guest_json", "boots"])]
        kernel_patch: Vec<String>,
        /// The model's knob that stands for the patch, for the model
        /// column beside the patched kernel (repeatable), e.g.
        /// numalab.interleave_numa_balancing=as-posted.
        #[arg(
            long = "patched-set",
            value_name = "KEY=VALUE",
            requires = "kernel_patch"
        )]
        patched_set: Vec<String>,
        /// Let hunks lose up to N context lines at each end (off unless asked).
        #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "2", default_value_t = 0)]
        fuzz: usize,
        /// The patch series' scenarios (p1's switches, p2, p4), each with
        /// its proposal's knob set in the guest and the model's switch for
        /// it in the model, on the kernel of vm/patches/6.12/series (built
        /// or taken from the cache, as `vm kernel build --series all`);
        /// with --boots, judged against saved boots of that kernel
        /// (crates/numalab/validate/kernel/guest-4n-series).
        #[arg(long, conflicts_with_all = ["kernel_patch", "kernel"])]
        series: bool,
        #[command(flatten)]
        seeds: SeedsDir,
        /// Write the model's trace of each scenario, in ftrace text format,
        /// to DIR/NAME.model.trace, to line it up with a guest's
        /// (`vm run --trace`).
        #[arg(long, value_name = "DIR")]
        model_trace: Option<String>,
        /// With --model-trace: these events besides the moves, swaps and
        /// sticks the gate counts (comma-separated; opt-in ones such as
        /// numalab_lb too; default every event the model has that is not
        /// opt-in).
        #[arg(long, value_name = "A,B", requires = "model_trace")]
        trace_events: Option<String>,
    },
    /// Benchmark the model: the fixed suite (default), one run of yours
    /// (-m/-w), or how cost grows with CPUs and memory (--scaling); wall
    /// time, modeled time, their ratio and peak RSS, each run in its own
    /// process
    Bench {
        /// One run of your own instead of the suite: machine preset or file
        #[arg(long, short)]
        machine: Option<String>,
        /// One run of your own instead of the suite: workload preset or file
        #[arg(long, short)]
        workload: Option<String>,
        /// Knobs of your run (-m/-w)
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Only the suite entries whose name starts with this (repeatable)
        #[arg(long, value_name = "NAME")]
        only: Vec<String>,
        /// Instead of the suite: NUMA01_THREADLOCAL with balancing on
        /// 80-1024 CPUs and 6-96 GiB, with fitted exponents
        #[arg(long)]
        scaling: bool,
        /// Run each entry this many times; the table keeps the fastest and
        /// checks the outputs are identical
        #[arg(long, default_value_t = 1)]
        repeat: u32,
        /// Runs at once (default 1: the speed target is per core)
        #[arg(long, short = 'j', default_value_t = 1)]
        jobs: usize,
        /// Seed
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Scale
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Also write the rows as JSON to this file
        #[arg(long)]
        json: Option<String>,
        /// Internal: run one measurement and print it as a JSON line
        #[arg(long, hide = true)]
        child: bool,
        /// The CI speed guard: count the instructions of a fixed small set
        /// of runs under valgrind and fail (exit 1) when one grows more
        /// than 5% over the committed baseline
        #[arg(long, conflicts_with_all = ["machine", "workload", "scaling", "only", "repeat", "scale"])]
        instructions: bool,
        /// Baseline of --instructions
        #[arg(long, requires = "instructions", default_value = crate::bench_instructions::BASELINE)]
        baseline: String,
        /// Rewrite the --instructions baseline from this binary's counts
        /// (only in a commit that says why the cost changed)
        #[arg(long, requires = "instructions")]
        update: bool,
    },
}

/// The workload and run options `real run` and `vm run` share; the
/// guest's `real run` gets them from `numalab_real::vm::guest_real_run_args`.
#[derive(Args, Debug)]
struct RunOpts {
    /// Workload preset or TOML spec file.
    #[arg(long, short)]
    workload: String,
    /// Kernel knob by its real name, KEY=VALUE; or CGROUP:FILE=VALUE.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Write the Run JSON here ("-" for stdout); default: print a summary.
    #[arg(long)]
    json: Option<String>,
    /// Shrink memory and passes by this factor, keeping the shape.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Seed of the random-access streams (recorded).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Sampling interval of the time series, seconds.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Write the kernel's ftrace text of the run (from tracefs) to this
    /// file (`real run` only; read it with `numalab trace`).
    #[arg(long)]
    trace: Option<String>,
    /// Only these events, comma-separated (default: the model's events
    /// the kernel has).
    #[arg(long, value_name = "A,B", requires = "trace")]
    trace_events: Option<String>,
    /// Also trace this kernel dynamic event, as tracefs's `dynamic_events`
    /// takes it, named: `f:numalab/cpn change_prot_numa vma->vm_start`
    /// (fprobe), `p:NAME SYM ARGS` (kprobe), `r:NAME SYM $retval`
    /// (kretprobe). Repeatable; removed when the run ends. Kernel runs
    /// only (docs/real.md).
    #[arg(long, value_name = "DEF", requires = "trace")]
    probe: Vec<String>,
}

impl RunOpts {
    fn args(self) -> real::RunArgs {
        real::RunArgs {
            workload: self.workload,
            sets: self.set,
            json: self.json,
            scale: self.scale,
            seed: self.seed,
            interval: self.interval,
            trace: self.trace,
            trace_events: self.trace_events,
            probes: self.probe,
        }
    }
}

#[derive(Subcommand, Debug)]
enum RealCmd {
    /// Execute a workload on this host for real and write the Run JSON
    /// (kind "real"); refuses, changing nothing, what the host cannot do.
    Run {
        #[command(flatten)]
        run: RunOpts,
        /// Allow setting host-wide knobs (sysctl, debugfs, /sys); they are
        /// restored afterwards.
        #[arg(long)]
        allow_sysctl: bool,
        /// Print progress notes on stderr.
        #[arg(long)]
        verbose: bool,
    },
    /// Put back the knobs and remove the cgroup a `real run` that did not
    /// finish (SIGKILL, crash) left changed, from its journal in the state
    /// directory; `real run` does this itself when it starts.
    Restore,
}

#[derive(Subcommand, Debug)]
enum VmCmd {
    /// Boot a QEMU guest (software emulation) shaped like machine M on a
    /// Debian 6.12 kernel, run `numalab real run` inside, return its JSON.
    Run {
        /// Machine preset or TOML spec file (small: at most 8 CPUs, 8
        /// nodes, 8 GiB).
        #[arg(long, short)]
        machine: String,
        #[command(flatten)]
        run: RunOpts,
        /// Guest kernel: 6.12, 6.12.N or 6.12.N+deb12-amd64 (default the
        /// newest 6.12 Debian has), or the path of a built bzImage.
        #[arg(long)]
        kernel: Option<String>,
        /// Kill the guest after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
        /// Echo the guest's console to stderr.
        #[arg(long)]
        verbose: bool,
        /// Keep the work directory (initramfs, share, console log).
        #[arg(long)]
        keep_workdir: bool,
        /// Run on a kernel built with this patch (repeatable: a series)
        /// and on the same kernel without it, side by side.
        #[arg(long = "kernel-patch", value_name = "FILE")]
        kernel_patch: Vec<String>,
        /// Let hunks lose up to N context lines at each end (off unless asked).
        #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "2", default_value_t = 0)]
        fuzz: usize,
    },
    /// Guest kernels built from Debian's linux-source-6.12.
    Kernel {
        #[command(subcommand)]
        cmd: VmKernelCmd,
    },
}

#[derive(Subcommand, Debug)]
enum VmKernelCmd {
    /// Build a guest kernel (x86_64_defconfig + vm/guest-kernel.config),
    /// optionally with patches; cached under ~/.cache/numalab/kernels.
    /// Exit code 2 when a hunk conflicts or the kernel does not compile.
    Build {
        /// A patch (unified diff, or mail-archive text of one); repeatable,
        /// applied in order.
        #[arg(long = "patch", value_name = "FILE")]
        patches: Vec<String>,
        /// The project's series (vm/patches/6.12/series) after any
        /// --patch: `all`, or proposals p1..p5 separated by commas (p3,p4),
        /// applied in series order.
        #[arg(long, value_name = "all|pN,...")]
        series: Option<String>,
        #[command(flatten)]
        seeds: SeedsDir,
        /// An extra Kconfig fragment (checked like the built-in one).
        #[arg(long, value_name = "FILE")]
        config_fragment: Option<String>,
        /// Let hunks lose up to N context lines at each end (off unless asked).
        #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "2", default_value_t = 0)]
        fuzz: usize,
        /// Only report how each hunk applies to the pristine tree.
        #[arg(long)]
        dry_run: bool,
        /// Echo make's output.
        #[arg(long)]
        verbose: bool,
    },
}

#[derive(Subcommand, Debug)]
enum MachineCmd {
    /// Turn `numactl --hardware` output (a file or "-" for stdin) or this
    /// host's /sys into a machine spec (TOML on stdout).
    Import {
        /// numactl --hardware output file, or "-" for stdin.
        file: Option<String>,
        /// Read /sys/devices/system/node of this host instead (optional root).
        #[arg(long, num_args = 0..=1, default_missing_value = "/sys")]
        sysfs: Option<String>,
    },
    /// Print a machine as an explicit TOML spec.
    Show {
        /// Preset or file.
        machine: String,
    },
}

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> Result<(), Failure> {
    // The flags are declared above for --help and parsing; which one wins
    // is the last given, read from the arguments because clap resolves
    // the pair only within one subcommand level.
    let _ = (cli.progress, cli.no_progress);
    crate::progress::set_shown(crate::progress::shown_by_flags(
        &std::env::args_os().collect::<Vec<_>>(),
    ));
    match cli.cmd {
        Cmd::Real {
            cmd:
                RealCmd::Run {
                    run,
                    allow_sysctl,
                    verbose,
                },
        } => real::real_run(&run.args(), allow_sysctl, verbose),
        Cmd::Real {
            cmd: RealCmd::Restore,
        } => real::real_restore(),
        Cmd::Vm {
            cmd:
                VmCmd::Run {
                    machine,
                    run,
                    kernel,
                    timeout,
                    verbose,
                    keep_workdir,
                    kernel_patch,
                    fuzz,
                },
        } => {
            let v = real::VmArgs::with_kernel(kernel, timeout, verbose, keep_workdir);
            if kernel_patch.is_empty() {
                real::vm_run(&machine, &run.args(), &v)
            } else {
                real::vm_run_ab(&machine, &run.args(), &v, &kernel_patch, fuzz)
            }
        }
        Cmd::Vm {
            cmd:
                VmCmd::Kernel {
                    cmd:
                        VmKernelCmd::Build {
                            patches,
                            series,
                            seeds: SeedsDir { seeds },
                            config_fragment,
                            fuzz,
                            dry_run,
                            verbose,
                        },
                },
        } => vm_kernel::kernel_build(&vm_kernel::KernelBuildArgs {
            patches,
            series,
            seeds,
            fragment: config_fragment,
            fuzz,
            dry_run,
            verbose,
        }),
        Cmd::Validate {
            machine,
            scenarios,
            json_dir,
            model_only,
            guest_json,
            boots,
            seed,
            model_seeds,
            scale,
            kernel,
            timeout,
            verbose,
            check,
            set,
            kernel_patch,
            patched_set,
            fuzz,
            series,
            seeds: SeedsDir { seeds },
            model_trace,
            trace_events,
        } => crate::validate_cmd::validate(&validate::Options {
            model_trace,
            trace_events: crate::trace::parse_events(trace_events.as_deref()),
            model_set: set,
            kernel_patch,
            patched_set,
            fuzz,
            series,
            seeds,
            machine,
            scenarios,
            json_dir,
            model_only,
            guest_json,
            boots,
            seed,
            model_seeds,
            scale,
            check,
            vm: real::VmArgs::with_kernel(kernel, timeout, verbose, false),
        }),
        Cmd::Reproduce {
            name,
            scale,
            iterations,
            seed,
            json_dir,
            check,
            jobs,
            plots,
            html,
            set,
            workload,
        } => {
            let jobs = parallel::jobs(jobs)?;
            let opts = reproduce::Options {
                scale,
                iterations,
                seed,
                json_dir,
                progress: true,
                plots,
                sets: set,
                workloads: workload,
            };
            parallel::install(jobs, || {
                crate::report_reproduce::reproduce(&name, &opts, check, html.as_deref())
            })?
        }
        Cmd::Bench {
            instructions: true,
            baseline,
            update,
            jobs,
            seed,
            ..
        } => crate::bench_instructions::guard(&crate::bench_instructions::Options {
            baseline,
            update,
            jobs: parallel::jobs(Some(jobs))?,
            seed,
        }),
        other => dispatch_model(other).map_err(Failure::from),
    }
}

/// The model's subcommands (errors are bad input: exit code 2).
fn dispatch_model(cmd: Cmd) -> Result<(), String> {
    match cmd {
        Cmd::Real { .. } | Cmd::Vm { .. } | Cmd::Validate { .. } | Cmd::Reproduce { .. } => {
            Err("internal: subcommand with its own exit codes in dispatch_model".into())
        }
        Cmd::Run {
            machine,
            workload,
            set,
            seed,
            iterations,
            json,
            label,
            scale,
            json_pretty,
            trace,
            trace_events,
            trace_window,
            jobs,
        } => {
            let filter = trace
                .as_ref()
                .map(|_| crate::trace::filter(trace_events.as_deref(), trace_window.as_deref()))
                .transpose()?;
            run(
                &machine,
                &workload,
                &set,
                seed,
                iterations,
                (json, json_pretty),
                label,
                scale,
                trace,
                filter,
                jobs,
            )
        }
        Cmd::Trace {
            file,
            events,
            window,
        } => crate::trace::summary(&file, events.as_deref(), window.as_deref()),
        Cmd::List { what } => list(&what),
        Cmd::Schema { what } => schema(&what),
        Cmd::Machine { cmd } => machine(cmd),
        Cmd::Compare {
            files,
            cgroup,
            csv,
            force,
        } => compare(&files, cgroup.as_deref(), csv, force),
        Cmd::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "numalab", &mut buf);
            out::print(&String::from_utf8_lossy(&buf))
        }
        Cmd::Man { subcommand, out } => {
            crate::man::man(Cli::command(), &subcommand, out.as_deref())
        }
        Cmd::Sweep { file, out, jobs } => crate::sweep::sweep(&file, out.as_deref(), jobs),
        Cmd::Plot { files, out, format } => crate::plot::plot(&files, &out, &format),
        Cmd::Report { inputs, out, force } => crate::report::report(&inputs, &out, force),
        Cmd::Bench {
            machine,
            workload,
            set,
            only,
            scaling,
            repeat,
            jobs,
            seed,
            scale,
            json,
            child,
            ..
        } => {
            let o = bench::Options {
                repeat,
                jobs: crate::parallel::jobs(Some(jobs))?,
                seed,
                scale,
                json,
            };
            match (machine, workload) {
                (Some(m), Some(w)) if child => bench::child(&m, &w, &set, seed, scale),
                (Some(m), Some(w)) => bench::single(&m, &w, &set, &o),
                (None, None) if scaling => crate::bench_scaling::scaling(&o),
                (None, None) if set.is_empty() => bench::suite(&only, &o),
                (None, None) => Err("--set needs -m/-w (the suite's runs have their own knobs)".into()),
                _ => Err("bench: give both -m/--machine and -w/--workload for a run of your own, or neither for the suite".into()),
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    machine: &str,
    workloads: &[String],
    sets: &[String],
    seed: u64,
    iterations: u32,
    (json, json_pretty): (Option<String>, bool),
    label: Option<String>,
    scale: f64,
    trace: Option<String>,
    filter: Option<numalab_sim::kernel::TraceFilter>,
    jobs: Option<usize>,
) -> Result<(), String> {
    use rayon::prelude::*;
    if iterations == 0 {
        return Err("--iterations must be at least 1".into());
    }
    let m = runner::load_machine(machine)?;
    // Parsed once, before any run starts.
    let knobs = runner::knobs(sets)?;
    let json_stdout = json.as_deref() == Some("-");
    let mut runs = Vec::new();
    let mut trace_events = Vec::new();
    // Every (workload, iteration) is an independent run: they go through
    // the -j pool and are gathered in order, so the output does not depend
    // on -j. Progress (stderr) follows all of them.
    let list: Vec<(&String, u32)> = workloads
        .iter()
        .flat_map(|w| (0..iterations).map(move |i| (w, i)))
        .collect();
    let jobs = parallel::jobs(jobs)?.min(list.len());
    let progress_label = match workloads {
        [w] => w.clone(),
        _ => "run".to_string(),
    };
    let progress = crate::progress::Progress::new(&progress_label, list.len());
    let results = parallel::install(jobs, || {
        list.par_iter()
            .map(|&(w, i)| {
                runner::run_with(
                    &m,
                    w,
                    None,
                    &knobs,
                    seed.wrapping_add(u64::from(i)),
                    scale,
                    filter.as_ref(),
                    &progress,
                )
                .map(|f| (f.rec, f.trace))
            })
            .collect::<Vec<_>>()
    })?;
    progress.finish();
    // Said once the outputs are written: a failed write is then the one
    // error line.
    let mut notices: Vec<runner::NoScanNotice> = Vec::new();
    for result in results {
        {
            let (rec, tr) = result?;
            // Several runs: one after another on the time axis, as
            // successive runs on one machine would be.
            let base = trace_events
                .last()
                .map_or(0, |e: &numalab_record::ftrace::FtraceEvent| e.ts_ns);
            trace_events.extend(crate::trace::to_ftrace(&tr).into_iter().map(|mut e| {
                e.ts_ns += base;
                e
            }));
            if !json_stdout {
                out::print(&numalab_report::run_summary(&rec))?;
            }
            notices.extend(runner::no_scan_notice(&rec));
            runs.push(rec);
        }
    }
    let mut wrote: Vec<String> = Vec::new();
    if let Some(path) = trace {
        let text = numalab_record::ftrace::write(&trace_events, m.nr_cpus());
        out::write_file("--trace", Path::new(&path), &text)?;
        wrote.push(format!(
            "wrote {path} ({} trace events)",
            trace_events.len()
        ));
    }
    if let Some(path) = json {
        let what = if runs.len() == 1 {
            "a Run".to_string()
        } else {
            format!("a RunSet of {} runs", runs.len())
        };
        let text = if runs.len() == 1 {
            runs[0].to_json()
        } else {
            let label = label.unwrap_or_else(|| default_label(sets));
            let set = RunSet::new(label, runs);
            if json_pretty {
                set.to_json_pretty()
            } else {
                set.to_json()
            }
        };
        if path == "-" {
            out::print(&text)?;
        } else {
            out::write_file("--json", Path::new(&path), &text)?;
            wrote.push(format!("wrote {path} ({what})"));
        }
    }
    for w in &wrote {
        crate::progress::note(w);
    }
    for n in &notices {
        if n.warning {
            progress.warn_once(&n.key, &n.text);
        } else {
            progress.note_once(&n.key, &n.text);
        }
    }
    Ok(())
}

fn default_label(sets: &[String]) -> String {
    if sets.is_empty() {
        "default".into()
    } else {
        sets.join(",")
    }
}

fn list(what: &str) -> Result<(), String> {
    let rows: Vec<(String, String)> = match what {
        "machines" => numalab_topology::presets::list()
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        "workloads" => numalab_workload::presets::list()
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        "knobs" => return out::print(&list_knobs()),
        "policies" => numalab_sim::kernel::numa::policy::POLICIES
            .iter()
            .map(|p| (p.name.to_string(), p.description.to_string()))
            .collect(),
        "reproductions" => reproduce::all()
            .into_iter()
            .map(|r| (r.name.to_string(), r.description.to_string()))
            .collect(),
        other => {
            return Err(format!(
                "list {other}: expected one of machines, workloads, reproductions, knobs, policies"
            ))
        }
    };
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let text: String = rows
        .iter()
        .map(|(a, b)| format!("{a:<w$}  {b}\n"))
        .collect();
    out::print(&text)
}

/// `numalab list knobs`, generated from the registry: each knob as
/// `NAME=DEFAULT`, then its type and range, unit, real-kernel location,
/// description, kernel source and aliases; then the cgroup files.
fn list_knobs() -> String {
    use numalab_knobs::cgroup::CGROUP_FILES;
    use std::fmt::Write;
    let mut s = String::new();
    for d in numalab_knobs::knob::ALL {
        let _ = writeln!(s, "{}={}", d.name, d.default_text());
        let _ = writeln!(s, "    {}, unit {}; {}", d.ty, d.unit.as_str(), d.location);
        let _ = writeln!(s, "    {}", d.description);
        let _ = writeln!(s, "    source: {}", d.source);
        if !d.aliases.is_empty() {
            let _ = writeln!(s, "    aliases: {}", d.aliases.join(", "));
        }
    }
    for f in CGROUP_FILES {
        let _ = writeln!(s, "CGROUP:{}=VALUE", f.name);
        let _ = writeln!(
            s,
            "    {}; cgroup v2 file of a workload cgroup",
            f.value.as_str()
        );
        let _ = writeln!(s, "    {}", f.description);
        let _ = writeln!(s, "    source: {}", f.source);
    }
    s
}

/// `numalab schema run|runset`: the JSON Schema generated from the record
/// types, pretty-printed.
fn schema(what: &str) -> Result<(), String> {
    let schema = match what {
        "run" => numalab_record::run_schema(),
        "runset" => numalab_record::runset_schema(),
        other => return Err(format!("schema {other}: expected run or runset")),
    };
    let mut text = serde_json::to_string_pretty(&schema).map_err(|e| format!("schema: {e}"))?;
    text.push('\n');
    out::print(&text)
}

fn machine(cmd: MachineCmd) -> Result<(), String> {
    match cmd {
        MachineCmd::Import { file, sysfs } => {
            let text = if let Some(root) = sysfs {
                numalab_topology::import::from_sysfs(std::path::Path::new(&root))
                    .map_err(|e| e.to_string())?
            } else {
                let input = match file.as_deref() {
                    None | Some("-") => {
                        let mut s = String::new();
                        std::io::stdin()
                            .read_to_string(&mut s)
                            .map_err(|e| format!("reading stdin: {e}"))?;
                        s
                    }
                    Some(f) => std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"))?,
                };
                numalab_topology::import::from_numactl(&input).map_err(|e| e.to_string())?
            };
            out::print(&text)
        }
        MachineCmd::Show { machine } => {
            let m = runner::load_machine(&machine)?;
            out::print(&numalab_topology::spec::to_toml(&m))
        }
    }
}

fn compare(files: &[String], cgroup: Option<&str>, csv: bool, force: bool) -> Result<(), String> {
    let mut sets = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"))?;
        let label = std::path::Path::new(f)
            .file_stem()
            .map_or_else(|| f.clone(), |s| s.to_string_lossy().to_string());
        sets.push(RunSet::from_json(&text, f, &label)?);
    }
    if let Some(diff) = crate::compare::mismatch(files, &sets) {
        if !force {
            return Err(format!(
                "compare: {diff}; the columns would not be comparable (add --force to compare anyway)"
            ));
        }
        eprintln!("numalab: warning: compare: {diff}");
    }
    if csv {
        return out::print(&numalab_report::runs_csv(&sets));
    }
    let mut text = numalab_report::compare_table(&sets);
    if let Some(cg) = cgroup {
        text.push_str(&numalab_report::compare_cgroups(&sets, cg));
    }
    out::print(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("numalab").chain(args.iter().copied()))
    }

    #[test]
    fn real_run_takes_every_option_the_guest_is_given() {
        let sets = vec![
            ("kernel.numa_balancing".to_string(), "1".to_string()),
            ("/db:cpu.weight".to_string(), "50".to_string()),
        ];
        let args = numalab_real::vm::guest_real_run_args(
            "/share/workload.toml",
            &sets,
            7,
            0.25,
            Duration::from_millis(500),
        );
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let cli = parse(&argv).expect("the guest's arguments parse");
        let Cmd::Real {
            cmd:
                RealCmd::Run {
                    run,
                    allow_sysctl,
                    verbose,
                },
        } = cli.cmd
        else {
            panic!("not real run: {:?}", cli.cmd);
        };
        assert!(allow_sysctl);
        assert!(!verbose);
        let a = run.args();
        assert_eq!(a.workload, "/share/workload.toml");
        assert_eq!(a.json.as_deref(), Some(numalab_real::vm::GUEST_RESULT));
        assert_eq!(a.seed, 7);
        assert_eq!(a.scale, 0.25);
        assert_eq!(a.interval, 0.5);
        assert_eq!(a.sets, vec!["kernel.numa_balancing=1", "/db:cpu.weight=50"]);
    }

    #[test]
    fn real_run_defaults() {
        let cli = parse(&["real", "run", "-w", "numa02"]).unwrap();
        let Cmd::Real {
            cmd: RealCmd::Run {
                run, allow_sysctl, ..
            },
        } = cli.cmd
        else {
            panic!()
        };
        assert!(!allow_sysctl);
        let a = run.args();
        assert_eq!((a.seed, a.scale, a.interval), (1, 1.0, 1.0));
        assert!(a.json.is_none() && a.sets.is_empty());
        assert!(parse(&["real", "run"]).is_err(), "--workload is required");
    }

    #[test]
    fn vm_run_and_validate_options() {
        let cli = parse(&[
            "vm",
            "run",
            "--machine",
            "m.toml",
            "--workload",
            "w.toml",
            "--kernel",
            "6.12.117",
            "--timeout",
            "120",
            "--set",
            "a=b",
            "--json",
            "out.json",
            "--keep-workdir",
        ])
        .unwrap();
        let Cmd::Vm {
            cmd:
                VmCmd::Run {
                    machine,
                    run,
                    kernel,
                    timeout,
                    verbose,
                    keep_workdir,
                    ..
                },
        } = cli.cmd
        else {
            panic!()
        };
        assert_eq!(machine, "m.toml");
        assert_eq!(kernel.as_deref(), Some("6.12.117"));
        assert_eq!((timeout, verbose, keep_workdir), (120, false, true));
        assert_eq!(run.args().sets, vec!["a=b"]);
        assert!(
            parse(&["vm", "run", "-w", "numa02"]).is_err(),
            "--machine is required"
        );

        let cli = parse(&[
            "validate",
            "--model-only",
            "--scenario",
            "pinned-4k",
            "--scenario",
            "unpinned",
            "--json-dir",
            "d",
        ])
        .unwrap();
        let Cmd::Validate {
            scenarios,
            model_only,
            json_dir,
            timeout,
            check,
            ..
        } = cli.cmd
        else {
            panic!()
        };
        assert_eq!(scenarios, vec!["pinned-4k", "unpinned"]);
        assert!(model_only && !check);
        assert_eq!(json_dir.as_deref(), Some("d"));
        assert_eq!(timeout, 600);
        assert!(parse(&["validate", "--model-only", "--guest-json", "d"]).is_err());

        // Patched kernels: the series keeps its order, --fuzz alone is 2,
        // --patched-set needs a patch, --model-only excludes one.
        let cli = parse(&[
            "vm", "kernel", "build", "--patch", "a.diff", "--patch", "b.diff", "--fuzz",
        ])
        .unwrap();
        let Cmd::Vm {
            cmd:
                VmCmd::Kernel {
                    cmd:
                        VmKernelCmd::Build {
                            patches,
                            fuzz,
                            dry_run,
                            ..
                        },
                },
        } = cli.cmd
        else {
            panic!()
        };
        assert_eq!(patches, vec!["a.diff", "b.diff"]);
        assert_eq!(fuzz, 2);
        assert!(!dry_run);
        let cli = parse(&[
            "validate",
            "--kernel-patch",
            "p.diff",
            "--patched-set",
            "numalab.interleave_numa_balancing=as-posted",
            "--scenario",
            "p3-interleave-4k",
        ])
        .unwrap();
        let Cmd::Validate {
            kernel_patch,
            patched_set,
            fuzz,
            ..
        } = cli.cmd
        else {
            panic!()
        };
        assert_eq!(kernel_patch, vec!["p.diff"]);
        assert_eq!(patched_set.len(), 1);
        assert_eq!(fuzz, 0);
        assert!(parse(&["validate", "--patched-set", "a=b"]).is_err());
        assert!(parse(&["validate", "--model-only", "--kernel-patch", "p"]).is_err());
    }

    #[test]
    fn model_subcommands_are_unchanged() {
        assert!(matches!(
            parse(&["run", "-m", "tiny-2n", "-w", "numa02"])
                .unwrap()
                .cmd,
            Cmd::Run { .. }
        ));
        assert!(matches!(
            parse(&["compare", "a.json"]).unwrap().cmd,
            Cmd::Compare { .. }
        ));
        assert!(matches!(
            parse(&["schema", "runset"]).unwrap().cmd,
            Cmd::Schema { .. }
        ));
    }

    #[test]
    fn progress_flags_parse_anywhere_and_together() {
        for a in [
            &["--no-progress", "list", "knobs", "--progress"][..],
            &["list", "knobs", "--progress", "--no-progress"],
        ] {
            assert!(parse(a).is_ok(), "{a:?}");
        }
    }
}
