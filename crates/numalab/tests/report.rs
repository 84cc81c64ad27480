//! End-to-end tests of `numalab report` and `reproduce --html` through the
//! built binary: the page holds the compare text's figures, is the same
//! for the same inputs, is the same from `reproduce --html` and from
//! `report` of the `--json-dir` directory, escapes labels, and bad input
//! gets one clear error. (`.ci/browser-test` loads such pages in
//! Chromium.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn numalab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .output()
        .expect("run numalab")
}

/// Runs numalab, asserting success; returns stdout.
fn ok(args: &[&str]) -> String {
    let o = numalab(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// A fresh directory for one test (removed when the test passes).
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numalab-report-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Two small runs of numa02 on tiny-2n, balancing off and on, as RunSets
/// labelled `off` and `on`.
fn runs(d: &Path) -> (String, String) {
    let mut out = Vec::new();
    for (label, v) in [("off", 0), ("on", 1)] {
        let p = d.join(format!("{label}.json"));
        let set = format!("kernel.numa_balancing={v}");
        ok(&[
            "run",
            "-m",
            "tiny-2n",
            "-w",
            "numa02",
            "--scale",
            "0.05",
            "--iterations",
            "2",
            "--set",
            &set,
            "--label",
            label,
            "--json",
            s(&p),
        ]);
        out.push(s(&p).to_string());
    }
    (out[0].clone(), out[1].clone())
}

/// The text of every `<td>`/`<th>` of the tables of class `class`, one
/// string of tokens per row (character references decoded), body rows
/// only.
fn table_rows(html: &str, class: &str) -> Vec<String> {
    let mut rows = Vec::new();
    for table in html.split(&format!("<table class=\"{class}\">")).skip(1) {
        let table = table.split("</table>").next().unwrap();
        let body = table.split("<tbody>").nth(1).unwrap();
        for tr in body.split("<tr>").skip(1) {
            let mut text = String::new();
            let mut inside = false;
            for c in tr.chars() {
                match c {
                    '<' => {
                        inside = true;
                        text.push(' ');
                    }
                    '>' => inside = false,
                    c if !inside => text.push(c),
                    _ => {}
                }
            }
            let text = text
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&amp;", "&");
            rows.push(text.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    rows
}

/// The row lines of compare text's tables: blocks with a header (its
/// lines start with blanks), without the header; a one-line note between
/// the tables is not a table.
fn text_rows(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|b| b.lines().any(|l| l.starts_with(' ')))
        .flat_map(str::lines)
        .filter(|l| !l.trim().is_empty() && !l.starts_with(' '))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn the_page_holds_the_compare_figures_and_is_the_same_each_time() {
    let d = dir("runs");
    let (off, on) = runs(&d);
    let text = ok(&["compare", &off, &on]);
    let (a, b) = (d.join("a"), d.join("b"));
    ok(&["report", &off, &on, "-o", s(&a)]);
    ok(&["report", &off, &on, "-o", s(&b)]);
    let page = std::fs::read_to_string(a.join("index.html")).unwrap();
    assert_eq!(page, std::fs::read_to_string(b.join("index.html")).unwrap());
    let rows = table_rows(&page, "compare");
    assert!(rows.len() > 20, "{rows:?}");
    assert_eq!(rows, text_rows(&text));
    // The knobs table puts the knob that differs first, and the machine
    // and per-node memory figures are there.
    let knobs = table_rows(&page, "fields");
    assert_eq!(knobs[0], "kernel.numa_balancing 0 1");
    assert!(page.contains("machine tiny-2n (columns off, on)"));
    assert_eq!(page.matches("memory per node").count(), 2, "one per column");
    assert!(page.contains("access latency"));
    // Nothing is left in the output directory but the page.
    let files: Vec<_> = std::fs::read_dir(&a).unwrap().collect();
    assert_eq!(files.len(), 1);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn reproduce_html_and_report_of_its_json_dir_agree() {
    let d = dir("repro");
    let (json, html, again) = (d.join("json"), d.join("html"), d.join("again"));
    let text = ok(&[
        "reproduce",
        "numa-balancing-threadlocal",
        "--scale",
        "0.01",
        "--json-dir",
        s(&json),
        "--html",
        s(&html),
    ]);
    assert!(json.join("reproduction.json").is_file());
    ok(&["report", s(&json), "-o", s(&again)]);
    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert_eq!(
        page,
        std::fs::read_to_string(again.join("index.html")).unwrap()
    );
    // The verdict rows are the text's modeled-vs-published rows.
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.starts_with("config ")).unwrap();
    let want: Vec<String> = lines[start + 1..]
        .iter()
        .take_while(|l| !l.starts_with('['))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(table_rows(&page, "verdicts"), want);
    // At 0.01 the balancing-on run ends before its first scan: its ratio
    // is not modeled, shown muted like the figures not judged below scale 1.
    assert!(page.contains("class=\"text muted\">not modeled at this scale [1]"));
    // The text without --html is what it was.
    let plain = ok(&["reproduce", "numa-balancing-threadlocal", "--scale", "0.01"]);
    assert_eq!(plain, text);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn labels_are_escaped() {
    let d = dir("escape");
    let p = d.join("r.json");
    ok(&[
        "run",
        "-m",
        "tiny-2n",
        "-w",
        "numa02",
        "--scale",
        "0.01",
        "--iterations",
        "2",
        "--label",
        "<b>x</b>",
        "--json",
        s(&p),
    ]);
    ok(&["report", s(&p), "-o", s(&d.join("out"))]);
    let page = std::fs::read_to_string(d.join("out/index.html")).unwrap();
    assert!(page.contains("&lt;b&gt;x&lt;/b&gt;"));
    assert!(!page.contains("<b>x"));
    let _ = std::fs::remove_dir_all(&d);
}

/// Asserts exit 2 with one error line containing `needle`.
fn fails_with(args: &[&str], needle: &str) {
    let o = numalab(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("numalab: error:") && err.contains(needle),
        "{err}"
    );
}

#[test]
fn bad_input_is_named() {
    let d = dir("bad");
    let out = d.join("out");
    fails_with(
        &["report", s(&d.join("none.json")), "-o", s(&out)],
        "none.json",
    );
    // A directory that is not a reproduction's --json-dir.
    fails_with(&["report", s(&d), "-o", s(&out)], "reproduction.json");
    let junk = d.join("junk.json");
    std::fs::write(&junk, "{").unwrap();
    fails_with(&["report", s(&junk), "-o", s(&out)], "not JSON");
    // A --json-dir whose RunSet is gone.
    let json = d.join("json");
    ok(&[
        "reproduce",
        "numa-balancing-threadlocal",
        "--scale",
        "0.01",
        "--json-dir",
        s(&json),
    ]);
    std::fs::remove_file(json.join("balancing-on.json")).unwrap();
    fails_with(&["report", s(&json), "-o", s(&out)], "balancing-on.json");
    assert!(!out.join("index.html").exists());
    // Different machines are refused unless forced, as by compare.
    let (a, b) = (d.join("a.json"), d.join("b.json"));
    ok(&[
        "run",
        "-m",
        "tiny-2n",
        "-w",
        "numa02",
        "--scale",
        "0.01",
        "--json",
        s(&a),
    ]);
    ok(&[
        "run",
        "-m",
        "4s-48",
        "-w",
        "numa02",
        "--scale",
        "0.01",
        "--json",
        s(&b),
    ]);
    fails_with(&["report", s(&a), s(&b), "-o", s(&out)], "--force");
    ok(&["report", s(&a), s(&b), "-o", s(&out), "--force"]);
    assert!(out.join("index.html").is_file());
    let _ = std::fs::remove_dir_all(&d);
}
