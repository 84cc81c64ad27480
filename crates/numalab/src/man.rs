//! `numalab man`: the man pages, numalab(1) and one per subcommand
//! (numalab-run(1), numalab-machine-import(1), ...), rendered by
//! clap_mangen from the command line's own definitions, so each page lists
//! the options its subcommand takes and every page that a SUBCOMMANDS or
//! SEE ALSO section names exists. Left out: pages of other sections (the
//! file formats are documented in docs/), and installing the pages.

use clap::Command;
use std::path::Path;

/// `numalab man [SUBCOMMAND]...`: print one page; with `out`, write them all.
pub fn man(cmd: Command, subcommand: &[String], out: Option<&str>) -> Result<(), String> {
    let pages = pages(cmd)?;
    if let Some(dir) = out {
        let dir = Path::new(dir);
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--out {}: {}", dir.display(), crate::out::io_text(&e)))?;
        for (file, text) in &pages {
            crate::out::write_file("--out", &dir.join(file), text)?;
        }
        eprintln!("numalab man: {} pages in {}", pages.len(), dir.display());
        return Ok(());
    }
    let want = format!(
        "{}.1",
        std::iter::once("numalab")
            .chain(subcommand.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("-")
    );
    match pages.iter().find(|(file, _)| *file == want) {
        Some((_, text)) => crate::out::print(text),
        None => Err(format!(
            "man {}: no such subcommand; the pages are for: {}",
            subcommand.join(" "),
            pages
                .iter()
                .filter_map(|(f, _)| f.strip_prefix("numalab-")?.strip_suffix(".1"))
                .map(|s| s.replace('-', " "))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Every page as (file name, roff text): numalab.1 first, then each
/// subcommand's before its own subcommands', in the order `--help` lists
/// them. clap's `help` subcommand and hidden ones get none.
pub fn pages(cmd: Command) -> Result<Vec<(String, String)>, String> {
    let mut cmd = cmd.disable_help_subcommand(true);
    // Building names each subcommand in full (numalab-machine-import).
    cmd.build();
    let mut out = Vec::new();
    collect(&cmd, &[], &mut out)?;
    Ok(out)
}

fn collect(
    cmd: &Command,
    parents: &[String],
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let name = cmd
        .get_display_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_string();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut roff = Vec::new();
    man.render(&mut roff)
        .map_err(|e| format!("man page {name}: {e}"))?;
    let mut text = String::from_utf8_lossy(&roff).into_owned();
    if !parents.is_empty() {
        // The pages above this one, nearest last.
        let refs: Vec<String> = parents
            .iter()
            .map(|p| format!("{}(1)", p.replace('-', "\\-")))
            .collect();
        text.push_str(&format!(".SH \"SEE ALSO\"\n{}\n", refs.join(", ")));
    }
    out.push((man.get_filename(), text));
    let mut below = parents.to_vec();
    below.push(name);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(sub, &below, out)?;
    }
    Ok(())
}
