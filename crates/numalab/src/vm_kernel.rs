//! `numalab vm kernel build`, and the stock/patched kernel pair that
//! `vm run --kernel-patch` and `validate --kernel-patch` boot.
//!
//! The build itself is [`numalab_real::vm::build`]; this file parses the
//! CLI's choices, prints the per-hunk report and the build's figures, and
//! maps a conflict or a compile error to exit code 2. For an A/B run the
//! "stock" kernel is the same Debian source and configuration with no
//! patch (so the only difference between the columns is the patch), and
//! the "patched" one adds the series.

use crate::failure::Failure;
use numalab_real::vm::build::{self, BuildError, BuildOptions, BuiltKernel};
use numalab_real::vm::kernel::default_cache_dir;
use numalab_real::vm::patch;
use std::path::PathBuf;

/// Options of `numalab vm kernel build`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelBuildArgs {
    /// `--patch FILE`, in order.
    pub patches: Vec<String>,
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
    fn options(&self) -> BuildOptions {
        BuildOptions {
            cache: default_cache_dir(),
            patches: self.patches.iter().map(PathBuf::from).collect(),
            fragment: self.fragment.as_ref().map(PathBuf::from),
            fuzz: self.fuzz,
            verbose: self.verbose,
        }
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
    let k = build::build(&a.options()).map_err(build_failure)?;
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

/// `--dry-run`: each patch against the pristine tree (not a series: a
/// later patch is not checked on top of an earlier one).
fn dry_run(a: &KernelBuildArgs) -> Result<(), Failure> {
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
    let mut text = format!("source {}={version}\n", build::SOURCE_PACKAGE);
    let mut conflict = false;
    for p in &a.patches {
        let raw = std::fs::read_to_string(p).map_err(|e| format!("--patch {p}: {e}"))?;
        let files = patch::parse(&raw).map_err(|e| format!("--patch {p}: {e}"))?;
        let read = |f: &str| std::fs::read_to_string(tree.join(f)).ok();
        let r = patch::repair(&files, &read, a.fuzz);
        conflict |= r.has_conflict();
        text.push_str(&build::report_text(&[(p.clone(), r.report)]));
    }
    crate::out::print(&text)?;
    if conflict {
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
