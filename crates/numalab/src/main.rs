//! `numalab`: the command line.
//!
//! Parses arguments, loads machines and workloads by preset name or file,
//! runs the model (with progress on stderr once a command runs longer than
//! 2 s, and warnings there when NUMA balancing cannot act in a run), and
//! prints or writes what the report layer formats. Every failure is one
//! line on stderr starting `numalab: error:` and a non-zero exit; nothing
//! here panics on user input.

mod bench;
mod bench_instructions;
mod bench_scaling;
mod cli;
mod man;
mod real;
mod report;
mod report_figures;
mod report_page;
mod report_reproduce;
mod trace;
mod validate;
mod validate_ab;
mod validate_band;
mod validate_cmd;
mod validate_coordinator;
mod validate_scenarios;
mod validate_shares;
mod vm_kernel;

// The modules the Python package shares live in the library (lib.rs);
// imported here so that `crate::runner` etc. name them as before.
use numalab::{compare, failure, out, parallel, plot, progress, reproduce, runner, sweep};

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so `numalab list workloads | head` would panic
    // in `print!` once head exits. Restore the default action: like any
    // Unix filter, numalab then ends quietly when its reader goes away.
    // SAFETY: called first, before any thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(e) => return command_line_error(e),
    };
    match cli::dispatch(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Not eprintln!: it panics when stderr cannot be written, and
            // the exit code still tells what happened.
            let mut err = std::io::stderr().lock();
            if let Some(d) = &e.detail {
                let _ = writeln!(err, "{d}");
            }
            let _ = writeln!(err, "numalab: error: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}

/// `--help` and `--version` print as clap prints them; a refused command
/// line becomes one `numalab: error:` line like every other error (clap's
/// own text adds a usage block), exit 2.
fn command_line_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        // Help and version go to stdout (help for a bare `numalab` or
        // `numalab run`-less subcommand group to stderr, exit 2), as clap
        // prints them; a failed write has nowhere to go but the exit code.
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let code = e.exit_code().clamp(0, 255) as u8;
            return match e.print() {
                Ok(()) => ExitCode::from(code),
                Err(_) => ExitCode::from(2),
            };
        }
        _ => {}
    }
    // clap's message is its first paragraph (a list of missing arguments
    // runs over several lines); the usage block after it is dropped.
    let text = e.render().to_string();
    let message = text
        .split("\n\n")
        .next()
        .unwrap_or("invalid command line")
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let _ = writeln!(
        std::io::stderr().lock(),
        "numalab: error: {message} (see `numalab --help`)"
    );
    ExitCode::from(2)
}
