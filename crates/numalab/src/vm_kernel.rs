//! `numalab vm kernel build`, and the stock/patched kernel pair that
//! `vm run --kernel-patch` and `validate --kernel-patch` boot.
//!
//! The build itself is [`numalab_real::vm::build`]; this file parses the
//! CLI's choices, prints the per-hunk report and the build's figures, and
//! maps a conflict or a compile error to exit code 2. For an A/B run the
//! "stock" kernel is the same Debian source and configuration with no
//! patch (so the only difference between the columns is the patch), and
//! the "patched" one adds the series. `--series` adds the project's own
//! series (`vm/patches/6.12/series`, [`numalab_real::vm::series`]) after
//! any `--patch`, its seeds read from `--seeds DIR`.

use crate::failure::Failure;
use numalab_real::vm::build::{self, BuildError, BuildOptions, BuiltKernel, PatchInput};
use numalab_real::vm::kernel::default_cache_dir;
use numalab_real::vm::series;
use std::path::{Path, PathBuf};

/// Options of `numalab vm kernel build`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelBuildArgs {
    /// `--patch FILE`, in order.
    pub patches: Vec<String>,
    /// `--series all|pN,...`: the project's series, after the patches.
    pub series: Option<String>,
    /// `--seeds DIR`: where the series' seeds are.
    pub seeds: String,
    /// `--config-fragment FILE`.
    pub fragment: Option<String>,
    /// `--fuzz N` (0 = none).
    pub fuzz: usize,
    /// `--dry-run`: report how each hunk would apply, build nothing.
    pub dry_run: bool,
    /// `--verbose`: echo make.
    pub verbose: bool,
}

impl KernelBuildArgs {
    /// The series' patches (none without `--series`), seeds read.
    fn series_inputs(&self) -> Result<Vec<PatchInput>, String> {
        let Some(spec) = &self.series else {
            return Ok(Vec::new());
        };
        let entries = series::parse(series::SERIES)?;
        let chosen = series::select(&entries, spec)?;
        series::resolve(&chosen, Path::new(&self.seeds))
    }

    fn options(&self) -> Result<BuildOptions, String> {
        Ok(BuildOptions {
            cache: default_cache_dir(),
            patches: self.patches.iter().map(PathBuf::from).collect(),
            inputs: self.series_inputs()?,
            fragment: self.fragment.as_ref().map(PathBuf::from),
            fuzz: self.fuzz,
            verbose: self.verbose,
        })
    }

    /// Every patch as text, in the order a build applies them.
    fn all_inputs(&self) -> Result<Vec<PatchInput>, String> {
        let mut out = Vec::new();
        for p in &self.patches {
            let bytes = std::fs::read(p).map_err(|e| format!("--patch {p}: {e}"))?;
            let name = Path::new(p)
                .file_name()
                .map_or_else(|| p.clone(), |n| n.to_string_lossy().into_owned());
            out.push(PatchInput {
                name,
                text: String::from_utf8_lossy(&bytes).into_owned(),
                fuzz: self.fuzz,
            });
        }
        out.extend(self.series_inputs()?);
        Ok(out)
    }
}

fn build_failure(e: BuildError) -> Failure {
    let code = e.exit_code().clamp(1, 255) as u8;
    let text = e.to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").to_string();
    let rest: Vec<&str> = lines.collect();
    Failure {
        message: first,
        code,
        detail: (!rest.is_empty()).then(|| rest.join("\n")),
    }
}

/// Builds (or takes from the cache) the kernel of `a`, saying what it did
/// on stderr.
pub fn ensure(a: &KernelBuildArgs) -> Result<BuiltKernel, Failure> {
    let k = build::build(&a.options()?).map_err(build_failure)?;
    if k.cached {
        eprintln!(
            "numalab vm: kernel {} from the cache ({}), {:.1} s",
            k.release,
            k.bzimage.display(),
            k.total_s
        );
    } else {
        eprint!("{}", build::report_text(&k.hunks));
        eprintln!(
            "numalab vm: built kernel {} ({}={}): make {:.1} s, total {:.1} s -> {}",
            k.release,
            build::SOURCE_PACKAGE,
            k.source_version,
            k.make_s,
            k.total_s,
            k.bzimage.display()
        );
    }
    Ok(k)
}

/// `--dry-run`: the per-hunk report of each patch against the pristine
/// tree plus the patches before it (as the build applies them), the tree
/// itself left untouched.
fn dry_run(a: &KernelBuildArgs) -> Result<(), Failure> {
    // Seeds and patch files first: a missing one is reported before apt.
    let inputs = a.all_inputs()?;
    if inputs.is_empty() {
        return Err(String::from("--dry-run needs --patch FILE or --series").into());
    }
    let version = build::ensure_source_package(a.verbose)?;
    let tree = default_cache_dir()
        .join("kernels/src")
        .join(build::version_dir(&version))
        .join("linux-source-6.12");
    if !tree.join("Makefile").is_file() {
        return Err(format!(
            "--dry-run needs the unpacked tree {} (run one build first)",
            tree.display()
        )
        .into());
    }
    // Against the pristine tree: undo what a killed build left applied.
    let _lock = build::KernelLock::take(&default_cache_dir(), "kernel dry run")?;
    build::revert(&tree)?;
    let work = std::env::temp_dir().join(format!("numalab-dry-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let d = build::dry_run(&tree, &inputs, &work);
    let _ = std::fs::remove_dir_all(&work);
    let d = d?;
    let mut text = format!("source {}={version}\n", build::SOURCE_PACKAGE);
    text.push_str(&build::report_text(&d.hunks));
    for r in &d.refused {
        text.push_str(r);
        text.push('\n');
    }
    crate::out::print(&text)?;
    if d.conflict {
        return Err(Failure {
            message: "a hunk conflicts".into(),
            code: 2,
            detail: None,
        });
    }
    Ok(())
}

/// `numalab vm kernel build`.
pub fn kernel_build(a: &KernelBuildArgs) -> Result<(), Failure> {
    if a.dry_run {
        return dry_run(a);
    }
    let k = ensure(a)?;
    let mut text = k.report.clone();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("bzImage: {}\n", k.bzimage.display()));
    crate::out::print(&text)?;
    Ok(())
}

/// The kernel of the "stock" column of an A/B run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stock {
    /// A built bzImage (by default the same source and configuration
    /// without the patches, so the patch is the only difference).
    Image(PathBuf),
    /// A Debian linux-image package kernel (`--kernel 6.12[.N]`): saves a
    /// full build (CI), at the price of a different configuration.
    Debian(Option<String>),
}

/// The stock and the patched kernel for an A/B run: `given` (the CLI's
/// `--kernel`, a version or a bzImage) or the build without `patches`,
/// and the build with them. The patched one is built first, so a
/// conflict is reported before the long stock build.
pub fn pair(
    patches: &[String],
    fuzz: usize,
    verbose: bool,
    given: (Option<&str>, Option<&std::path::Path>),
) -> Result<(Stock, BuiltKernel), Failure> {
    let patched = ensure(&KernelBuildArgs {
        patches: patches.to_vec(),
        fuzz,
        verbose,
        ..Default::default()
    })?;
    let stock = match given {
        (_, Some(img)) => Stock::Image(img.to_path_buf()),
        (Some(v), None) => Stock::Debian(Some(v.to_string())),
        (None, None) => Stock::Image(
            ensure(&KernelBuildArgs {
                verbose,
                ..Default::default()
            })?
            .bzimage,
        ),
    };
    Ok((stock, patched))
}

impl Stock {
    /// For messages.
    pub fn describe(&self) -> String {
        match self {
            Stock::Image(p) => p.display().to_string(),
            Stock::Debian(k) => format!(
                "Debian linux-image {}",
                k.as_deref().unwrap_or("(newest 6.12)")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_error_keeps_its_exit_code_and_report() {
        let f = build_failure(BuildError::Conflict(
            "patch x:\n  f.c hunk 1 (@@ -3): CONFLICT: gone\n".into(),
        ));
        assert_eq!(f.code, 2);
        assert!(f.message.contains("does not apply"));
        assert!(f.detail.unwrap().contains("CONFLICT"));
        assert_eq!(build_failure(BuildError::Setup("apt".into())).code, 1);
        assert_eq!(build_failure(BuildError::Compile("e".into())).code, 2);
    }
}
