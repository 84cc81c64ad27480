//! The docs' command lines, run: every ` ```sh ` block of README.md and
//! docs/*.md is executed with the binary under test, so a doc that drifts
//! from the program fails `cargo test`.
//!
//! Each Markdown file gets its own temporary directory and runs its
//! command lines in order (a later line reads what an earlier one wrote),
//! each with `sh -c`, `numalab` on PATH being this build's binary
//! (`CARGO_BIN_EXE_numalab`). A line must exit 0 unless the docs say
//! otherwise. One-line HTML comments `<!-- docs-test: ... -->` right
//! before a block (blank lines between are fine) say what the runner does
//! differently, each with its reason in parentheses where it changes what
//! runs:
//!
//! - `skip (REASON)`: the block is not run;
//! - ``skip `PREFIX` (REASON)``: its lines starting with PREFIX are not run;
//! - ``replace `FROM` with `TO` (REASON)``: FROM becomes TO in its lines
//!   that contain it, before they run;
//! - ``run `PREFIX` at --scale S (REASON)``: its lines starting with
//!   PREFIX (after `replace`) run with `--scale S` instead of the scale
//!   they give (a reduced scale, where the text's claim still holds);
//! - ``exit N `PREFIX` ``: its lines starting with PREFIX must exit N;
//! - ``unscanned `PREFIX` (REASON)``: its lines starting with PREFIX end
//!   before NUMA balancing's first scan, as `numalab run`'s note says
//!   (without it, a run with that note fails: a scale too small to show
//!   what balancing does);
//! - `file NAME`: the block (a TOML spec, say) is written to NAME in the
//!   file's directory;
//! - `output`: every line of the block must be a line of what the last
//!   command before it printed (stdout and stderr).
//!
//! Every fenced block must name its language, so that no command block is
//! left out by accident (`sh` runs; `text` is output or a synopsis). A
//! command must start with `numalab` once rewritten: anything else needs
//! an annotation. An annotation that matches no line is an error, and so
//! is a [`PENDING`] entry that matches none. The test prints on stderr
//! how many lines ran, which ran rewritten, and which were skipped and why.
//!
//! Left out: `python` blocks (`python/tests` runs the package through
//! pytest), commands quoted in the prose, and the output of a command
//! that no `output` block follows.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Known failures caused by bugs being fixed elsewhere: (command prefix,
/// as the doc writes it; reason). A line with such a prefix must fail; once
/// it passes the test says so, and its entry is to be deleted.
const PENDING: &[(&str, &str)] = &[];

/// What `numalab run` says (stderr) when balancing was on but never
/// updated a PTE (`runner::no_scan_notice`), or, for a workload of fixed
/// duration, before a run too short to scan (said instead of the former).
const NEVER_STARTED: &[&str] = &["no PTE was ever updated", "NUMA balancing will not scan"];

/// What an annotation asks for.
#[derive(Debug)]
enum Action {
    Skip,
    Replace { from: String, to: String },
    Scale(String),
    Exit(i32),
    Unscanned,
    File(String),
    Output,
}

/// One `<!-- docs-test: ... -->` annotation.
#[derive(Debug)]
struct Note {
    action: Action,
    /// The lines it applies to: those starting with this (None: all).
    prefix: Option<String>,
    reason: String,
    /// `FILE:LINE` of the annotation.
    at: String,
}

/// A fenced block with the annotations before it.
#[derive(Debug)]
struct Block {
    lang: String,
    /// (line number, text) of its lines.
    lines: Vec<(usize, String)>,
    notes: Vec<Note>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok<'a> {
    Word(&'a str),
    Quoted(&'a str),
}

/// Splits an annotation into words and `quoted` parts, and the reason in
/// the parentheses that end it (if any).
fn tokens(body: &str) -> Result<(Vec<Tok<'_>>, String), String> {
    let mut toks = Vec::new();
    let mut rest = body.trim();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Ok((toks, String::new()));
        }
        if let Some(r) = rest.strip_prefix('`') {
            let end = r
                .find('`')
                .ok_or_else(|| format!("unclosed ` in `{body}`"))?;
            toks.push(Tok::Quoted(&r[..end]));
            rest = &r[end + 1..];
        } else if let Some(r) = rest.strip_prefix('(') {
            let reason = r.strip_suffix(')').ok_or_else(|| {
                format!("the reason in `{body}` must end the annotation with `)`")
            })?;
            return Ok((toks, reason.trim().to_string()));
        } else {
            let end = rest.find([' ', '`', '(']).unwrap_or(rest.len());
            toks.push(Tok::Word(&rest[..end]));
            rest = &rest[end..];
        }
    }
}

fn parse_note(body: &str, at: String) -> Result<Note, String> {
    use Tok::{Quoted as Q, Word as W};
    let (toks, reason) = tokens(body)?;
    let note = |action, prefix: Option<&str>| Note {
        action,
        prefix: prefix.map(str::to_string),
        reason: reason.clone(),
        at: at.clone(),
    };
    let (n, needs_reason) = match toks.as_slice() {
        [W("skip")] => (note(Action::Skip, None), true),
        [W("skip"), Q(p)] => (note(Action::Skip, Some(p)), true),
        [W("replace"), Q(from), W("with"), Q(to)] => (
            note(
                Action::Replace {
                    from: from.to_string(),
                    to: to.to_string(),
                },
                None,
            ),
            true,
        ),
        [W("run"), Q(p), W("at"), W("--scale"), W(s)] => {
            s.parse::<f64>()
                .map_err(|_| format!("{at}: --scale {s}: not a number"))?;
            (note(Action::Scale(s.to_string()), Some(p)), true)
        }
        [W("exit"), W(n), Q(p)] => {
            let code = n
                .parse()
                .map_err(|_| format!("{at}: exit {n}: not a number"))?;
            (note(Action::Exit(code), Some(p)), false)
        }
        [W("unscanned"), Q(p)] => (note(Action::Unscanned, Some(p)), true),
        [W("file"), W(name)] => (note(Action::File(name.to_string()), None), false),
        [W("output")] => (note(Action::Output, None), false),
        _ => return Err(format!(
            "{at}: unknown annotation `{body}` (skip, skip `PREFIX`, replace `A` with `B`, run `PREFIX` at --scale S, exit N `PREFIX`, unscanned `PREFIX`, file NAME, output)"
        )),
    };
    if needs_reason && n.reason.is_empty() {
        return Err(format!("{at}: `{body}` needs a reason in parentheses"));
    }
    Ok(n)
}

/// The fenced blocks of a Markdown file, with their annotations.
fn blocks(name: &str, text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut notes: Vec<Note> = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (i, line) in text.lines().enumerate() {
        let no = i + 1;
        let t = line.trim_start();
        if let Some((indent, b)) = open.as_mut() {
            if t.trim_end() == "```" {
                out.push(
                    open.take()
                        .map(|(_, b)| b)
                        .unwrap_or_else(|| unreachable!()),
                );
            } else {
                let l = line.strip_prefix(indent.as_str()).unwrap_or(t);
                b.lines.push((no, l.to_string()));
            }
            continue;
        }
        if let Some(body) = t.strip_prefix("<!-- docs-test:") {
            let body = body.trim_end().strip_suffix("-->").ok_or_else(|| {
                format!("{name}:{no}: a docs-test annotation is one line ending `-->`")
            })?;
            notes.push(parse_note(body, format!("{name}:{no}"))?);
        } else if let Some(lang) = t.strip_prefix("```") {
            let lang = lang.trim();
            if lang.is_empty() {
                return Err(format!(
                    "{name}:{no}: a fenced block without a language (`sh` for commands, which this test runs; `text` for output or a synopsis)"
                ));
            }
            let indent = line[..line.len() - t.len()].to_string();
            let block = Block {
                lang: lang.to_string(),
                lines: Vec::new(),
                notes: std::mem::take(&mut notes),
            };
            open = Some((indent, block));
        } else if !t.is_empty() && !notes.is_empty() {
            return Err(format!(
                "{}: the annotation is not followed by a fenced block",
                notes[0].at
            ));
        }
    }
    if open.is_some() {
        return Err(format!("{name}: a fenced block is not closed"));
    }
    if let Some(n) = notes.first() {
        return Err(format!(
            "{}: the annotation is not followed by a fenced block",
            n.at
        ));
    }
    Ok(out)
}

/// Cuts a shell line at a comment (`#` starting a word, outside quotes)
/// and splits it at `;` (outside quotes); the parts trimmed, empty ones
/// dropped.
fn split_commands(line: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && prev.is_whitespace() => break,
            None if c == ';' => {
                parts.push(std::mem::take(&mut cur));
                prev = ' ';
                continue;
            }
            None => {}
        }
        cur.push(c);
        prev = c;
    }
    parts.push(cur);
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The commands of a `sh` block: lines joined at a trailing `\`, comments
/// dropped, split at `;`; each with the number of its first line.
fn commands(b: &Block) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut joined: Option<(usize, String)> = None;
    for (no, line) in &b.lines {
        let (start, mut text) = joined.take().unwrap_or((*no, String::new()));
        let l = line.trim();
        match l.strip_suffix('\\') {
            Some(head) => {
                text.push_str(head.trim_end());
                text.push(' ');
                joined = Some((start, text));
            }
            None => {
                text.push_str(l);
                out.extend(split_commands(&text).into_iter().map(|c| (start, c)));
            }
        }
    }
    if let Some((start, text)) = joined {
        out.extend(split_commands(&text).into_iter().map(|c| (start, c)));
    }
    out
}

/// `cmd` with `--scale S`: the value of a `--scale` it gives replaced, or
/// `--scale S` put right after `prefix`.
fn with_scale(cmd: &str, prefix: &str, scale: &str) -> String {
    let words: Vec<&str> = cmd.split(' ').collect();
    if let Some(i) = words.iter().position(|w| *w == "--scale") {
        let mut w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        if i + 1 < w.len() {
            w[i + 1] = scale.to_string();
            return w.join(" ");
        }
    }
    if let Some(i) = words.iter().position(|w| w.starts_with("--scale=")) {
        let mut w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        w[i] = format!("--scale={scale}");
        return w.join(" ");
    }
    format!("{prefix} --scale {scale}{}", &cmd[prefix.len()..])
}

/// What running one Markdown file's commands found.
#[derive(Default)]
struct Report {
    ran: usize,
    /// (where, command, reason)
    skipped: Vec<(String, String, String)>,
    /// (where, command as written, as run, reason)
    rewritten: Vec<(String, String, String, String)>,
    /// (where, command, reason)
    pending: Vec<(String, String, String)>,
    failures: Vec<String>,
    /// PENDING entries that matched a line.
    pending_seen: Vec<&'static str>,
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn starts(cmd: &str, prefix: &str) -> bool {
    cmd == prefix
        || cmd.starts_with(&format!("{prefix} "))
        || prefix.ends_with(' ') && cmd.starts_with(prefix)
}

/// Runs the commands of one Markdown file (`name`, relative to the
/// repository) in a directory of its own.
fn run_file(name: &str, text: &str, bin_dir: &Path) -> Report {
    let mut r = Report::default();
    let blocks = match blocks(name, text) {
        Ok(b) => b,
        Err(e) => {
            r.failures.push(e);
            return r;
        }
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut last_output = String::new();
    for b in &blocks {
        let mut used = vec![false; b.notes.len()];
        for (i, n) in b.notes.iter().enumerate() {
            match &n.action {
                Action::File(file) => {
                    let mut body: String = b.lines.iter().map(|(_, l)| format!("{l}\n")).collect();
                    if body.is_empty() {
                        body.push('\n');
                    }
                    let p = dir.path().join(file);
                    if let Some(parent) = p.parent() {
                        std::fs::create_dir_all(parent).expect("directory for a file block");
                    }
                    std::fs::write(&p, body).expect("write a file block");
                    used[i] = true;
                }
                Action::Output => {
                    let got: Vec<&str> = last_output.lines().map(str::trim_end).collect();
                    let missing: Vec<&str> = b
                        .lines
                        .iter()
                        .map(|(_, l)| l.trim_end())
                        .filter(|l| !l.is_empty() && !got.contains(l))
                        .collect();
                    if !missing.is_empty() {
                        r.failures.push(format!(
                            "{}: the command before the block did not print these lines:\n    {}\n  it printed:\n{}",
                            n.at,
                            missing.join("\n    "),
                            tail(&last_output, 20)
                        ));
                    }
                    used[i] = true;
                }
                _ if b.lang != "sh" => {
                    r.failures.push(format!(
                        "{}: this annotation applies to `sh` blocks; the block is `{}`",
                        n.at, b.lang
                    ));
                    used[i] = true;
                }
                _ => {}
            }
        }
        if b.lang != "sh" {
            continue;
        }
        for (no, cmd) in commands(b) {
            let at = format!("{name}:{no}");
            let applies = |n: &Note, c: &str| n.prefix.as_deref().is_none_or(|p| starts(c, p));
            if let Some(i) = b
                .notes
                .iter()
                .position(|n| matches!(n.action, Action::Skip) && applies(n, &cmd))
            {
                used[i] = true;
                r.skipped.push((at, cmd, b.notes[i].reason.clone()));
                // An `output` block after a skipped line has nothing to check.
                last_output.clear();
                continue;
            }
            let mut run = cmd.clone();
            let mut why = Vec::new();
            for (i, n) in b.notes.iter().enumerate() {
                match &n.action {
                    Action::Replace { from, to } if run.contains(from.as_str()) => {
                        run = run.replace(from.as_str(), to);
                        used[i] = true;
                        why.push(n.reason.clone());
                    }
                    Action::Scale(s) if applies(n, &run) => {
                        run = with_scale(&run, n.prefix.as_deref().unwrap_or(""), s);
                        used[i] = true;
                        why.push(n.reason.clone());
                    }
                    _ => {}
                }
            }
            if !why.is_empty() {
                r.rewritten
                    .push((at.clone(), cmd.clone(), run.clone(), why.join("; ")));
            }
            if !starts(&run, "numalab") {
                r.failures.push(format!(
                    "{at}: `{run}` is not a numalab command: annotate it (skip or replace, with a reason)"
                ));
                continue;
            }
            let exit = b
                .notes
                .iter()
                .enumerate()
                .find_map(|(i, n)| match n.action {
                    Action::Exit(code) if applies(n, &cmd) => {
                        used[i] = true;
                        Some(code)
                    }
                    _ => None,
                });
            let unscanned = b.notes.iter().enumerate().any(|(i, n)| {
                let hit = matches!(n.action, Action::Unscanned) && applies(n, &cmd);
                used[i] |= hit;
                hit
            });
            let pending = PENDING.iter().find(|(p, _)| starts(&cmd, p));
            let out = Command::new("sh")
                .arg("-c")
                .arg(&run)
                .current_dir(dir.path())
                .env("PATH", &path)
                .output()
                .expect("run sh");
            r.ran += 1;
            last_output = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let code = out.status.code();
            let shown = if run == cmd {
                format!("`{cmd}`")
            } else {
                format!("`{cmd}` (run as `{run}`)")
            };
            // Only a plain run is held to scanning: a reproduction at a
            // reduced scale judges for itself what it could not model
            // ("not modeled at this scale"), and warns as a run does.
            let never_started = NEVER_STARTED.iter().any(|m| last_output.contains(m))
                && (unscanned || starts(&cmd, "numalab run "));
            match (unscanned, never_started) {
                (false, true) => r.failures.push(format!(
                    "{at}: {shown}: NUMA balancing never started in the run (its note says so): give a --scale at which it scans, or annotate `unscanned` with the reason"
                )),
                (true, false) => r.failures.push(format!(
                    "{at}: {shown} is annotated `unscanned`, but its run has no note that balancing never started: the annotation (and the text's reason) are stale"
                )),
                _ => {}
            }
            match (pending, exit) {
                (Some((p, why)), _) => {
                    r.pending_seen.push(p);
                    if code == Some(0) {
                        r.failures.push(format!(
                            "{at}: {shown} passes now: delete its PENDING entry (\"{p}\": {why})"
                        ));
                    } else {
                        r.pending.push((at, cmd, why.to_string()));
                    }
                }
                (None, want) => {
                    let want = want.unwrap_or(0);
                    if code != Some(want) {
                        let code = code.map_or("on a signal".to_string(), |c| c.to_string());
                        r.failures.push(format!(
                            "{at}: {shown} exited {code}, the doc expects {want}; it printed:\n{}",
                            tail(&last_output, 20)
                        ));
                    }
                }
            }
        }
        for (n, u) in b.notes.iter().zip(&used) {
            if !u {
                r.failures.push(format!(
                    "{}: the annotation matches no line of its block",
                    n.at
                ));
            }
        }
    }
    r
}

/// README.md and docs/*.md, relative to the repository root.
fn markdown_files(root: &Path) -> Vec<String> {
    let mut files = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Lines grouped by reason: "N reason (where, where, ...)".
fn by_reason<'a>(rows: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for (at, why) in rows {
        match groups.iter_mut().find(|(w, _)| *w == why) {
            Some((_, ats)) => ats.push(at),
            None => groups.push((why, vec![at])),
        }
    }
    groups
        .into_iter()
        .map(|(why, ats)| format!("  {:>2} {why} ({})", ats.len(), ats.join(", ")))
        .collect()
}

#[test]
fn every_command_block_of_the_docs_runs_as_written() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = tempfile::tempdir().expect("temporary directory");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_numalab"), bin.path().join("numalab"))
        .expect("numalab on PATH");
    let files = markdown_files(&root);
    // The files are independent: each runs in a thread of its own.
    let reports: Vec<(String, Report)> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(root.join(f)).expect("read a doc");
                let bin = bin.path();
                s.spawn(move || (f.clone(), run_file(f, &text, bin)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a docs thread"))
            .collect()
    });
    let mut failures: Vec<String> = reports
        .iter()
        .flat_map(|(_, r)| r.failures.iter().cloned())
        .collect();
    for (p, why) in PENDING {
        if !reports.iter().any(|(_, r)| r.pending_seen.contains(p)) {
            failures.push(format!(
                "PENDING entry \"{p}\" ({why}) matches no command line: delete it"
            ));
        }
    }
    let ran: usize = reports.iter().map(|(_, r)| r.ran).sum();
    let skipped: Vec<_> = reports.iter().flat_map(|(_, r)| &r.skipped).collect();
    let rewritten: Vec<_> = reports.iter().flat_map(|(_, r)| &r.rewritten).collect();
    let pending: Vec<_> = reports.iter().flat_map(|(_, r)| &r.pending).collect();
    let mut summary = format!(
        "docs test: {} command lines in {} files: {ran} ran ({} rewritten or at a reduced scale, {} pending known failures), {} skipped\n",
        ran + skipped.len(),
        files.len(),
        rewritten.len(),
        pending.len(),
        skipped.len()
    );
    summary.push_str("skipped, by reason:\n");
    for l in by_reason(
        skipped
            .iter()
            .map(|(at, _, why)| (at.as_str(), why.as_str())),
    ) {
        summary.push_str(&format!("{l}\n"));
    }
    summary.push_str("rewritten, by reason:\n");
    for l in by_reason(
        rewritten
            .iter()
            .map(|(at, _, _, why)| (at.as_str(), why.as_str())),
    ) {
        summary.push_str(&format!("{l}\n"));
    }
    summary.push_str("pending known failures:\n");
    for l in by_reason(
        pending
            .iter()
            .map(|(at, _, why)| (at.as_str(), why.as_str())),
    ) {
        summary.push_str(&format!("{l}\n"));
    }
    // Straight to stderr, past the test harness's capture: CI's log shows
    // what ran and what did not on every run, not only on a failure.
    let _ = std::io::stderr().lock().write_all(summary.as_bytes());
    assert!(
        failures.is_empty(),
        "{} docs failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn annotations_parse_and_apply_as_documented() {
    let b = blocks(
        "x.md",
        "<!-- docs-test: skip `sudo numalab` (needs root) -->\n\n<!-- docs-test: run `numalab reproduce` at --scale 0.01 (minutes) -->\n```sh\nnumalab a b  # note\nsudo numalab real run; numalab c \\\n  d\n```\n",
    )
    .unwrap();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].notes.len(), 2);
    assert_eq!(b[0].notes[0].reason, "needs root");
    assert!(matches!(&b[0].notes[1].action, Action::Scale(s) if s == "0.01"));
    assert_eq!(
        commands(&b[0]),
        vec![
            (5, "numalab a b".to_string()),
            (6, "sudo numalab real run".to_string()),
            (6, "numalab c d".to_string()),
        ]
    );
    assert_eq!(
        with_scale(
            "numalab reproduce x --scale 0.25",
            "numalab reproduce",
            "0.01"
        ),
        "numalab reproduce x --scale 0.01"
    );
    assert_eq!(
        with_scale("numalab reproduce all --check", "numalab reproduce", "0.01"),
        "numalab reproduce --scale 0.01 all --check"
    );
    assert!(blocks("x.md", "```\nls\n```\n")
        .unwrap_err()
        .contains("without a language"));
    assert!(blocks("x.md", "<!-- docs-test: skip -->\n```sh\nx\n```\n")
        .unwrap_err()
        .contains("needs a reason"));
    assert!(blocks(
        "x.md",
        "<!-- docs-test: skip (r) -->\ntext\n```sh\nx\n```\n"
    )
    .unwrap_err()
    .contains("not followed"));
}
