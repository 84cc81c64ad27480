//! `numalab vm kernel build`: a guest kernel built from Debian's
//! `linux-source-6.12`, with a series of patches, cached.
//!
//! Steps: install the source package and the build tools with apt when
//! missing (the exact package version is recorded); unpack the tree once
//! per version under `<cache>/kernels/src/<version>/`; configure an output
//! directory per version and fragment (`<cache>/kernels/obj/<version>-<hash>`:
//! `make x86_64_defconfig`, the fragment [`GUEST_FRAGMENT`] plus any
//! user fragment appended, `make olddefconfig`, then every fragment line
//! checked: `=y`/`=m`/values must come out as written, `=n` must not be
//! set); apply the patches in order ([`super::patch`]: `git apply` when the
//! file applies as it is, else whitespace repair; a conflicting hunk stops
//! the build); `make -j<cpus> bzImage` under `nice -n 10`; keep the bzImage
//! and a `build.txt` report under `<cache>/kernels/built/<version>-<key>/`,
//! where the key hashes the version, the fragments and every patch's bytes
//! (and the fuzz allowance); then revert the patches so the tree is
//! pristine for the next build. The output directory is shared by every
//! patch set of one configuration, so a patch touching only `.c` files
//! rebuilds in seconds; one touching a widely included header rebuilds
//! nearly everything. A tree left patched by a killed build is reverted
//! first (its applied diff is kept beside the tree).
//!
//! Builds and guests take the same lock file (`<cache>/kernels/lock`), so
//! a build never runs while a guest boots (each uses both cores).
//!
//! Left out: other kernel sources than Debian's 6.12, module builds (the
//! guest kernel is monolithic), cross-compilation, and `patch`-style fuzz
//! beyond dropping context lines.

use super::flat;
use super::patch::{self, HunkReport, HunkStatus};
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The guest kernel's Kconfig fragment (vm/guest-kernel.config).
pub const GUEST_FRAGMENT: &str = include_str!("../../../../vm/guest-kernel.config");

/// The Debian source package.
pub const SOURCE_PACKAGE: &str = "linux-source-6.12";
/// Its tarball.
pub const SOURCE_TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";
/// Debian packages the build needs besides the source.
pub const BUILD_DEPS: &[&str] = &[
    "flex",
    "bison",
    "bc",
    "libelf-dev",
    "libssl-dev",
    "cpio",
    "make",
    "gcc",
    "xz-utils",
    "git",
];

/// One patch of a series whose text is already at hand (a patch series
/// file's entry: a seed read from its directory, or one of the project's
/// own patches), with its own fuzz allowance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchInput {
    /// Name for the report (the file name).
    pub name: String,
    /// The patch text.
    pub text: String,
    /// Context lines its hunks may lose at each end (0 = no fuzz).
    pub fuzz: usize,
}

/// What to build.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Cache root (`<cache>/kernels/...`).
    pub cache: PathBuf,
    /// Patches, applied in order.
    pub patches: Vec<PathBuf>,
    /// Patches given as text, applied after `patches`, each with its own
    /// fuzz (`vm kernel build --series`).
    pub inputs: Vec<PatchInput>,
    /// Extra Kconfig fragment, appended after [`GUEST_FRAGMENT`].
    pub fragment: Option<PathBuf>,
    /// Context lines a hunk may lose at each end (0 = no fuzz).
    pub fuzz: usize,
    /// Echo make's output.
    pub verbose: bool,
}

/// A built kernel.
#[derive(Clone, Debug)]
pub struct BuiltKernel {
    /// The bzImage.
    pub bzimage: PathBuf,
    /// Debian source package version (e.g. `6.12.117-1~deb12u1`).
    pub source_version: String,
    /// Cache key.
    pub key: String,
    /// `make kernelrelease`.
    pub release: String,
    /// Per patch: its file name and the hunk reports.
    pub hunks: Vec<(String, Vec<HunkReport>)>,
    /// True when taken from the cache.
    pub cached: bool,
    /// Seconds of `make bzImage` (0 when cached).
    pub make_s: f64,
    /// Seconds of the whole call.
    pub total_s: f64,
    /// The report text (also in `build.txt`).
    pub report: String,
}

/// Why a build did not give a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// A hunk conflicts: the per-hunk report.
    Conflict(String),
    /// The compiler failed: the log's error lines.
    Compile(String),
    /// The configuration did not come out as the fragment asks.
    Config(String),
    /// Setup failed (apt, tar, a missing file).
    Setup(String),
}

impl BuildError {
    /// Exit code: 2 for a result about the patch or config, 1 for setup.
    pub fn exit_code(&self) -> i32 {
        match self {
            BuildError::Setup(_) => 1,
            _ => 2,
        }
    }
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Conflict(s) => write!(f, "the patch series does not apply:\n{s}"),
            BuildError::Compile(s) => write!(f, "the patched kernel does not compile:\n{s}"),
            BuildError::Config(s) => write!(f, "the kernel configuration is not as asked:\n{s}"),
            BuildError::Setup(s) => write!(f, "{s}"),
        }
    }
}

/// FNV-1a, 64 bits: a stable cache key (not a security hash).
pub fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// `6.12.117-1~deb12u1` as a path component.
pub fn version_dir(v: &str) -> String {
    v.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Checks `.config` text against a fragment; the lines that did not come
/// out as written.
pub fn check_config(config: &str, fragment: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for l in fragment.lines().map(str::trim) {
        let (sym, want) = if let Some(s) = l
            .strip_prefix("# ")
            .and_then(|r| r.strip_suffix(" is not set"))
        {
            (s, "n")
        } else if l.starts_with('#') || l.is_empty() {
            continue;
        } else if let Some((s, v)) = l.split_once('=') {
            (s, v)
        } else {
            continue;
        };
        let got = config.lines().find_map(|c| {
            if let Some(v) = c.strip_prefix(sym).and_then(|r| r.strip_prefix('=')) {
                Some(v.to_string())
            } else if c
                .strip_prefix("# ")
                .and_then(|r| r.strip_suffix(" is not set"))
                == Some(sym)
            {
                Some("n".to_string())
            } else {
                None
            }
        });
        let ok = match (want, got.as_deref()) {
            // Not set, or not even visible (its dependencies are off).
            ("n", None | Some("n")) => true,
            (w, Some(g)) => w == g,
            (_, None) => false,
        };
        if !ok {
            bad.push(format!(
                "{sym}: asked {want}, got {}",
                got.as_deref().unwrap_or("(absent: a dependency is off)")
            ));
        }
    }
    bad
}

/// A fragment with `CONFIG_X=n` written the way `.config` says it.
pub fn kconfig_text(fragment: &str) -> String {
    let mut s = String::new();
    for l in fragment.lines() {
        match l.trim().strip_suffix("=n") {
            Some(sym) if sym.starts_with("CONFIG_") => {
                let _ = writeln!(s, "# {sym} is not set");
            }
            _ => {
                s.push_str(l);
                s.push('\n');
            }
        }
    }
    s
}

/// An exclusive lock on `<cache>/kernels/lock`, held until dropped. Waits
/// (saying so once) while a build or a guest holds it.
pub struct KernelLock {
    _file: fs::File,
}

impl KernelLock {
    /// Takes the lock; `what` names the caller in the waiting message.
    pub fn take(cache: &Path, what: &str) -> Result<KernelLock, String> {
        let dir = cache.join("kernels");
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let p = dir.join("lock");
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        use std::os::unix::io::AsRawFd;
        let fd = f.as_raw_fd();
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            eprintln!(
                "numalab vm: {what}: waiting for {} (a kernel build or a guest is running)",
                p.display()
            );
            // SAFETY: as above, blocking.
            if unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
                return Err(format!(
                    "flock {}: {}",
                    p.display(),
                    std::io::Error::last_os_error()
                ));
            }
        }
        Ok(KernelLock { _file: f })
    }
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let o = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

fn installed_version(pkg: &str) -> Option<String> {
    let o = Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}|${Version}", pkg])
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&o.stdout).into_owned();
    let (st, v) = s.split_once('|')?;
    (o.status.success() && st.ends_with("installed") && !v.is_empty()).then(|| v.to_string())
}

/// Installs the source package and the build tools when missing; the
/// source package's version.
pub fn ensure_source_package(verbose: bool) -> Result<String, String> {
    let mut need: Vec<&str> = BUILD_DEPS
        .iter()
        .copied()
        .filter(|p| installed_version(p).is_none())
        .collect();
    if installed_version(SOURCE_PACKAGE).is_none() || !Path::new(SOURCE_TARBALL).is_file() {
        need.push(SOURCE_PACKAGE);
    }
    if !need.is_empty() {
        // SAFETY: getuid has no preconditions.
        if unsafe { libc::getuid() } != 0 {
            return Err(format!(
                "missing Debian packages: {0}; install them as root: apt-get install -y --no-install-recommends {0}",
                need.join(" ")
            ));
        }
        eprintln!("numalab vm: installing {}", need.join(" "));
        let mut c = Command::new("apt-get");
        c.env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(&need);
        if !verbose {
            c.stdout(Stdio::null());
        }
        if run(&mut c, "apt-get install").is_err() {
            run(
                Command::new("apt-get").args(["update", "-qq"]),
                "apt-get update",
            )?;
            run(&mut c, "apt-get install")?;
        }
    }
    installed_version(SOURCE_PACKAGE)
        .ok_or_else(|| format!("{SOURCE_PACKAGE} is not installed after apt-get"))
}

/// The unpacked tree for `version`, unpacking it when missing.
fn ensure_tree(cache: &Path, version: &str) -> Result<PathBuf, String> {
    let base = cache.join("kernels/src").join(version_dir(version));
    let tree = base.join("linux-source-6.12");
    if tree.join("Makefile").is_file() {
        return Ok(tree);
    }
    let tmp = cache.join("kernels/src").join(format!(
        ".unpack-{}-{}",
        version_dir(version),
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    eprintln!("numalab vm: unpacking {SOURCE_TARBALL} (about 20 s)");
    run(
        Command::new("tar")
            .arg("-xf")
            .arg(SOURCE_TARBALL)
            .arg("-C")
            .arg(&tmp),
        "tar",
    )?;
    let _ = fs::remove_dir_all(&base);
    fs::rename(&tmp, &base).map_err(|e| format!("{}: {e}", base.display()))?;
    Ok(tree)
}

fn git_apply(tree: &Path, diff_file: &Path, extra: &[&str]) -> Result<(), String> {
    let parent = tree.parent().unwrap_or(tree);
    run(
        Command::new("git")
            .current_dir(tree)
            // Never mistake an enclosing repository for this tree.
            .env("GIT_CEILING_DIRECTORIES", parent)
            .args(["apply", "-p1", "--whitespace=nowarn"])
            .args(extra)
            .arg(diff_file),
        "git apply",
    )
    .map(|_| ())
}

/// The applied-series file beside the tree (present while patched).
fn applied_file(tree: &Path) -> PathBuf {
    tree.with_file_name("applied.diff")
}

/// Reverts what a previous build left applied (a build killed before its
/// own revert); nothing when the tree is pristine.
pub fn revert(tree: &Path) -> Result<(), String> {
    let f = applied_file(tree);
    if !f.is_file() {
        return Ok(());
    }
    git_apply(tree, &f, &["-R"]).map_err(|e| {
        format!(
            "the kernel tree {} is left patched and the reverse does not apply ({e}); remove {} to unpack it anew",
            tree.display(),
            tree.parent().unwrap_or(tree).display()
        )
    })?;
    fs::remove_file(&f).map_err(|e| format!("{}: {e}", f.display()))
}

/// The hunk report as text.
pub fn report_text(hunks: &[(String, Vec<HunkReport>)]) -> String {
    let mut s = String::new();
    for (name, rep) in hunks {
        let _ = writeln!(s, "patch {name}:");
        for h in rep {
            let _ = writeln!(s, "  {h}");
        }
    }
    s
}

/// Parses a patch's text: a flattened mail dump ([`flat::is_flattened`])
/// is rebuilt against the tree first, anything else goes to
/// [`patch::parse`]. Without a tree (`read` gives nothing) a flattened
/// dump is only checked for hunks.
pub fn parse_patch(
    text: &str,
    read: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<patch::FilePatch>, String> {
    if flat::is_flattened(text) {
        flat::unflatten(text, read)
    } else {
        patch::parse(text)
    }
}

/// The per-hunk repair of one patch against the tree `read` gives. Hunks
/// of a flattened dump are rebuilt, so none of them counts as applied as
/// written: those found exactly are reported as repaired.
pub fn intake(
    text: &str,
    read: &dyn Fn(&str) -> Option<String>,
    fuzz: usize,
) -> Result<patch::Repaired, String> {
    let files = parse_patch(text, read)?;
    let mut r = patch::repair(&files, read, fuzz);
    if flat::is_flattened(text) {
        for h in &mut r.report {
            if let HunkStatus::Applied { offset } = h.status {
                h.status = HunkStatus::Repaired { offset };
            }
        }
    }
    Ok(r)
}

/// What [`dry_run`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DryRun {
    /// Per patch: its name and the hunk reports.
    pub hunks: Vec<(String, Vec<HunkReport>)>,
    /// True when a hunk conflicts (or a repaired diff did not apply).
    pub conflict: bool,
    /// Why a patch found in the tree did not apply, if one did not.
    pub refused: Vec<String>,
}

/// The per-hunk report of `patches` as a build would apply them: each
/// against `tree` plus the patches before it, without touching `tree`
/// (the files a patch changes are copied into `work`, an empty scratch
/// directory, and patched there with `git apply`). A patch with a
/// conflicting hunk is reported and left out, so the ones after it are
/// checked against the tree without it.
pub fn dry_run(tree: &Path, patches: &[PatchInput], work: &Path) -> Result<DryRun, String> {
    fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    let mut d = DryRun::default();
    let diff_file = work.with_extension("diff");
    for p in patches {
        let read = |f: &str| {
            fs::read_to_string(work.join(f))
                .or_else(|_| fs::read_to_string(tree.join(f)))
                .ok()
        };
        let r = intake(&p.text, &read, p.fuzz).map_err(|e| format!("{}: {e}", p.name))?;
        d.hunks.push((p.name.clone(), r.report.clone()));
        if r.has_conflict() {
            d.conflict = true;
            continue;
        }
        for f in parse_patch(&r.diff, &read)? {
            let dst = work.join(&f.path);
            if dst.exists() || !tree.join(&f.path).is_file() {
                continue;
            }
            if let Some(dir) = dst.parent() {
                fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            fs::copy(tree.join(&f.path), &dst).map_err(|e| format!("{}: {e}", dst.display()))?;
        }
        fs::write(&diff_file, &r.diff).map_err(|e| format!("{}: {e}", diff_file.display()))?;
        let applied = git_apply(work, &diff_file, &[]);
        let _ = fs::remove_file(&diff_file);
        if let Err(e) = applied {
            d.conflict = true;
            d.refused.push(format!(
                "{}: git apply refused the repaired diff: {e}",
                p.name
            ));
        }
    }
    Ok(d)
}

/// Builds (or takes from the cache) the kernel `o` describes.
pub fn build(o: &BuildOptions) -> Result<BuiltKernel, BuildError> {
    let t0 = Instant::now();
    let setup = BuildError::Setup;
    let mut fragment = GUEST_FRAGMENT.to_string();
    if let Some(f) = &o.fragment {
        let extra = fs::read_to_string(f).map_err(|e| setup(format!("{}: {e}", f.display())))?;
        fragment.push_str(&extra);
    }
    let mut patches: Vec<PatchInput> = Vec::new();
    for p in &o.patches {
        let text = fs::read(p).map_err(|e| setup(format!("--patch {}: {e}", p.display())))?;
        let text = String::from_utf8_lossy(&text).into_owned();
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        patches.push(PatchInput {
            name,
            text,
            fuzz: o.fuzz,
        });
    }
    patches.extend(o.inputs.iter().cloned());
    for p in &patches {
        // Before the lock and the long steps: is it a diff at all?
        parse_patch(&p.text, &|_| None).map_err(|e| setup(format!("{}: {e}", p.name)))?;
    }
    let _lock = KernelLock::take(&o.cache, "kernel build").map_err(setup)?;
    let version = ensure_source_package(o.verbose).map_err(setup)?;
    let cfg_hash = format!("{:016x}", fnv64(&[fragment.as_bytes()]));
    let mut parts: Vec<&[u8]> = vec![version.as_bytes(), fragment.as_bytes()];
    let fuzz_s = o.fuzz.to_string();
    parts.push(fuzz_s.as_bytes());
    let fuzz_tags: Vec<String> = patches
        .iter()
        .map(|p| format!("\0fuzz={}", p.fuzz))
        .collect();
    for (p, tag) in patches.iter().zip(&fuzz_tags) {
        parts.push(b"\0patch\0");
        parts.push(p.text.as_bytes());
        // A patch's own fuzz counts only where it differs from the global
        // one, so the keys of `--patch` builds stay as they were.
        if p.fuzz != o.fuzz {
            parts.push(tag.as_bytes());
        }
    }
    let key = format!("{:016x}", fnv64(&parts));
    let vdir = version_dir(&version);
    let out = o.cache.join("kernels/built").join(format!("{vdir}-{key}"));
    let bz = out.join("bzImage");
    if bz.is_file() {
        let report = fs::read_to_string(out.join("build.txt")).unwrap_or_default();
        let release = report
            .lines()
            .find_map(|l| l.strip_prefix("release: "))
            .unwrap_or("?")
            .to_string();
        let mut hunks = Vec::new();
        // The report is re-derived cheaply only when built; cached builds
        // show the stored text.
        for p in &patches {
            hunks.push((p.name.clone(), Vec::new()));
        }
        return Ok(BuiltKernel {
            bzimage: bz,
            source_version: version,
            key,
            release,
            hunks,
            cached: true,
            make_s: 0.0,
            total_s: t0.elapsed().as_secs_f64(),
            report,
        });
    }
    let tree = ensure_tree(&o.cache, &version).map_err(setup)?;
    revert(&tree).map_err(setup)?;
    let obj = o
        .cache
        .join("kernels/obj")
        .join(format!("{vdir}-{cfg_hash}"));
    fs::create_dir_all(&obj).map_err(|e| setup(format!("{}: {e}", obj.display())))?;

    // Patches, in order, each against the tree the previous ones left.
    let mut hunks: Vec<(String, Vec<HunkReport>)> = Vec::new();
    let mut applied = String::new();
    let tmp_diff = obj.join("numalab-patch.diff");
    let result = (|| -> Result<BuiltKernel, BuildError> {
        for PatchInput { name, text, fuzz } in &patches {
            let read = |p: &str| fs::read_to_string(tree.join(p)).ok();
            let r = intake(text, &read, *fuzz).map_err(|e| setup(format!("{name}: {e}")))?;
            hunks.push((name.clone(), r.report.clone()));
            if r.has_conflict() {
                return Err(BuildError::Conflict(report_text(&hunks)));
            }
            fs::write(&tmp_diff, text).map_err(|e| setup(e.to_string()))?;
            let as_is = git_apply(&tree, &tmp_diff, &["--check"]).is_ok();
            let diff = if as_is { text.clone() } else { r.diff.clone() };
            fs::write(&tmp_diff, &diff).map_err(|e| setup(e.to_string()))?;
            git_apply(&tree, &tmp_diff, &["--check"]).map_err(|e| {
                BuildError::Conflict(format!(
                    "{}git apply refused the repaired diff: {e}\n",
                    report_text(&hunks)
                ))
            })?;
            // Record before applying, so a killed build can be reverted.
            let mut all = applied.clone();
            all.push_str(&diff);
            fs::write(applied_file(&tree), &all).map_err(|e| setup(e.to_string()))?;
            if let Err(e) = git_apply(&tree, &tmp_diff, &[]) {
                fs::write(applied_file(&tree), &applied).map_err(|e| setup(e.to_string()))?;
                return Err(BuildError::Conflict(format!(
                    "{}git apply: {e}\n",
                    report_text(&hunks)
                )));
            }
            applied = all;
        }
        configure(&tree, &obj, &fragment, o.verbose)?;
        let t_make = Instant::now();
        let log = obj.join("numalab-build.log");
        let ok = make(&tree, &obj, &log, o.verbose)?;
        let make_s = t_make.elapsed().as_secs_f64();
        if !ok {
            let text = fs::read_to_string(&log).unwrap_or_default();
            let errs: Vec<&str> = text
                .lines()
                .filter(|l| l.contains("error:") || l.contains("Error "))
                .take(20)
                .collect();
            let tail: Vec<&str> = text.lines().rev().take(10).collect();
            return Err(BuildError::Compile(format!(
                "{}\n(last lines of {}:)\n{}",
                errs.join("\n"),
                log.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )));
        }
        let release = run(
            Command::new("make")
                .current_dir(&tree)
                .arg("-s")
                .arg(format!("O={}", obj.display()))
                .arg("kernelrelease"),
            "make kernelrelease",
        )
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
        let tmp_out = out.with_extension("tmp");
        let _ = fs::remove_dir_all(&tmp_out);
        fs::create_dir_all(&tmp_out).map_err(|e| setup(e.to_string()))?;
        fs::copy(obj.join("arch/x86/boot/bzImage"), tmp_out.join("bzImage"))
            .map_err(|e| setup(format!("copy bzImage: {e}")))?;
        let mut report = String::new();
        let _ = writeln!(report, "source: {SOURCE_PACKAGE}={version}");
        let _ = writeln!(report, "release: {release}");
        let _ = writeln!(report, "config: x86_64_defconfig + fragment {cfg_hash}");
        let _ = writeln!(report, "key: {key}");
        let _ = writeln!(report, "fuzz: {}", o.fuzz);
        for p in &patches {
            let fz = if p.fuzz == o.fuzz {
                String::new()
            } else {
                format!(" fuzz={}", p.fuzz)
            };
            let _ = writeln!(
                report,
                "patch: {} {:016x}{fz}",
                p.name,
                fnv64(&[p.text.as_bytes()])
            );
        }
        let _ = writeln!(report, "make_s: {make_s:.1}");
        report.push_str(&report_text(&hunks));
        fs::write(tmp_out.join("build.txt"), &report).map_err(|e| setup(e.to_string()))?;
        fs::write(tmp_out.join("applied.diff"), &applied).map_err(|e| setup(e.to_string()))?;
        let _ = fs::remove_dir_all(&out);
        fs::rename(&tmp_out, &out).map_err(|e| setup(format!("{}: {e}", out.display())))?;
        Ok(BuiltKernel {
            bzimage: bz.clone(),
            source_version: version.clone(),
            key: key.clone(),
            release,
            hunks: hunks.clone(),
            cached: false,
            make_s,
            total_s: 0.0,
            report,
        })
    })();
    let _ = fs::remove_file(&tmp_diff);
    // Leave the tree pristine for the next build, whatever happened.
    let reverted = revert(&tree);
    let mut k = result?;
    reverted.map_err(setup)?;
    k.total_s = t0.elapsed().as_secs_f64();
    Ok(k)
}

/// Configures `obj`: defconfig + fragment + olddefconfig when the fragment
/// changed, olddefconfig otherwise (a patch may add symbols); then checks.
fn configure(tree: &Path, obj: &Path, fragment: &str, verbose: bool) -> Result<(), BuildError> {
    let setup = BuildError::Setup;
    let mk = |target: &str| -> Result<(), BuildError> {
        let mut c = Command::new("make");
        c.current_dir(tree)
            .arg("-s")
            .arg(format!("O={}", obj.display()))
            .arg(target);
        if !verbose {
            c.stdout(Stdio::null());
        }
        run(&mut c, &format!("make {target}"))
            .map(|_| ())
            .map_err(setup)
    };
    let stamp = obj.join("numalab-fragment.config");
    let fresh = fs::read_to_string(&stamp).ok().as_deref() != Some(fragment)
        || !obj.join(".config").is_file();
    if fresh {
        mk("x86_64_defconfig")?;
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(obj.join(".config"))
            .map_err(|e| setup(e.to_string()))?;
        f.write_all(kconfig_text(fragment).as_bytes())
            .map_err(|e| setup(e.to_string()))?;
    }
    mk("olddefconfig")?;
    let config = fs::read_to_string(obj.join(".config")).map_err(|e| setup(e.to_string()))?;
    let bad = check_config(&config, fragment);
    if !bad.is_empty() {
        let _ = fs::remove_file(&stamp);
        return Err(BuildError::Config(bad.join("\n")));
    }
    fs::write(&stamp, fragment).map_err(|e| setup(e.to_string()))?;
    Ok(())
}

/// `nice -n 10 make -jN bzImage`, output to `log`; false on a compile
/// error.
fn make(tree: &Path, obj: &Path, log: &Path, verbose: bool) -> Result<bool, BuildError> {
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let f =
        fs::File::create(log).map_err(|e| BuildError::Setup(format!("{}: {e}", log.display())))?;
    let f2 = f
        .try_clone()
        .map_err(|e| BuildError::Setup(e.to_string()))?;
    eprintln!(
        "numalab vm: make -j{jobs} bzImage in {} (log {})",
        obj.display(),
        log.display()
    );
    let mut c = Command::new("nice");
    c.current_dir(tree)
        .args(["-n", "10", "make"])
        .arg(format!("-j{jobs}"))
        .arg(format!("O={}", obj.display()))
        .arg("bzImage");
    if verbose {
        c.stdout(Stdio::inherit()).stderr(Stdio::inherit());
    } else {
        c.stdout(f).stderr(f2);
    }
    let st = c
        .status()
        .map_err(|e| BuildError::Setup(format!("make: {e}")))?;
    Ok(st.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fragment_check_names_what_did_not_come_out() {
        let frag = "# a comment\nCONFIG_A=y\nCONFIG_B=n\nCONFIG_C=n\nCONFIG_D=y\nCONFIG_E=\"x\"\n";
        let cfg = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_D=m\nCONFIG_E=\"x\"\n";
        let bad = check_config(cfg, frag);
        assert_eq!(bad, vec!["CONFIG_D: asked y, got m".to_string()]);
        let bad = check_config("", "CONFIG_A=y\n");
        assert!(bad[0].contains("absent"), "{bad:?}");
        // CONFIG_AB must not be read as CONFIG_A.
        assert_eq!(
            check_config("CONFIG_AB=y\n", "CONFIG_A=n\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn the_shipped_fragment_is_well_formed() {
        let t = kconfig_text(GUEST_FRAGMENT);
        assert!(t.contains("# CONFIG_MODULES is not set"));
        assert!(t.contains("CONFIG_NUMA_BALANCING=y"));
        assert!(!t.lines().any(|l| l.ends_with("=n")));
        // The fragment, in .config form, passes its own check.
        let cfg: String = t
            .lines()
            .filter(|l| l.starts_with("CONFIG_") || l.ends_with("is not set"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(check_config(&cfg, GUEST_FRAGMENT).is_empty());
    }

    /// A scratch directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("numalab-build-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn input(name: &str, text: &str) -> PatchInput {
        PatchInput {
            name: name.into(),
            text: text.into(),
            fuzz: 0,
        }
    }

    #[test]
    fn a_dry_run_checks_each_patch_on_top_of_the_ones_before_and_leaves_the_tree() {
        let base = scratch("dry");
        let tree = base.join("tree");
        fs::create_dir_all(tree.join("k")).unwrap();
        let src = "int a;\n\nint f(void)\n{\n\treturn 0;\n}\n";
        fs::write(tree.join("k/f.c"), src).unwrap();
        // The second patch's context is a line the first one adds.
        let first = "diff --git a/k/f.c b/k/f.c\n--- a/k/f.c\n+++ b/k/f.c\n@@ -1,2 +1,3 @@\n int a;\n+int b;\n \n";
        let second = "diff --git a/k/f.c b/k/f.c\n--- a/k/f.c\n+++ b/k/f.c\n@@ -1,3 +1,3 @@\n int a;\n-int b;\n+int c;\n \n";
        let d = dry_run(
            &tree,
            &[input("first", first), input("second", second)],
            &base.join("work"),
        )
        .unwrap();
        assert!(!d.conflict, "{d:?}");
        assert_eq!(d.hunks.len(), 2);
        assert_eq!(d.hunks[1].0, "second");
        assert_eq!(d.hunks[1].1[0].status, HunkStatus::Applied { offset: 0 });
        assert_eq!(fs::read_to_string(tree.join("k/f.c")).unwrap(), src);
        assert_eq!(
            fs::read_to_string(base.join("work/k/f.c")).unwrap(),
            "int a;\nint c;\n\nint f(void)\n{\n\treturn 0;\n}\n"
        );
        // Alone, the second one conflicts: the line it changes is not there.
        let d = dry_run(&tree, &[input("second", second)], &base.join("work2")).unwrap();
        assert!(d.conflict);
        assert!(d.hunks[0].1[0].is_conflict());
        let _ = fs::remove_dir_all(&base);
    }

    #[test]
    fn keys_are_stable_and_versions_make_paths() {
        assert_eq!(fnv64(&[b""]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv64(&[b"a", b"b"]), fnv64(&[b"ab"]));
        assert_ne!(fnv64(&[b"ab"]), fnv64(&[b"ba"]));
        assert_eq!(version_dir("6.12.117-1~deb12u1"), "6.12.117-1_deb12u1");
    }

    #[test]
    fn a_missing_patch_is_a_setup_error_before_any_work() {
        let o = BuildOptions {
            cache: std::env::temp_dir().join("numalab-build-test-none"),
            patches: vec![PathBuf::from("/nonexistent/x.patch")],
            ..Default::default()
        };
        let e = build(&o).unwrap_err();
        assert!(matches!(e, BuildError::Setup(_)));
        assert!(e.to_string().contains("/nonexistent/x.patch"));
    }
}
