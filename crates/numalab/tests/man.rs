//! The man pages through the built binary: `numalab man --out DIR` writes
//! a page for every page another names, each page has the options its
//! subcommand's `--help` lists, and `numalab man [SUBCOMMAND]` prints the
//! same pages. Left out: how man(1) lays the roff out.

use std::path::Path;
use std::process::{Command, Output};

fn numalab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .output()
        .expect("run numalab")
}

/// The pages `text` names, `numalab\-run(1)` read as `numalab-run`.
fn named_pages(text: &str) -> Vec<String> {
    let plain = text.replace("\\-", "-");
    let mut out = Vec::new();
    for (i, _) in plain.match_indices("(1)") {
        let start = plain[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .map_or(0, |j| j + 1);
        let name = &plain[start..i];
        if name.starts_with("numalab") {
            out.push(name.to_string());
        }
    }
    out
}

/// The long options `--help` shows for the subcommand path `words`.
fn help_options(words: &[&str]) -> Vec<String> {
    let mut args = words.to_vec();
    args.push("--help");
    let o = numalab(&args);
    assert!(o.status.success(), "numalab {args:?}");
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .flat_map(|l| l.split([' ', ',', '=', '<', '[']))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_string)
        .collect()
}

fn pages_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("man dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_named_page_exists_and_has_its_subcommands_options() {
    let d = tempfile::tempdir().expect("tempdir");
    let dir = d.path().join("man1");
    let o = numalab(&["man", "--out", dir.to_str().expect("utf-8 path")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = pages_in(&dir);
    for must in [
        "numalab.1",
        "numalab-run.1",
        "numalab-compare.1",
        "numalab-machine-import.1",
        "numalab-vm-kernel-build.1",
    ] {
        assert!(files.contains(&must.to_string()), "{must} not in {files:?}");
    }
    assert!(!files.contains(&"numalab-help.1".to_string()));
    for file in &files {
        let text = std::fs::read_to_string(dir.join(file)).expect("read page");
        for named in named_pages(&text) {
            assert!(
                files.contains(&format!("{named}.1")),
                "{file} names {named}(1), which was not generated"
            );
        }
        let page = file.strip_suffix(".1").expect("a .1 file");
        let words: Vec<&str> = page.split('-').skip(1).collect();
        let options = help_options(&words);
        for opt in &options {
            assert!(
                text.contains(&opt.replace('-', "\\-")),
                "{file} lacks {opt}, which `numalab {} --help` lists",
                words.join(" ")
            );
        }
        if file != "numalab.1" {
            assert!(text.contains("SEE ALSO"), "{file} has no SEE ALSO");
        }
    }
    // A page with options the test must see: run's.
    let run = help_options(&["run"]);
    assert!(run.contains(&"--machine".to_string()) && run.contains(&"--scale".to_string()));
}

#[test]
fn man_prints_the_page_it_is_asked_for() {
    let d = tempfile::tempdir().expect("tempdir");
    let o = numalab(&["man", "--out", d.path().to_str().expect("utf-8 path")]);
    assert!(o.status.success());
    for (args, file) in [
        (&["man"][..], "numalab.1"),
        (&["man", "run"][..], "numalab-run.1"),
        (
            &["man", "machine", "import"][..],
            "numalab-machine-import.1",
        ),
    ] {
        let o = numalab(args);
        assert!(o.status.success(), "{args:?}");
        let want = std::fs::read(d.path().join(file)).expect("page");
        assert_eq!(o.stdout, want, "numalab {args:?} is not {file}");
    }
    let o = numalab(&["man", "bogus"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("man bogus: no such subcommand") && err.contains("machine import"));
}

#[test]
fn sweep_help_describes_the_file_format() {
    let o = numalab(&["sweep", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    for key in [
        "machines = ",
        "workloads = ",
        "[knobs]",
        "[[points]]",
        "results.csv",
    ] {
        assert!(help.contains(key), "sweep --help lacks {key}:\n{help}");
    }
}
