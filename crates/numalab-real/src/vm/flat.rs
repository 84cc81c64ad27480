//! Mail dumps that lost their line breaks: some archives flatten a whole
//! message, diff included, into one line (every newline and run of
//! indentation became one space), and keep it quoted-printable (`=3D` for
//! `=`, `= ` where a soft line break was). Seed 000 (proposal 4) is such a
//! dump. This file rebuilds the hunks of such a diff against the tree:
//! each hunk's stated line counts and the tree's own lines tell where one
//! line ends and the next begins.
//!
//! For each hunk the body (the text after its `@@ … @@` header, which
//! starts with the header's function-name text) is cut into words; the
//! search tries each place in the file, nearest the stated line first, and
//! each number of leading words as the function-name text, and walks the
//! tree from there: a tree line is a context line when the next words,
//! whitespace ignored, spell it, a removed line when they spell it after a
//! `-`; a word starting with `+` opens an added line that runs up to a
//! later word (shortest first). A hunk is found when its old and new line
//! counts are reached exactly. Context and removed lines are then the
//! tree's own text and added lines are re-indented from the lines before
//! them ([`super::patch::reindent`]), so the result goes through
//! [`super::patch::repair`] like any diff.
//!
//! Left out: file creation and deletion, renames, binary diffs, more than
//! one message per dump, and whitespace inside added lines (runs of it are
//! one space, as the dump left them). A hunk that cannot be found comes out
//! as one line holding its whole body, which the repair then reports as a
//! conflict.

use super::patch::{reindent, FilePatch, Hunk, Line};
use std::collections::HashSet;

/// Words an added line may span at most; the longest line of a kernel
/// patch is far shorter.
const MAX_ADDED_WORDS: usize = 40;

/// Words of function-name text after a hunk header tried at most.
const MAX_SECTION_WORDS: usize = 24;

/// The word that stands for a blank context line: quoted-printable keeps
/// such a line's one space as a word of its own, `=20`.
const BLANK: &str = "\u{1}";

/// True when `text` holds a diff whose lines were flattened: a `diff --git`
/// and a hunk header on the same line.
pub fn is_flattened(text: &str) -> bool {
    text.lines()
        .any(|l| l.contains("diff --git ") && l.contains(" @@ ") && l.contains("@@ -"))
}

/// Undoes quoted-printable encoding as the flattening left it: `=XX` is a
/// byte, `=` before a space is a soft line break (both go).
pub fn decode_qp(text: &str) -> String {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'=' {
            if i + 2 < b.len() {
                if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
            }
            if i + 1 < b.len() && b[i + 1] == b' ' {
                i += 2;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A hunk header `@@ -a[,b] +c[,d] @@` at the start of `s`: (old start,
/// old count, new count, bytes of the header).
fn hunk_header(s: &str) -> Option<(usize, usize, usize, usize)> {
    let rest = s.strip_prefix("@@ -")?;
    let end = rest.find(" @@")?;
    let mut sides = rest[..end].split(" +");
    let range = |r: &str| -> Option<(usize, usize)> {
        let mut it = r.split(',');
        let a = it.next()?.parse().ok()?;
        let b = match it.next() {
            Some(n) => n.parse().ok()?,
            None => 1,
        };
        Some((a, b))
    };
    let (os, ol) = range(sides.next()?)?;
    let (_, nl) = range(sides.next()?)?;
    if sides.next().is_some() {
        return None;
    }
    Some((os, ol, nl, 4 + end + 3))
}

/// One hunk as found in the dump, before it is placed.
struct RawHunk {
    old_start: usize,
    old_len: usize,
    new_len: usize,
    body: String,
}

/// One file section of the dump.
struct RawFile {
    path: String,
    hunks: Vec<RawHunk>,
}

/// Cuts the flattened diff into files and hunks.
fn split(text: &str) -> Result<Vec<RawFile>, String> {
    let mut files: Vec<RawFile> = Vec::new();
    let sections: Vec<&str> = text.split("diff --git ").skip(1).collect();
    for sec in sections {
        let mut words = sec.split_whitespace();
        let _a = words.next();
        let b = words
            .next()
            .and_then(|w| w.strip_prefix("b/"))
            .ok_or_else(|| format!("bad diff line: diff --git {}", first_words(sec, 3)))?;
        let mut hunks = Vec::new();
        let mut rest = sec;
        while let Some(at) = rest.find("@@ -") {
            let Some((os, ol, nl, len)) = hunk_header(&rest[at..]) else {
                rest = &rest[at + 4..];
                continue;
            };
            let after = &rest[at + len..];
            let next = next_header(after).unwrap_or(after.len());
            hunks.push(RawHunk {
                old_start: os,
                old_len: ol,
                new_len: nl,
                body: after[..next].to_string(),
            });
            rest = &after[next..];
        }
        if !hunks.is_empty() {
            files.push(RawFile {
                path: b.to_string(),
                hunks,
            });
        }
    }
    if files.is_empty() {
        return Err("no `diff --git` section with hunks found".into());
    }
    Ok(files)
}

fn first_words(s: &str, n: usize) -> String {
    s.split_whitespace().take(n).collect::<Vec<_>>().join(" ")
}

/// Where the next well-formed hunk header starts in `s`.
fn next_header(s: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find("@@ -") {
        if hunk_header(&s[from + i..]).is_some() {
            return Some(from + i);
        }
        from += i + 4;
    }
    None
}

fn norm(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The search for one hunk's lines.
struct Walk<'a> {
    words: &'a [&'a str],
    tree: &'a [&'a str],
    norms: &'a [String],
    old_len: usize,
    new_len: usize,
    /// Whether words may be left over after the hunk (the dump's last
    /// hunk, followed by the signature).
    tail_ok: bool,
    failed: HashSet<(usize, usize, usize, usize)>,
}

impl Walk<'_> {
    /// The word after the words from `w` that spell `want` (whitespace
    /// ignored), when they do.
    fn spell(&self, w: usize, want: &str) -> Option<usize> {
        if want.is_empty() {
            return None;
        }
        let mut got = String::new();
        let mut k = w;
        while got.len() < want.len() && k < self.words.len() {
            got.push_str(self.words[k]);
            k += 1;
            if !want.starts_with(got.as_str()) {
                return None;
            }
        }
        (got == want).then_some(k)
    }

    /// Where an added line starting at word `w` may end (the word after
    /// it), likeliest first: ends after a word that can end a C line and
    /// where the next line plainly begins (a word that starts an added or
    /// removed line, a blank marker, the signature, the next tree line, or
    /// the end); then the other ends after such a word; then the rest;
    /// shorter before longer within each. A lone `+` is a blank
    /// added line only when nothing else fits: mostly it is an indented
    /// line whose indentation became that space.
    fn added_ends(&self, s: usize, w: usize, i: usize) -> Vec<usize> {
        let n = self.words.len();
        let last = (w + MAX_ADDED_WORDS).min(n);
        let next_line = self.norms.get(s + i).filter(|_| i < self.old_len);
        let starts_line = |e: usize| -> bool {
            let Some(x) = self.words.get(e) else {
                return true;
            };
            // A blank marker, or the signature that ends the diff.
            if *x == BLANK || *x == "--" {
                return true;
            }
            let op = |c: Option<char>| matches!(c, Some('=') | Some('+') | Some('-') | Some('>'));
            if let Some(rest) = x.strip_prefix('+') {
                return !op(rest.chars().next());
            }
            if let Some(rest) = x.strip_prefix('-') {
                return !op(rest.chars().next());
            }
            next_line.is_some_and(|l| !l.is_empty() && l.starts_with(*x))
        };
        let ends_c = |e: usize| -> bool {
            let lastw = self.words[e - 1];
            e == w + 1
                || [";", "{", "}", ",", ")", "*/", "(", "&&", "||", ":"]
                    .iter()
                    .any(|t| lastw.ends_with(t))
                || self.words[w].starts_with("+#")
                || self.words[w] == "+*"
                || self.words[w].starts_with("+*")
                || self.words[w].starts_with("+/*")
        };
        let mut good = Vec::new();
        let mut complete = Vec::new();
        let mut rest = Vec::new();
        let mut blank = Vec::new();
        for e in w + 1..=last {
            if self.words[w + 1..e].contains(&BLANK) {
                break;
            }
            if e == w + 1
                && self.words[w] == "+"
                && !(starts_line(e)
                    && self
                        .words
                        .get(e)
                        .is_some_and(|x| x.starts_with('+') || *x == BLANK))
            {
                blank.push(e);
            } else if starts_line(e) && ends_c(e) {
                good.push(e);
            } else if ends_c(e) {
                complete.push(e);
            } else {
                rest.push(e);
            }
        }
        good.extend(complete);
        good.extend(rest);
        good.extend(blank);
        good
    }

    /// Depth-first search from word `w`, tree line `i` (relative to the
    /// start `s`), with `r` removed and `a` added lines so far; pushes the
    /// lines found onto `out`.
    fn go(
        &mut self,
        s: usize,
        w: usize,
        i: usize,
        r: usize,
        a: usize,
        out: &mut Vec<(char, String)>,
    ) -> bool {
        let new_so_far = i - r + a;
        if i == self.old_len && new_so_far == self.new_len {
            return self.tail_ok || self.words[w..].iter().all(|x| *x == BLANK);
        }
        if new_so_far > self.new_len || self.failed.contains(&(w, i, r, a)) {
            return false;
        }
        if i < self.old_len && s + i < self.tree.len() {
            let line = self.tree[s + i];
            let n = &self.norms[s + i];
            if n.is_empty() {
                // A blank tree line: its marker when the dump kept one, or
                // no word at all.
                out.push((' ', line.to_string()));
                if self.words.get(w) == Some(&BLANK) && self.go(s, w + 1, i + 1, r, a, out) {
                    return true;
                }
                if self.go(s, w, i + 1, r, a, out) {
                    return true;
                }
                out.pop();
            } else if let Some(k) = self.spell(w, n) {
                out.push((' ', line.to_string()));
                if self.go(s, k, i + 1, r, a, out) {
                    return true;
                }
                out.pop();
            }
            if let Some(rest) = self.words.get(w).and_then(|x| x.strip_prefix('-')) {
                let k = if n.is_empty() {
                    rest.is_empty().then_some(w + 1)
                } else if rest.is_empty() {
                    self.spell(w + 1, n)
                } else {
                    let n2 = format!("-{n}");
                    self.spell(w, &n2)
                };
                if let Some(k) = k {
                    out.push(('-', line.to_string()));
                    if self.go(s, k, i + 1, r + 1, a, out) {
                        return true;
                    }
                    out.pop();
                }
            }
        }
        if let Some(first) = self.words.get(w).and_then(|x| x.strip_prefix('+')) {
            for e in self.added_ends(s, w, i) {
                let mut text = first.to_string();
                for x in &self.words[w + 1..e] {
                    if !text.is_empty() {
                        text.push(' ');
                    }
                    text.push_str(x);
                }
                out.push(('+', text));
                if self.go(s, e, i, r, a + 1, out) {
                    return true;
                }
                out.pop();
            }
        }
        self.failed.insert((w, i, r, a));
        false
    }
}

/// A hunk placed in the tree: its start line (0-based), its section
/// text, and its lines (marker, text).
type Placed = (usize, String, Vec<(char, String)>);

/// Places one hunk: its lines (tree text for context and removed lines,
/// added lines as dumped), its start line (0-based) and its section text.
fn place(h: &RawHunk, tree: &[&str], tail_ok: bool) -> Option<Placed> {
    let words: Vec<&str> = h.body.split_whitespace().collect();
    let norms: Vec<String> = tree.iter().map(|l| norm(l)).collect();
    let want = h.old_start.saturating_sub(1);
    let mut starts: Vec<usize> = (0..=tree.len().saturating_sub(h.old_len)).collect();
    starts.sort_by_key(|&s| (s.abs_diff(want), s));
    // The fewest words of function-name text first (each word more is one
    // word less of the hunk), then the place nearest the stated line.
    for sec in 0..=MAX_SECTION_WORDS.min(words.len()) {
        let body = &words[sec..];
        let Some(w0) = body.first() else {
            break;
        };
        let marked = w0.starts_with('+') || w0.starts_with('-');
        for &s in &starts {
            // Cheap first check: the first non-blank old line starts here.
            if !marked {
                let first = norms[s..(s + h.old_len).min(tree.len())]
                    .iter()
                    .find(|n| !n.is_empty());
                let ok = first.is_some_and(|n| n.starts_with(*w0) || w0.starts_with(n.as_str()));
                if !ok {
                    continue;
                }
            }
            let mut walk = Walk {
                words: body,
                tree,
                norms: &norms,
                old_len: h.old_len,
                new_len: h.new_len,
                tail_ok,
                failed: HashSet::new(),
            };
            let mut out = Vec::new();
            if walk.go(s, 0, 0, 0, 0, &mut out) {
                return Some((s, words[..sec].join(" "), out));
            }
        }
    }
    None
}

/// Rebuilds the diff of a flattened dump against the tree (`read(path)`
/// gives a file's text). Each hunk comes out with the tree's lines as its
/// context and removed lines, its added lines re-indented kernel style,
/// and its stated start line kept (so the report shows the offset).
pub fn unflatten(
    text: &str,
    read: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FilePatch>, String> {
    let qp = text
        .to_ascii_lowercase()
        .contains("content-transfer-encoding: quoted-printable");
    let decoded = if qp {
        // Mark blank context lines before `=20` becomes a space.
        let marked: Vec<&str> = text
            .split(' ')
            .map(|w| if w == "=20" { BLANK } else { w })
            .collect();
        decode_qp(&marked.join(" "))
    } else {
        text.to_string()
    };
    let raw = split(&decoded)?;
    let nfiles = raw.len();
    let mut files = Vec::new();
    for (fi, f) in raw.into_iter().enumerate() {
        let src = read(&f.path);
        let tree_text = src.unwrap_or_default();
        let tree: Vec<&str> = tree_text.lines().collect();
        let nh = f.hunks.len();
        let mut hunks = Vec::new();
        for (hi, h) in f.hunks.iter().enumerate() {
            let tail_ok = fi + 1 == nfiles && hi + 1 == nh;
            let Some((s, section, lines)) = place(h, &tree, tail_ok) else {
                hunks.push(Hunk {
                    old_start: h.old_start,
                    section: String::new(),
                    lines: vec![Line {
                        kind: ' ',
                        text: h.body.trim().to_string(),
                    }],
                });
                continue;
            };
            let mut before: Vec<String> = tree[..s].iter().map(|l| l.to_string()).collect();
            let mut out = Vec::new();
            for (k, t) in lines {
                let t = if k == '+' { reindent(&t, &before) } else { t };
                // A removed line is no context for the lines added after it.
                if k != '-' {
                    before.push(t.clone());
                }
                out.push(Line { kind: k, text: t });
            }
            hunks.push(Hunk {
                old_start: h.old_start,
                section,
                lines: out,
            });
        }
        files.push(FilePatch {
            path: f.path,
            new_file: false,
            deleted: false,
            hunks,
        });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::build::intake;
    use crate::vm::patch::{parse, repair, HunkStatus};

    const SRC: &str = "int a;\n\nstatic int f(int x)\n{\n\tif (x > 1)\n\t\treturn 1;\n\n\treturn 0;\n}\n\nint b = 2;\n";

    /// A proper diff against SRC: two hunks, an added blank line, an `=`.
    const GOOD: &str = "diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -5,5 +5,8 @@ static int f(int x)\n \tif (x > 1)\n \t\treturn 1;\n \n+\tif (x < 0)\n+\t\treturn 2;\n+\n \treturn 0;\n }\n@@ -10,2 +13,2 @@\n \n-int b = 2;\n+int b = 3;\n";

    /// `diff` as an archive that flattens a quoted-printable mail shows
    /// it: indentation gone, each line one space from the next, `=` as
    /// `=3D`, a blank context line as `=20`.
    fn flatten(diff: &str) -> String {
        let mut words = vec![
            "From: someone".to_string(),
            "Content-Transfer-Encoding: quoted-printable".to_string(),
            "Subject: a change ---".to_string(),
        ];
        for l in diff.lines() {
            let l = l.replace('=', "=3D");
            let (mark, rest) = match l.chars().next() {
                Some(c @ ('+' | '-')) if !l.starts_with("---") && !l.starts_with("+++") => {
                    (c.to_string(), l[1..].to_string())
                }
                Some(' ') => (String::new(), l[1..].to_string()),
                _ => (String::new(), l.clone()),
            };
            let body = rest.split_whitespace().collect::<Vec<_>>().join(" ");
            if mark.is_empty() && body.is_empty() {
                words.push("=20".to_string());
            } else if body.is_empty() {
                words.push(mark);
            } else if mark.is_empty() {
                words.push(body);
            } else {
                words.push(format!(
                    "{mark}{}",
                    if rest.starts_with(char::is_whitespace) {
                        format!(" {body}")
                    } else {
                        body
                    }
                ));
            }
        }
        words.push("--=20 2.40.0".into());
        words.join(" ")
    }

    fn tree(src: &'static str) -> impl Fn(&str) -> Option<String> {
        move |p: &str| (p == "f.c").then(|| src.to_string())
    }

    #[test]
    fn quoted_printable_is_decoded_with_soft_breaks() {
        assert_eq!(
            decode_qp("a =3D b=3B c= d=C3=BD =zz"),
            "a = b; cd\u{fd} =zz"
        );
    }

    #[test]
    fn only_a_diff_with_flattened_lines_counts_as_flattened() {
        assert!(!is_flattened(GOOD));
        let flat = flatten(GOOD);
        assert_eq!(flat.lines().count(), 1);
        assert!(is_flattened(&flat));
    }

    #[test]
    fn a_flattened_dump_gives_the_proper_diff_back() {
        let flat = flatten(GOOD);
        let r = intake(&flat, &tree(SRC), 0).unwrap();
        let good = repair(&parse(GOOD).unwrap(), &tree(SRC), 0);
        assert_eq!(r.diff, good.diff);
        // Rebuilt hunks count as repaired, never as applied as written.
        assert_eq!(r.report.len(), 2);
        for h in &r.report {
            assert_eq!(h.status, HunkStatus::Repaired { offset: 0 }, "{h}");
        }
        assert_eq!(r.report[0].section, "static int f(int x)");
    }

    #[test]
    fn a_flattened_hunk_is_found_at_an_offset() {
        let moved: &'static str =
            Box::leak(format!("/* a */\n/* b */\n/* c */\n{SRC}").into_boxed_str());
        let r = intake(&flatten(GOOD), &tree(moved), 0).unwrap();
        assert_eq!(r.report[0].status, HunkStatus::Repaired { offset: 3 });
        assert!(r.diff.contains("@@ -8,5 +8,8 @@"), "{}", r.diff);
        assert!(
            r.diff.contains("+\tif (x < 0)\n+\t\treturn 2;\n+\n"),
            "{}",
            r.diff
        );
    }

    #[test]
    fn a_flattened_hunk_that_is_not_in_the_tree_conflicts() {
        let other = "int a;\n\nstatic int g(void)\n{\n\treturn 7;\n}\n\nint b = 2;\n";
        let r = intake(&flatten(GOOD), &tree(other), 0).unwrap();
        assert!(r.report[0].is_conflict(), "{}", r.report[0]);
        // The second hunk is still found.
        assert!(!r.report[1].is_conflict(), "{}", r.report[1]);
    }
}
