//! Patch intake for `numalab vm kernel build`: parse a unified diff (a real
//! one, or mail-archive text whose whitespace was stripped), find each hunk
//! in the target tree, and write a diff `git apply` takes.
//!
//! Mail archives often strip leading whitespace: context lines lose their
//! leading space and indentation, and sometimes blank lines vanish. Such a
//! hunk is matched by its old side (context and removed lines) ignoring all
//! whitespace and blank lines; where it matches, the real lines of the tree
//! replace the dumped ones and added lines are re-indented from their
//! context (kernel style: tabs, one more after a `{` or an unbraced
//! control line, one less for a `}`, `else` aligned with its `if`, comment
//! continuations one space in). Each hunk is reported as
//! [`HunkStatus::Applied`] (its old side is in the tree byte for byte),
//! [`HunkStatus::Repaired`] (only ignoring whitespace), [`HunkStatus::Fuzzed`]
//! (only after dropping up to `fuzz` context lines at each end, and only when
//! fuzz was asked for) or [`HunkStatus::Conflict`].
//!
//! The logic is pure: the target files come through a closure, so it is
//! tested on synthetic trees. Left out: renames, copies, binary diffs, file
//! deletion by repair (a deleting hunk must apply as is), and whitespace
//! inside added lines (only their indentation is restored; the compiler does
//! not care).

use std::fmt;

/// One hunk line: `' '` context, `'-'` removed, `'+'` added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// `' '`, `'-'` or `'+'`.
    pub kind: char,
    /// The text after the marker, as dumped.
    pub text: String,
}

/// A hunk as parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// Old start line as stated in the header (1-based).
    pub old_start: usize,
    /// Section text after the second `@@` (function name), for reports.
    pub section: String,
    /// Body lines.
    pub lines: Vec<Line>,
}

/// The hunks of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePatch {
    /// Path in the tree (`b/` side without the prefix; the `a/` side for a
    /// deletion).
    pub path: String,
    /// True when the old side is `/dev/null`.
    pub new_file: bool,
    /// True when the new side is `/dev/null`.
    pub deleted: bool,
    /// Hunks in order.
    pub hunks: Vec<Hunk>,
}

/// What happened to one hunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HunkStatus {
    /// The old side is in the tree as written, `offset` lines from where
    /// the header says.
    Applied {
        /// Found line minus stated line.
        offset: i64,
    },
    /// Found only ignoring whitespace; the tree's lines were taken.
    Repaired {
        /// Found line minus stated line.
        offset: i64,
    },
    /// Found only after dropping `fuzz` context lines at each end.
    Fuzzed {
        /// Context lines dropped at each end.
        fuzz: usize,
        /// Found line minus stated line.
        offset: i64,
    },
    /// Not found (or the file is missing).
    Conflict {
        /// Why.
        why: String,
    },
}

/// One line of the per-hunk report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HunkReport {
    /// File path.
    pub path: String,
    /// Hunk number in the file, from 1.
    pub index: usize,
    /// Old start as stated.
    pub stated: usize,
    /// The section (function) text of the header.
    pub section: String,
    /// Outcome.
    pub status: HunkStatus,
}

impl HunkReport {
    /// True for a conflict.
    pub fn is_conflict(&self) -> bool {
        matches!(self.status, HunkStatus::Conflict { .. })
    }
}

impl fmt::Display for HunkReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = match &self.status {
            HunkStatus::Applied { offset } => format!("applied (offset {offset:+})"),
            HunkStatus::Repaired { offset } => {
                format!("repaired whitespace (offset {offset:+})")
            }
            HunkStatus::Fuzzed { fuzz, offset } => {
                format!("FUZZ {fuzz} (offset {offset:+}): check where it landed")
            }
            HunkStatus::Conflict { why } => format!("CONFLICT: {why}"),
        };
        let sec = if self.section.is_empty() {
            String::new()
        } else {
            format!(" {}", self.section)
        };
        write!(
            f,
            "{} hunk {} (@@ -{}{sec}): {st}",
            self.path, self.index, self.stated
        )
    }
}

fn strip_ab(p: &str) -> Option<String> {
    let p = p.split('\t').next().unwrap_or(p).trim();
    if p == "/dev/null" {
        return None;
    }
    Some(
        p.strip_prefix("a/")
            .or_else(|| p.strip_prefix("b/"))
            .unwrap_or(p)
            .to_string(),
    )
}

fn parse_header(l: &str) -> Option<(usize, usize, usize, String)> {
    let rest = l.strip_prefix("@@ -")?;
    let (ranges, section) = rest.split_once(" @@").unwrap_or((rest, ""));
    let (old, new) = ranges.split_once(" +")?;
    let num = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((a, b)) => Some((a.trim().parse().ok()?, b.trim().parse().ok()?)),
            None => Some((r.trim().parse().ok()?, 1)),
        }
    };
    let (os, ol) = num(old)?;
    let (_, nl) = num(new)?;
    Some((os, ol, nl, section.trim().to_string()))
}

/// Parses every `diff --git` section of `text` (mail text around it is
/// ignored; a `--` signature line ends the diff). A hunk ends when its
/// stated line counts are reached, or, in a dump that lost lines, at the
/// next `@@`, `diff --git` or signature.
pub fn parse(text: &str) -> Result<Vec<FilePatch>, String> {
    let mut files: Vec<FilePatch> = Vec::new();
    let mut in_diff = false;
    // Remaining old/new counts of the open hunk; None = no hunk open.
    let mut open: Option<(usize, usize)> = None;
    let mut minus: Option<String> = None;
    for raw in text.lines() {
        let l = raw.trim_end_matches('\r');
        if l.starts_with("diff --git ") {
            let path = l
                .split_whitespace()
                .last()
                .and_then(strip_ab)
                .ok_or_else(|| format!("bad diff line: {l}"))?;
            files.push(FilePatch {
                path,
                new_file: false,
                deleted: false,
                hunks: Vec::new(),
            });
            in_diff = true;
            open = None;
            minus = None;
            continue;
        }
        if !in_diff {
            continue;
        }
        if l == "--" || l == "-- " {
            // The mail signature: the diff is over.
            in_diff = false;
            open = None;
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if l.starts_with("@@ ") {
            let (os, ol, nl, section) =
                parse_header(l).ok_or_else(|| format!("{}: bad hunk header: {l}", file.path))?;
            file.hunks.push(Hunk {
                old_start: os,
                section,
                lines: Vec::new(),
            });
            open = Some((ol, nl));
            continue;
        }
        let Some((ol, nl)) = open else {
            // File header lines.
            if let Some(p) = l.strip_prefix("--- ") {
                minus = Some(p.to_string());
                if strip_ab(p).is_none() {
                    file.new_file = true;
                }
            } else if let Some(p) = l.strip_prefix("+++ ") {
                match strip_ab(p) {
                    Some(path) => file.path = path,
                    None => {
                        file.deleted = true;
                        if let Some(path) = minus.as_deref().and_then(strip_ab) {
                            file.path = path;
                        }
                    }
                }
            }
            continue;
        };
        if l.starts_with('\\') {
            continue; // "\ No newline at end of file"
        }
        let hunk = file.hunks.last_mut().expect("open hunk");
        let (kind, body) = match l.chars().next() {
            Some('+') => ('+', &l[1..]),
            Some('-') => ('-', &l[1..]),
            Some(' ') => (' ', &l[1..]),
            // A context line that lost its leading space, or a lost-space
            // blank line.
            _ => (' ', l),
        };
        hunk.lines.push(Line {
            kind,
            text: body.to_string(),
        });
        let (ol, nl) = match kind {
            '+' => (ol, nl.saturating_sub(1)),
            '-' => (ol.saturating_sub(1), nl),
            _ => (ol.saturating_sub(1), nl.saturating_sub(1)),
        };
        open = if ol == 0 && nl == 0 {
            None
        } else {
            Some((ol, nl))
        };
    }
    files.retain(|f| !f.hunks.is_empty());
    if files.is_empty() {
        return Err("no `diff --git` section with hunks found".into());
    }
    Ok(files)
}

fn norm(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Where a hunk's old side sits in `target` (0-based first line), exactly;
/// the candidate nearest `want` at or after `from`.
fn find_exact(target: &[&str], old: &[&str], want: usize, from: usize) -> Option<usize> {
    if old.is_empty() {
        return Some(want.clamp(from, target.len()));
    }
    (from..=target.len().saturating_sub(old.len()))
        .filter(|&i| target[i..i + old.len()] == *old)
        .min_by_key(|&i| i.abs_diff(want))
}

/// Whitespace-blind match: the old side's non-blank lines against the
/// tree's non-blank lines. Returns the tree line of each non-blank old
/// line, for the candidate nearest `want` at or after `from`.
fn find_loose(target: &[&str], old: &[&str], want: usize, from: usize) -> Option<Vec<usize>> {
    let nb: Vec<usize> = (from..target.len())
        .filter(|&i| !target[i].trim().is_empty())
        .collect();
    let tn: Vec<String> = nb.iter().map(|&i| norm(target[i])).collect();
    let on: Vec<String> = old
        .iter()
        .map(|s| norm(s))
        .filter(|s| !s.is_empty())
        .collect();
    if on.is_empty() || on.len() > nb.len() {
        return None;
    }
    (0..=nb.len() - on.len())
        .filter(|&k| tn[k..k + on.len()] == on[..])
        .min_by_key(|&k| nb[k].abs_diff(want))
        .map(|k| nb[k..k + on.len()].to_vec())
}

fn indent_of(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}

fn is_unbraced_control(t: &str) -> bool {
    let t = t.trim();
    let starts = [
        "if (", "if(", "else", "for (", "for(", "while (", "while(", "} else",
    ];
    starts.iter().any(|p| t.starts_with(p))
        && !t.ends_with(';')
        && !t.ends_with('{')
        && !t.ends_with('}')
}

/// Whether `t` (trimmed) is a line of a comment block after its opener.
fn is_comment_tail(t: &str) -> bool {
    t.starts_with('*') && !t.starts_with("*=")
}

/// Whether `t` (trimmed) ends a statement, a block or a comment, so the
/// line after it starts a new statement.
fn ends_statement(t: &str) -> bool {
    t.ends_with(';')
        || t.ends_with('{')
        || t.ends_with('}')
        || t.ends_with("*/")
        || t.starts_with('#')
}

/// The first line of the statement whose last line is `before[end]`:
/// back over continuation lines (lines after one that ends no statement).
fn statement_start(before: &[String], end: usize) -> usize {
    let mut i = end;
    while i > 0 {
        let Some(p) = before[..i].iter().rposition(|l| !l.trim().is_empty()) else {
            break;
        };
        if ends_statement(before[p].trim()) {
            break;
        }
        i = p;
    }
    i
}

/// Kernel-style indentation for an added line, from the lines before it.
pub fn reindent(line: &str, before: &[String]) -> String {
    let t = line.trim();
    if t.is_empty() {
        return String::new();
    }
    if t.starts_with('#') {
        return t.to_string();
    }
    // Preprocessor lines sit at column 0 whatever the depth: look past them.
    let Some(pi) = before
        .iter()
        .rposition(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    else {
        return t.to_string();
    };
    let prev = &before[pi];
    let mut base = indent_of(prev).to_string();
    let pt = prev.trim();
    if t.starts_with('*') && (pt.starts_with("/*") || is_comment_tail(pt)) && !pt.ends_with("*/") {
        let ind = if pt.starts_with("/*") {
            format!("{base} ")
        } else {
            base
        };
        return format!("{ind}{t}");
    }
    if is_comment_tail(pt) {
        // After a comment block: the depth of its opener, without the
        // space that lines up the stars.
        base = base.trim_end_matches(' ').to_string();
    }
    if t.starts_with("else") || t.starts_with("} else") {
        // Align with the nearest `if` or `else` at or above this depth.
        let depth = if pt.ends_with('{') || pt.starts_with('}') {
            base.len() + 1
        } else {
            base.len()
        };
        if let Some(r) = before.iter().rev().find(|l| {
            let lt = l.trim();
            (lt.starts_with("if") || lt.starts_with("else") || lt.starts_with("} else"))
                && indent_of(l).len() <= depth
        }) {
            return format!("{}{t}", indent_of(r));
        }
    }
    let mut ind = base;
    if pt.ends_with('{') || is_unbraced_control(pt) {
        ind.push('\t');
    } else if pt.ends_with(';') || pt.ends_with('}') {
        // After a statement that spans lines (a call with continuation
        // lines, or the body of an unbraced control line, itself perhaps
        // several lines): the depth of its first line.
        let first = statement_start(before, pi);
        if first < pi {
            ind = indent_of(&before[first]).to_string();
        }
    }
    if t.starts_with('}') {
        ind.pop();
    }
    format!("{ind}{t}")
}

/// The result of [`repair`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Repaired {
    /// A unified diff `git apply` takes (the hunks that were found).
    pub diff: String,
    /// One entry per hunk, in order.
    pub report: Vec<HunkReport>,
}

impl Repaired {
    /// True when a hunk conflicts.
    pub fn has_conflict(&self) -> bool {
        self.report.iter().any(HunkReport::is_conflict)
    }
}

/// A hunk located in the tree: its first tree line and its lines for the
/// output diff.
struct Placed {
    start: usize,
    old_len: usize,
    out: Vec<(char, String)>,
}

fn place_exact(h: &Hunk, at: usize) -> Placed {
    let out: Vec<(char, String)> = h.lines.iter().map(|l| (l.kind, l.text.clone())).collect();
    let old_len = out.iter().filter(|(k, _)| *k != '+').count();
    Placed {
        start: at,
        old_len,
        out,
    }
}

/// Builds the hunk from the tree's lines: `map` gives the tree line of
/// each non-blank old line of `lines`.
fn place_loose(lines: &[Line], map: &[usize], target: &[&str]) -> Placed {
    let leading_blank = lines
        .iter()
        .take_while(|l| l.kind != '+' && l.text.trim().is_empty())
        .count();
    let mut start = map[0];
    let mut lb = leading_blank;
    while lb > 0 && start > 0 && target[start - 1].trim().is_empty() {
        start -= 1;
        lb -= 1;
    }
    let mut cur = start;
    let mut out: Vec<(char, String)> = Vec::new();
    let mut next_map = 0;
    let mut rebuilt: Vec<String> = target[..start].iter().map(|s| s.to_string()).collect();
    for l in lines {
        match l.kind {
            '+' => {
                // Lines that kept their tab indentation are taken as they are.
                let t = if l.text.starts_with('\t') {
                    l.text.clone()
                } else {
                    reindent(&l.text, &rebuilt)
                };
                rebuilt.push(t.clone());
                out.push(('+', t));
            }
            k if l.text.trim().is_empty() => {
                // A blank old line: the tree's blank line when there is one
                // here, else the dump's blank line was not the tree's.
                if cur < target.len() && target[cur].trim().is_empty() {
                    out.push((k, target[cur].to_string()));
                    rebuilt.push(target[cur].to_string());
                    cur += 1;
                }
            }
            k => {
                let to = map[next_map];
                while cur < to {
                    // A blank tree line the dump lost: removed when it sits
                    // between removed lines, else context.
                    let prev_minus = out.last().is_some_and(|(pk, _)| *pk == '-');
                    let kind = if prev_minus && k == '-' { '-' } else { ' ' };
                    out.push((kind, target[cur].to_string()));
                    rebuilt.push(target[cur].to_string());
                    cur += 1;
                }
                out.push((k, target[to].to_string()));
                // A removed line is no context for the lines added after it.
                if k != '-' {
                    rebuilt.push(target[to].to_string());
                }
                cur = to + 1;
                next_map += 1;
            }
        }
    }
    Placed {
        start,
        old_len: cur - start,
        out,
    }
}

/// Context lines dropped: up to `fuzz` at each end (removed lines stay).
fn trim_context(lines: &[Line], fuzz: usize) -> (Vec<Line>, usize) {
    let lead = lines
        .iter()
        .take(fuzz)
        .take_while(|l| l.kind == ' ')
        .count();
    let trail = lines
        .iter()
        .rev()
        .take(fuzz)
        .take_while(|l| l.kind == ' ')
        .count();
    if lead + trail >= lines.len() {
        return (lines.to_vec(), 0);
    }
    (lines[lead..lines.len() - trail].to_vec(), lead)
}

/// Locates every hunk of `files` in the tree (`read(path)` gives a file's
/// text, `None` when missing) and writes the diff to apply. `fuzz` > 0
/// allows dropping that many context lines at each end of a hunk found no
/// other way.
pub fn repair(files: &[FilePatch], read: &dyn Fn(&str) -> Option<String>, fuzz: usize) -> Repaired {
    let mut r = Repaired::default();
    for f in files {
        let text = if f.new_file {
            Some(String::new())
        } else {
            read(&f.path)
        };
        let Some(text) = text else {
            for (i, h) in f.hunks.iter().enumerate() {
                r.report.push(HunkReport {
                    path: f.path.clone(),
                    index: i + 1,
                    stated: h.old_start,
                    section: h.section.clone(),
                    status: HunkStatus::Conflict {
                        why: "file not in the tree".into(),
                    },
                });
            }
            continue;
        };
        let target: Vec<&str> = text.lines().collect();
        let mut from = 0;
        let mut placed: Vec<Placed> = Vec::new();
        for (i, h) in f.hunks.iter().enumerate() {
            let want = h.old_start.saturating_sub(1);
            let old: Vec<&str> = h
                .lines
                .iter()
                .filter(|l| l.kind != '+')
                .map(|l| l.text.as_str())
                .collect();
            let mut status = None;
            if let Some(at) = find_exact(&target, &old, want, from) {
                let p = place_exact(h, at);
                status = Some(HunkStatus::Applied {
                    offset: at as i64 - want as i64,
                });
                from = p.start + p.old_len;
                placed.push(p);
            } else if !f.deleted {
                let mut try_fuzz = 0;
                while status.is_none() && try_fuzz <= fuzz {
                    let (lines, lead) = trim_context(&h.lines, try_fuzz);
                    if try_fuzz > 0 && lines.len() == h.lines.len() {
                        break;
                    }
                    let old: Vec<&str> = lines
                        .iter()
                        .filter(|l| l.kind != '+')
                        .map(|l| l.text.as_str())
                        .collect();
                    if let Some(map) = find_loose(&target, &old, want + lead, from) {
                        let p = place_loose(&lines, &map, &target);
                        let offset = p.start as i64 - (want + lead) as i64;
                        status = Some(if try_fuzz == 0 {
                            HunkStatus::Repaired { offset }
                        } else {
                            HunkStatus::Fuzzed {
                                fuzz: try_fuzz,
                                offset,
                            }
                        });
                        from = p.start + p.old_len;
                        placed.push(p);
                    }
                    try_fuzz += 1;
                }
            }
            let status = status.unwrap_or_else(|| HunkStatus::Conflict {
                why: "its old side is not in the tree, even ignoring whitespace".into(),
            });
            r.report.push(HunkReport {
                path: f.path.clone(),
                index: i + 1,
                stated: h.old_start,
                section: h.section.clone(),
                status,
            });
        }
        if placed.is_empty() {
            continue;
        }
        let (a, b) = if f.new_file {
            ("/dev/null".to_string(), format!("b/{}", f.path))
        } else if f.deleted {
            (format!("a/{}", f.path), "/dev/null".to_string())
        } else {
            (format!("a/{}", f.path), format!("b/{}", f.path))
        };
        r.diff
            .push_str(&format!("diff --git a/{0} b/{0}\n", f.path));
        if f.new_file {
            r.diff.push_str("new file mode 100644\n");
        }
        if f.deleted {
            r.diff.push_str("deleted file mode 100644\n");
        }
        r.diff.push_str(&format!("--- {a}\n+++ {b}\n"));
        let mut delta: i64 = 0;
        for p in &placed {
            let new_len = p.out.iter().filter(|(k, _)| *k != '-').count();
            let old_start = if p.old_len == 0 { p.start } else { p.start + 1 };
            let new_start = if new_len == 0 {
                (old_start as i64 + delta - 1).max(0)
            } else {
                old_start as i64 + delta
            };
            r.diff.push_str(&format!(
                "@@ -{},{} +{},{} @@\n",
                old_start, p.old_len, new_start, new_len
            ));
            for (k, t) in &p.out {
                r.diff.push(*k);
                r.diff.push_str(t);
                r.diff.push('\n');
            }
            delta += new_len as i64 - p.old_len as i64;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn tree(files: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = files
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move |p: &str| m.get(p).cloned()
    }

    const SRC: &str = "int a;\n\nstatic int f(int x)\n{\n\tif (x > 1)\n\t\treturn 1;\n\telse\n\t\treturn 0;\n}\n\nint b;\n";

    /// A proper diff against SRC.
    const GOOD: &str = "diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -5,4 +5,6 @@ static int f(int x)\n \tif (x > 1)\n \t\treturn 1;\n+\telse if (x < 0)\n+\t\treturn 2;\n \telse\n \t\treturn 0;\n";

    /// The same diff as a mail archive shows it: indentation gone, context
    /// lines without their leading space, mail text around it.
    const DUMP: &str = "Subject: a change\n\nSome words.\n---\ndiff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -5,4 +5,6 @@ static int f(int x)\nif (x > 1)\nreturn 1;\n+ else if (x < 0)\n+ return 2;\nelse\nreturn 0;\n--\n2.40.0\n";

    #[test]
    fn a_proper_diff_applies_as_is() {
        let files = parse(GOOD).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].hunks[0].lines.len(), 6);
        let r = repair(&files, &tree(&[("f.c", SRC)]), 0);
        assert_eq!(r.report[0].status, HunkStatus::Applied { offset: 0 });
        assert!(r.diff.contains("@@ -5,4 +5,6 @@"), "{}", r.diff);
        assert!(r.diff.contains("+\telse if (x < 0)\n+\t\treturn 2;\n"));
    }

    #[test]
    fn a_stripped_dump_is_repaired_and_reindented() {
        let files = parse(DUMP).unwrap();
        // The signature ended the diff; mail text before it is ignored.
        assert_eq!(files[0].hunks[0].lines.len(), 6);
        let r = repair(&files, &tree(&[("f.c", SRC)]), 0);
        assert_eq!(r.report[0].status, HunkStatus::Repaired { offset: 0 });
        // The tree's real lines, the added lines re-indented as in GOOD.
        let good = repair(&parse(GOOD).unwrap(), &tree(&[("f.c", SRC)]), 0);
        assert_eq!(r.diff, good.diff);
    }

    #[test]
    fn added_lines_take_the_depth_of_the_statement_before_them() {
        let b = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
        // After the body of an `if` whose condition spans three lines.
        let before = b(&[
            "\tif (!node_is_toptier(mem_node) &&",
            "\t    (mode & TIERING ||",
            "\t     !cpupid_valid(last_cpupid)))",
            "\t\treturn;",
            "",
        ]);
        assert_eq!(reindent("if (!enabled(p))", &before), "\tif (!enabled(p))");
        // Past a preprocessor line, to the code it sits in.
        let before = b(&["\t\t.write = w,", "\t},", "#endif", "#ifdef CONFIG_X"]);
        assert_eq!(reindent("{", &before), "\t{");
        // After a comment block: the opener's depth, not its stars'.
        let before = b(&["\t\t\t/*", "\t\t\t * why", "\t\t\t */"]);
        assert_eq!(reindent("if (x)", &before), "\t\t\tif (x)");
        // Inside the comment block the stars line up.
        let before = b(&["\t/*"]);
        assert_eq!(reindent("* why", &before), "\t * why");
    }

    #[test]
    fn offsets_and_lost_blank_lines_are_handled() {
        // Two lines more at the top of the tree; a dump that also lost the
        // blank line inside the old side.
        let src = format!("/* x */\n/* y */\n{SRC}");
        let dump = "diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -8,4 +8,5 @@\nreturn 0;\n}\n+ /* new */\nint b;\n";
        let r = repair(&parse(dump).unwrap(), &tree(&[("f.c", &src)]), 0);
        assert_eq!(r.report[0].status, HunkStatus::Repaired { offset: 2 });
        // The lost blank line comes back as context, between `}` and the
        // addition (it sat before `int b;`).
        assert!(
            r.diff
                .contains(" \t\treturn 0;\n }\n+/* new */\n \n int b;\n"),
            "{}",
            r.diff
        );
        assert!(r.diff.contains("@@ -10,4 +10,5 @@"), "{}", r.diff);
    }

    #[test]
    fn a_missing_old_side_is_a_conflict_and_fuzz_needs_asking() {
        // The first context line no longer exists in the tree.
        let d = "diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -3,3 +3,4 @@\n int gone_function(void);\n static int f(int x)\n {\n+\t/* hello */\n";
        let r = repair(&parse(d).unwrap(), &tree(&[("f.c", SRC)]), 0);
        assert!(r.has_conflict());
        assert!(r.diff.is_empty());
        let r = repair(&parse(d).unwrap(), &tree(&[("f.c", SRC)]), 1);
        assert_eq!(
            r.report[0].status,
            HunkStatus::Fuzzed {
                fuzz: 1,
                offset: -1
            }
        );
        assert!(r
            .diff
            .contains(" static int f(int x)\n {\n+\t/* hello */\n"));
        assert!(r.report[0].to_string().contains("FUZZ 1"));
        // A file the tree lacks is a conflict too.
        let r = repair(&parse(GOOD).unwrap(), &tree(&[]), 2);
        assert!(r.report[0].to_string().contains("not in the tree"));
    }

    #[test]
    fn reindent_follows_kernel_style() {
        let before: Vec<String> = ["\tif (a) {", "\t\tx = 1;"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(reindent("y = 2;", &before[..1]), "\t\ty = 2;");
        assert_eq!(reindent("}", &before), "\t}");
        assert_eq!(reindent("#define X 1", &before), "#define X 1");
        let b2: Vec<String> = ["\tif (a)", "\t\tx = 1;"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(reindent("else", &b2), "\telse");
        assert_eq!(reindent("z = 3;", &b2), "\tz = 3;");
        // A blank line between the body and the new line changes nothing.
        let b4: Vec<String> = ["\tif (a)", "\t\tgoto out;", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(reindent("if (b) {", &b4), "\tif (b) {");
        let b3: Vec<String> = ["\t/*"].iter().map(|s| s.to_string()).collect();
        assert_eq!(reindent("* text", &b3), "\t * text");
    }

    #[test]
    fn hunks_of_one_file_are_found_in_order() {
        let d = "diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -1,1 +1,2 @@\n int a;\n+int a2;\n@@ -11,1 +12,2 @@\n int b;\n+int b2;\n";
        let r = repair(&parse(d).unwrap(), &tree(&[("f.c", SRC)]), 0);
        assert!(r
            .report
            .iter()
            .all(|h| matches!(h.status, HunkStatus::Applied { .. })));
        assert!(r.diff.contains("@@ -11,1 +12,2 @@"), "{}", r.diff);
        assert!(parse("no diff here").is_err());
    }
}
