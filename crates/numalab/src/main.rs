//! `numalab`: the command line.
//!
//! Parses arguments, loads machines and workloads by preset name or file,
//! runs the model (with a progress bar on a terminal), and prints or writes
//! what the report layer formats. Every failure is one line on stderr
//! starting `numalab: error:` and a non-zero exit; nothing here panics on
//! user input.

mod bench;
mod cli;
mod failure;
mod out;
mod progress;
mod real;
mod reproduce;
mod runner;
mod validate;

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
    let args = cli::Cli::parse();
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
