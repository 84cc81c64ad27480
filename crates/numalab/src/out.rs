//! Standard output and result files, with write errors reported.
//!
//! `print!` panics when stdout cannot be written
//! (`numalab list workloads > /dev/full`); [`print`] writes and flushes,
//! and turns a failure into the one-line error
//! `writing stdout: No space left on device` (exit 2).
//! A closed pipe never gets here: `main` restores SIGPIPE's default
//! action, so numalab ends quietly first. [`write_file`] writes a result
//! file atomically ([`numalab_record::write_atomic`]). Left out: stderr,
//! whose failures have nowhere to be reported.

use std::io::Write;

/// An I/O error as text without the `(os error N)` suffix.
pub fn io_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rsplit_once(" (os error ") {
        Some((msg, _)) => msg.to_string(),
        None => s,
    }
}

/// Writes `text` to stdout and flushes it.
pub fn print(text: &str) -> Result<(), String> {
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|()| o.flush())
        .map_err(|e| format!("writing stdout: {}", io_text(&e)))
}

/// Writes `text` to file `path` atomically; an error names `what` (the
/// option, e.g. `--json`) and the path.
pub fn write_file(what: &str, path: &std::path::Path, text: &str) -> Result<(), String> {
    numalab_record::write_atomic(path, text).map_err(|e| {
        let what = if what.is_empty() {
            String::new()
        } else {
            format!("{what} ")
        };
        format!("{what}{}: {}", path.display(), io_text(&e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_lose_their_number() {
        let e = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(io_text(&e), "No space left on device");
        assert_eq!(io_text(&std::io::Error::other("x (y)")), "x (y)");
    }

    #[test]
    fn write_file_names_the_option_and_path() {
        let d = std::env::temp_dir().join(format!("numalab-out-test-{}", std::process::id()));
        let p = d.join("missing-dir/run.json");
        let e = write_file("--json", &p, "x").unwrap_err();
        assert_eq!(
            e,
            format!("--json {}: No such file or directory", p.display())
        );
    }
}
