//! Argument definitions and the subcommands.

use crate::{bench, reproduce, runner};
use clap::{Parser, Subcommand};
use numalab_record::{RunRecord, RunSet};
use std::io::Read;

/// A laboratory for Linux automatic NUMA balancing.
#[derive(Parser, Debug)]
#[command(name = "numalab", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
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
        /// Write the Run JSON here ("-" for stdout). Several runs make a RunSet.
        #[arg(long)]
        json: Option<String>,
        /// Label of the RunSet (a compare column); default: the settings.
        #[arg(long)]
        label: Option<String>,
        /// Shrink memory and passes by this factor, keeping the shape.
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Write trace events (ftrace text format) to this file.
        #[arg(long)]
        trace: Option<String>,
    },
    /// List presets and knobs.
    List {
        /// machines, workloads, reproductions or knobs.
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
    },
    /// Run a published experiment and print modeled beside published.
    Reproduce {
        /// Reproduction name (see `numalab list reproductions`).
        name: String,
        /// Shrink memory and passes (1 = as published).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Iterations (seeds) per configuration.
        #[arg(long, default_value_t = 1)]
        iterations: u32,
        /// First seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write each configuration's RunSet JSON into this directory.
        #[arg(long)]
        json_dir: Option<String>,
    },
    /// Benchmark the model: wall time and peak memory of one run.
    Bench {
        /// Machine preset or file.
        #[arg(long, short, default_value = "spr-4n")]
        machine: String,
        /// Workload preset or file.
        #[arg(long, short, default_value = "numa01-threadlocal")]
        workload: String,
        /// Knobs.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Scale.
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
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
pub fn dispatch(cli: Cli) -> Result<(), String> {
    match cli.cmd {
        Cmd::Run {
            machine,
            workload,
            set,
            seed,
            iterations,
            json,
            label,
            scale,
            trace,
        } => run(
            &machine, &workload, &set, seed, iterations, json, label, scale, trace,
        ),
        Cmd::List { what } => list(&what),
        Cmd::Machine { cmd } => machine(cmd),
        Cmd::Compare { files, cgroup, csv } => compare(&files, cgroup.as_deref(), csv),
        Cmd::Reproduce {
            name,
            scale,
            iterations,
            seed,
            json_dir,
        } => reproduce::reproduce(&name, scale, iterations, seed, json_dir.as_deref()),
        Cmd::Bench {
            machine,
            workload,
            set,
            seed,
            scale,
        } => bench::bench(&machine, &workload, &set, seed, scale),
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    machine: &str,
    workloads: &[String],
    sets: &[String],
    seed: u64,
    iterations: u32,
    json: Option<String>,
    label: Option<String>,
    scale: f64,
    trace: Option<String>,
) -> Result<(), String> {
    if iterations == 0 {
        return Err("--iterations must be at least 1".into());
    }
    let m = runner::load_machine(machine)?;
    // Validate knobs before any run starts.
    runner::knobs(sets)?;
    let json_stdout = json.as_deref() == Some("-");
    let mut runs = Vec::new();
    let mut trace_text = String::new();
    for w in workloads {
        for i in 0..iterations {
            let (rec, tr) = runner::run_model(
                &m,
                w,
                sets,
                seed + i as u64,
                scale,
                trace.is_some(),
                !json_stdout,
            )?;
            for e in &tr {
                trace_text.push_str(&format!(
                    "{:>16} [{:03}] {:.6}: {}: {}\n",
                    rec.test_name().to_lowercase(),
                    0,
                    e.t as f64 / 1e9,
                    e.name,
                    e.fields
                ));
            }
            if json.is_none() {
                print!("{}", numalab_report::run_summary(&rec));
            }
            runs.push(rec);
        }
    }
    if let Some(path) = trace {
        std::fs::write(&path, trace_text).map_err(|e| format!("--trace {path}: {e}"))?;
    }
    if let Some(path) = json {
        let text = if runs.len() == 1 {
            runs[0].to_json()
        } else {
            let label = label.unwrap_or_else(|| default_label(sets));
            RunSet::new(label, runs).to_json()
        };
        if path == "-" {
            print!("{text}");
        } else {
            std::fs::write(&path, text).map_err(|e| format!("--json {path}: {e}"))?;
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
        "knobs" => numalab_sim::Knobs::describe()
            .into_iter()
            .map(|(n, d, h)| (format!("{n}={d}"), h.to_string()))
            .collect(),
        "reproductions" => reproduce::all()
            .into_iter()
            .map(|r| (r.name.to_string(), r.description.to_string()))
            .collect(),
        other => {
            return Err(format!(
                "list {other}: expected one of machines, workloads, reproductions, knobs"
            ))
        }
    };
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    for (a, b) in rows {
        println!("{a:<w$}  {b}");
    }
    Ok(())
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
            print!("{text}");
            Ok(())
        }
        MachineCmd::Show { machine } => {
            let m = runner::load_machine(&machine)?;
            print!("{}", numalab_topology::spec::to_toml(&m));
            Ok(())
        }
    }
}

fn compare(files: &[String], cgroup: Option<&str>, csv: bool) -> Result<(), String> {
    let mut sets = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"))?;
        let label = std::path::Path::new(f)
            .file_stem()
            .map_or_else(|| f.clone(), |s| s.to_string_lossy().to_string());
        sets.push(RunSet::from_json(&text, f, &label)?);
    }
    if csv {
        print!("{}", numalab_report::runs_csv(&sets));
        return Ok(());
    }
    print!("{}", numalab_report::compare_table(&sets));
    if let Some(cg) = cgroup {
        print!("{}", numalab_report::compare_cgroups(&sets, cg));
    }
    let _ = RunRecord::vm;
    Ok(())
}
