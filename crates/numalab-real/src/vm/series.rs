//! The project's patch series for the guest kernel (`vm/patches/6.12/`):
//! the five proposals as one series on Debian's linux-source-6.12, for
//! `numalab vm kernel build --series`.
//!
//! The `series` file lists one patch a line, `<proposal> <patch>
//! [fuzz=N]`, in the order they apply. A patch is either `seed:NNN`, a
//! posting read at build time from the seeds directory (`NNN_*.txt`;
//! postings are never copied into the project), or one of our own patches,
//! which are compiled into the binary (so a build does not depend on the
//! working directory and the cache key covers their exact bytes).
//! Proposals are named `p1` .. `p5`; a selection keeps the series order.
//!
//! Left out: series for other kernel versions, and patches that are not in
//! [`OWN_PATCHES`] (a new file needs a line there; a test checks the two
//! agree).

use super::build::PatchInput;
use std::path::Path;

/// The `series` file.
pub const SERIES: &str = include_str!("../../../../vm/patches/6.12/series");

/// Our own patches, by file name.
pub const OWN_PATCHES: &[(&str, &str)] = &[
    (
        "p1-01-numa-2013-switches.patch",
        include_str!("../../../../vm/patches/6.12/p1-01-numa-2013-switches.patch"),
    ),
    (
        "p2-01-numa-scan-async.patch",
        include_str!("../../../../vm/patches/6.12/p2-01-numa-scan-async.patch"),
    ),
    (
        "p3-01-numa-task-mig-sentinel-and-thp.patch",
        include_str!("../../../../vm/patches/6.12/p3-01-numa-task-mig-sentinel-and-thp.patch"),
    ),
    (
        "p4-01-numa-work-single-node-cpuset.patch",
        include_str!("../../../../vm/patches/6.12/p4-01-numa-work-single-node-cpuset.patch"),
    ),
    (
        "p4-02-numa-cgroup-thp-scan.patch",
        include_str!("../../../../vm/patches/6.12/p4-02-numa-cgroup-thp-scan.patch"),
    ),
    (
        "p4-03-numa-cgroup-hierarchy.patch",
        include_str!("../../../../vm/patches/6.12/p4-03-numa-cgroup-hierarchy.patch"),
    ),
    (
        "p4-04-memcg-numa-task-counters.patch",
        include_str!("../../../../vm/patches/6.12/p4-04-memcg-numa-task-counters.patch"),
    ),
];

/// The proposals, `p1` .. `p5`.
pub const PROPOSALS: [&str; 5] = ["p1", "p2", "p3", "p4", "p5"];

/// Where a series entry's text comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A posting from the seeds directory, by number.
    Seed(String),
    /// One of [`OWN_PATCHES`], by file name.
    Own(String),
}

/// One line of the series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `p1` .. `p5`.
    pub proposal: String,
    /// The patch.
    pub source: Source,
    /// Its fuzz allowance.
    pub fuzz: usize,
}

/// Parses a series file: one entry a line, `#` comments and blank lines
/// ignored.
pub fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: &str| format!("series line {}: {why}: {raw}", n + 1);
        let mut words = line.split_whitespace();
        let proposal = words.next().unwrap_or_default().to_string();
        if !PROPOSALS.contains(&proposal.as_str()) {
            return Err(bad("the proposal must be one of p1..p5"));
        }
        let patch = words.next().ok_or_else(|| bad("no patch named"))?;
        let source = match patch.strip_prefix("seed:") {
            Some(num) if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) => {
                Source::Seed(num.to_string())
            }
            Some(_) => return Err(bad("a seed is named by its number, seed:NNN")),
            None => Source::Own(patch.to_string()),
        };
        let mut fuzz = 0;
        for w in words {
            fuzz = w
                .strip_prefix("fuzz=")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| bad(&format!("unknown option `{w}` (only fuzz=N)")))?;
        }
        out.push(Entry {
            proposal,
            source,
            fuzz,
        });
    }
    Ok(out)
}

/// The entries `spec` selects: `all`, or proposals separated by commas
/// (`p3,p4`), kept in series order.
pub fn select(entries: &[Entry], spec: &str) -> Result<Vec<Entry>, String> {
    if spec.trim() == "all" {
        return Ok(entries.to_vec());
    }
    let mut want: Vec<&str> = Vec::new();
    for p in spec.split(',').map(str::trim) {
        if !PROPOSALS.contains(&p) {
            return Err(format!(
                "--series: unknown proposal `{p}` (use all, or a list of p1..p5 such as p3,p4)"
            ));
        }
        want.push(p);
    }
    Ok(entries
        .iter()
        .filter(|e| want.contains(&e.proposal.as_str()))
        .cloned()
        .collect())
}

/// The text of each entry: seeds from `seeds` (one `NNN_*.txt` each; a
/// missing or ambiguous seed is an error naming the path), own patches
/// from [`OWN_PATCHES`].
pub fn resolve(entries: &[Entry], seeds: &Path) -> Result<Vec<PatchInput>, String> {
    let mut out = Vec::new();
    for e in entries {
        let (name, text) = match &e.source {
            Source::Own(f) => {
                let text = OWN_PATCHES
                    .iter()
                    .find(|(n, _)| n == f)
                    .map(|(_, t)| t.to_string())
                    .ok_or_else(|| format!("series: {f} is not one of the project's patches"))?;
                (f.clone(), text)
            }
            Source::Seed(num) => {
                let prefix = format!("{num}_");
                let found: Vec<_> = std::fs::read_dir(seeds)
                    .map_err(|err| {
                        format!(
                            "seed {num}: no seeds directory {} ({err}); give --seeds DIR",
                            seeds.display()
                        )
                    })?
                    .filter_map(Result::ok)
                    .map(|d| d.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&prefix) && n.ends_with(".txt"))
                    .collect();
                let file = match found.as_slice() {
                    [one] => one.clone(),
                    [] => {
                        return Err(format!(
                            "seed {num}: {} is missing (the series needs the posting there)",
                            seeds.join(format!("{num}_*.txt")).display()
                        ))
                    }
                    many => {
                        return Err(format!(
                            "seed {num}: several files match {}: {}",
                            seeds.join(format!("{num}_*.txt")).display(),
                            many.join(", ")
                        ))
                    }
                };
                let bytes = std::fs::read(seeds.join(&file))
                    .map_err(|err| format!("{}: {err}", seeds.join(&file).display()))?;
                (file, String::from_utf8_lossy(&bytes).into_owned())
            }
        };
        out.push(PatchInput {
            name,
            text,
            fuzz: e.fuzz,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_series_parses_and_names_only_shipped_patches() {
        let entries = parse(SERIES).unwrap();
        let own: Vec<&str> = entries
            .iter()
            .filter_map(|e| match &e.source {
                Source::Own(f) => Some(f.as_str()),
                Source::Seed(_) => None,
            })
            .collect();
        // Every own patch is named once, and every named one is compiled in.
        let mut names: Vec<&str> = OWN_PATCHES.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        let mut sorted = own.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, names);
        // Every proposal has a line, and only the seed that needs it has fuzz.
        for p in PROPOSALS {
            assert!(entries.iter().any(|e| e.proposal == p), "{p}");
        }
        let fuzzy: Vec<&Entry> = entries.iter().filter(|e| e.fuzz > 0).collect();
        assert_eq!(fuzzy.len(), 1);
        assert_eq!(fuzzy[0].source, Source::Seed("004".into()));
        // Each own patch has a header before its diff.
        for (n, t) in OWN_PATCHES {
            let at = t.find("diff --git ").unwrap();
            assert!(t[..at].contains("Subject: [numalab"), "{n}");
        }
    }

    #[test]
    fn the_shipped_series_directory_has_no_unlisted_patch() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vm/patches/6.12");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".patch"))
            .collect();
        files.sort();
        let mut names: Vec<String> = OWN_PATCHES.iter().map(|(n, _)| n.to_string()).collect();
        names.sort();
        assert_eq!(files, names);
    }

    #[test]
    fn selection_keeps_series_order_and_refuses_unknown_names() {
        let e = parse("p4 a.patch\np3 seed:001\np4 seed:000 fuzz=2\np1 b.patch\n").unwrap();
        let s = select(&e, "p1,p4").unwrap();
        let names: Vec<&Source> = s.iter().map(|e| &e.source).collect();
        assert_eq!(
            names,
            vec![
                &Source::Own("a.patch".into()),
                &Source::Seed("000".into()),
                &Source::Own("b.patch".into())
            ]
        );
        assert_eq!(s[1].fuzz, 2);
        assert_eq!(select(&e, "all").unwrap().len(), 4);
        let err = select(&e, "p3,proposal4").unwrap_err();
        assert!(err.contains("proposal4"), "{err}");
        assert!(select(&e, "3").is_err());
    }

    #[test]
    fn bad_series_lines_are_named() {
        assert!(parse("p6 x.patch\n").unwrap_err().contains("line 1"));
        assert!(parse("# c\np1\n").unwrap_err().contains("line 2"));
        assert!(parse("p1 seed:0a1\n").unwrap_err().contains("seed:NNN"));
        assert!(parse("p1 x.patch fuzzy\n").unwrap_err().contains("fuzzy"));
    }

    #[test]
    fn seeds_are_read_by_number_and_a_missing_one_names_its_path() {
        let dir = std::env::temp_dir().join(format!("numalab-series-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("001_abc.txt"), "the posting").unwrap();
        let e = parse("p3 seed:001\np3 p3-01-numa-task-mig-sentinel-and-thp.patch\n").unwrap();
        let got = resolve(&e, &dir).unwrap();
        assert_eq!(got[0].name, "001_abc.txt");
        assert_eq!(got[0].text, "the posting");
        assert!(got[1].text.contains("NUMA_TASK_MIG"));
        let missing = resolve(&parse("p4 seed:000\n").unwrap(), &dir).unwrap_err();
        assert!(
            missing.contains(&dir.join("000_*.txt").display().to_string()),
            "{missing}"
        );
        let nodir = resolve(&e, &dir.join("nope")).unwrap_err();
        assert!(nodir.contains("nope"), "{nodir}");
        let own = resolve(&parse("p1 nothere.patch\n").unwrap(), &dir).unwrap_err();
        assert!(own.contains("nothere.patch"), "{own}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
