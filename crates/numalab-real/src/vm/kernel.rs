//! The guest kernel: a Debian linux-image package, fetched with apt and
//! cached by version.
//!
//! The default is the newest `linux-image-6.12.N+deb12-amd64-unsigned` the
//! host's apt lists know (bookworm-security carries the 6.12 series for
//! bookworm). It is fetched with `apt-get download` (no installation), and
//! only the kernel image, its config and the four 9p modules (`netfs`,
//! `9pnet`, `9pnet_virtio`, `9p`, decompressed) are kept, under
//! `<cache>/kernels/<release>/` with `package.txt` naming the package and
//! its version. A cached kernel is used without asking apt when the exact
//! version is requested, and as a fallback (with a note) when the download
//! fails. Needs `apt-get`, `apt-cache`, `dpkg-deb`, `tar` and `xz`.
//!
//! Left out: other distributions' kernels and signed images.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Modules the guest loads for the 9p share, in load order.
pub const MODULES: [&str; 4] = ["netfs", "9pnet", "9pnet_virtio", "9p"];

/// The default kernel series.
pub const DEFAULT_SERIES: &str = "6.12";

/// A kernel ready to boot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// Release, as `uname -r` will print it (e.g. `6.12.117+deb12-amd64`).
    pub release: String,
    /// Debian package name.
    pub package: String,
    /// Debian package version.
    pub package_version: String,
    /// The bzImage.
    pub vmlinuz: PathBuf,
    /// Decompressed modules, in load order (missing ones left out).
    pub modules: Vec<PathBuf>,
    /// True when it was downloaded by this call.
    pub fetched: bool,
    /// A note for the user (e.g. a fallback to the cache).
    pub note: Option<String>,
}

/// `$XDG_CACHE_HOME/numalab` or `$HOME/.cache/numalab`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("numalab");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/numalab")
}

/// Parses the `6.12.117` of `linux-image-6.12.117+deb12-amd64-unsigned`.
pub fn package_abi(pkg: &str) -> Option<Vec<u64>> {
    let v = pkg
        .strip_prefix("linux-image-")?
        .strip_suffix("+deb12-amd64-unsigned")?;
    let parts: Vec<u64> = v
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    (parts.len() == 3).then_some(parts)
}

/// Package names in `apt-cache search` (or pkgnames) output.
pub fn parse_candidates(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|p| package_abi(p).is_some())
        .map(str::to_string)
        .collect()
}

/// Normalises a requested version: `None` → the default series; accepts a
/// series (`6.12`), an exact version (`6.12.117`), a release
/// (`6.12.117+deb12-amd64`) or a package name.
pub fn requested_parts(want: Option<&str>) -> Result<Vec<u64>, String> {
    let w = want.unwrap_or(DEFAULT_SERIES).trim();
    let w = w.strip_prefix("linux-image-").unwrap_or(w);
    let w = w.split('+').next().unwrap_or(w);
    let parts: Option<Vec<u64>> = w.split('.').map(|p| p.parse().ok()).collect();
    match parts {
        Some(p) if (2..=3).contains(&p.len()) => Ok(p),
        _ => Err(format!(
            "kernel version '{}': expected a series like 6.12 or a version like 6.12.117",
            want.unwrap_or("")
        )),
    }
}

/// The newest candidate matching `want` (a prefix of the version parts).
pub fn pick(candidates: &[String], want: &[u64]) -> Option<String> {
    candidates
        .iter()
        .filter_map(|c| package_abi(c).map(|v| (v, c)))
        .filter(|(v, _)| v.starts_with(want))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, c)| c.clone())
}

fn release_of(parts: &[u64]) -> String {
    format!("{}.{}.{}+deb12-amd64", parts[0], parts[1], parts[2])
}

fn package_of(parts: &[u64]) -> String {
    format!("linux-image-{}-unsigned", release_of(parts))
}

/// A complete cached kernel directory, if there is one.
pub fn load_cached(dir: &Path) -> Option<KernelInfo> {
    let release = dir.file_name()?.to_string_lossy().into_owned();
    let vmlinuz = dir.join("vmlinuz");
    if !vmlinuz.is_file() {
        return None;
    }
    let pkg = fs::read_to_string(dir.join("package.txt")).ok()?;
    let mut it = pkg.split_whitespace();
    let package = it.next()?.to_string();
    let package_version = it.next().unwrap_or("").to_string();
    let modules = MODULES
        .iter()
        .map(|m| dir.join(format!("modules/{m}.ko")))
        .filter(|p| p.is_file())
        .collect();
    Some(KernelInfo {
        release,
        package,
        package_version,
        vmlinuz,
        modules,
        fetched: false,
        note: None,
    })
}

fn newest_cached(cache: &Path, want: &[u64]) -> Option<KernelInfo> {
    let rd = fs::read_dir(cache.join("kernels")).ok()?;
    rd.flatten()
        .filter_map(|e| load_cached(&e.path()))
        .filter_map(|k| package_abi(&k.package).map(|v| (v, k)))
        .filter(|(v, _)| v.starts_with(want))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, k)| k)
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Makes sure a kernel matching `want` is in `cache` and returns it.
pub fn ensure_kernel(
    cache: &Path,
    want: Option<&str>,
    verbose: bool,
) -> Result<KernelInfo, String> {
    let parts = requested_parts(want)?;
    if parts.len() == 3 {
        if let Some(k) = load_cached(&cache.join("kernels").join(release_of(&parts))) {
            return Ok(k);
        }
    }
    let listed = run(
        Command::new("apt-cache").args([
            "search",
            "--names-only",
            r"^linux-image-[0-9.]+\+deb12-amd64-unsigned$",
        ]),
        "apt-cache search",
    )
    .map(|o| parse_candidates(&o))
    .unwrap_or_default();
    let pkg = match pick(&listed, &parts) {
        Some(p) => p,
        None if parts.len() == 3 => package_of(&parts),
        None => {
            if let Some(mut k) = newest_cached(cache, &parts) {
                k.note =
                    Some(format!(
                    "apt knows no linux-image-{}.* package (run apt-get update); using cached {}",
                    parts.iter().map(u64::to_string).collect::<Vec<_>>().join("."),
                    k.release
                ));
                return Ok(k);
            }
            return Err(format!(
                "no Debian kernel package linux-image-{}.*+deb12-amd64-unsigned is known to apt: run `apt-get update` (bookworm-security must be in the sources)",
                parts.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
            ));
        }
    };
    let abi = package_abi(&pkg).ok_or_else(|| format!("bad package name {pkg}"))?;
    let release = release_of(&abi);
    let dir = cache.join("kernels").join(&release);
    if let Some(k) = load_cached(&dir) {
        return Ok(k);
    }
    match fetch(cache, &pkg, &release, verbose) {
        Ok(k) => Ok(k),
        Err(e) => match newest_cached(cache, &parts) {
            Some(mut k) => {
                k.note = Some(format!(
                    "could not fetch {pkg} ({e}); using cached {}",
                    k.release
                ));
                Ok(k)
            }
            None => Err(e),
        },
    }
}

fn fetch(cache: &Path, pkg: &str, release: &str, verbose: bool) -> Result<KernelInfo, String> {
    let kernels = cache.join("kernels");
    fs::create_dir_all(&kernels).map_err(|e| format!("{}: {e}", kernels.display()))?;
    let tmp = kernels.join(format!(".tmp-{}-{release}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(tmp.join("x")).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let result = fetch_into(&tmp, pkg, release, verbose);
    let out = result.and_then(|version| {
        let dir = kernels.join(release);
        let x = tmp.join("x");
        fs::write(x.join("package.txt"), format!("{pkg} {version}\n"))
            .map_err(|e| format!("{}: {e}", x.display()))?;
        match fs::rename(&x, &dir) {
            Ok(()) => {}
            Err(_) if load_cached(&dir).is_some() => {}
            Err(e) => return Err(format!("{} -> {}: {e}", x.display(), dir.display())),
        }
        let mut k = load_cached(&dir).ok_or_else(|| format!("{} is incomplete", dir.display()))?;
        k.fetched = true;
        Ok(k)
    });
    let _ = fs::remove_dir_all(&tmp);
    out
}

fn fetch_into(tmp: &Path, pkg: &str, release: &str, verbose: bool) -> Result<String, String> {
    if verbose {
        eprintln!("numalab vm: fetching {pkg} with apt-get download");
    }
    run(
        Command::new("apt-get")
            .args(["download", "-q", "-o", "APT::Sandbox::User=root", pkg])
            .current_dir(tmp),
        &format!("apt-get download {pkg}"),
    )?;
    let deb = fs::read_dir(tmp)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| format!("apt-get download {pkg} left no .deb"))?;
    let version = run(
        Command::new("dpkg-deb").arg("-f").arg(&deb).arg("Version"),
        "dpkg-deb -f",
    )?
    .trim()
    .to_string();
    // List the members, then extract only the ones we need.
    let listing = tar_of_deb(&deb, &["-t"], None)?;
    let want_mod = |m: &str, name: &str| {
        let f = name.rsplit('/').next().unwrap_or("");
        f == format!("{m}.ko") || f == format!("{m}.ko.xz") || f == format!("{m}.ko.zst")
    };
    let mut members = Vec::new();
    let vmlinuz = listing
        .lines()
        .find(|l| l.ends_with(&format!("boot/vmlinuz-{release}")))
        .ok_or_else(|| format!("{pkg} has no boot/vmlinuz-{release}"))?
        .to_string();
    members.push(vmlinuz.clone());
    if let Some(c) = listing
        .lines()
        .find(|l| l.ends_with(&format!("boot/config-{release}")))
    {
        members.push(c.to_string());
    }
    let mut mods = Vec::new();
    for m in MODULES {
        if let Some(l) = listing.lines().find(|l| want_mod(m, l)) {
            members.push(l.to_string());
            mods.push((m, l.to_string()));
        }
    }
    let x = tmp.join("x");
    tar_of_deb(
        &deb,
        &["-x", "-C", &x.display().to_string()],
        Some(&members),
    )?;
    fs::rename(x.join(vmlinuz.trim_start_matches("./")), x.join("vmlinuz"))
        .map_err(|e| format!("vmlinuz: {e}"))?;
    if let Some(c) = members.get(1).filter(|c| c.contains("config-")) {
        let _ = fs::rename(x.join(c.trim_start_matches("./")), x.join("config"));
    }
    let md = x.join("modules");
    fs::create_dir_all(&md).map_err(|e| e.to_string())?;
    for (m, member) in mods {
        let src = x.join(member.trim_start_matches("./"));
        let dst = md.join(format!("{m}.ko"));
        let data = if member.ends_with(".xz") {
            run_bytes(Command::new("xz").arg("-dc").arg(&src), "xz -dc")?
        } else if member.ends_with(".zst") {
            run_bytes(Command::new("zstd").arg("-dc").arg(&src), "zstd -dc")?
        } else {
            fs::read(&src).map_err(|e| e.to_string())?
        };
        fs::write(&dst, data).map_err(|e| format!("{}: {e}", dst.display()))?;
    }
    for sub in ["boot", "lib", "usr"] {
        let _ = fs::remove_dir_all(x.join(sub));
    }
    Ok(version)
}

fn run_bytes(cmd: &mut Command, what: &str) -> Result<Vec<u8>, String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

/// `dpkg-deb --fsys-tarfile DEB | tar ARGS [MEMBERS...]`, returning tar's
/// stdout.
fn tar_of_deb(deb: &Path, tar_args: &[&str], members: Option<&[String]>) -> Result<String, String> {
    let mut dpkg = Command::new("dpkg-deb")
        .arg("--fsys-tarfile")
        .arg(deb)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("dpkg-deb: {e}"))?;
    let stdout = dpkg.stdout.take().ok_or("dpkg-deb: no stdout")?;
    let mut tar = Command::new("tar");
    tar.args(tar_args).arg("-f").arg("-").stdin(stdout);
    if let Some(m) = members {
        tar.args(m);
    }
    let out = tar.output().map_err(|e| format!("tar: {e}"))?;
    let st = dpkg.wait().map_err(|e| format!("dpkg-deb: {e}"))?;
    if !out.status.success() || !st.success() {
        return Err(format!(
            "extracting {}: {}",
            deb.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let _ = std::io::stderr().flush();
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_of_the_series_is_picked() {
        let out = "linux-image-6.12.107+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs\n\
                   linux-image-6.12.117+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs\n\
                   linux-image-6.12.9+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs\n\
                   linux-image-6.1.0-30-amd64-unsigned - Linux 6.1\n\
                   linux-image-6.13.2+deb12-amd64-unsigned - x\n";
        let c = parse_candidates(out);
        assert_eq!(c.len(), 4);
        let series = requested_parts(None).unwrap();
        assert_eq!(
            pick(&c, &series).unwrap(),
            "linux-image-6.12.117+deb12-amd64-unsigned"
        );
        let exact = requested_parts(Some("6.12.9")).unwrap();
        assert_eq!(
            pick(&c, &exact).unwrap(),
            "linux-image-6.12.9+deb12-amd64-unsigned"
        );
        assert!(pick(&c, &requested_parts(Some("6.11")).unwrap()).is_none());
        assert_eq!(
            requested_parts(Some("6.12.117+deb12-amd64")).unwrap(),
            vec![6, 12, 117]
        );
        assert_eq!(
            requested_parts(Some("linux-image-6.12.117+deb12-amd64-unsigned")).unwrap(),
            vec![6, 12, 117]
        );
        assert!(requested_parts(Some("latest")).is_err());
        assert!(requested_parts(Some("6")).is_err());
    }

    #[test]
    fn cache_entries_are_recognised() {
        let d = tempfile::tempdir().unwrap();
        let k = d.path().join("kernels/6.12.117+deb12-amd64");
        fs::create_dir_all(k.join("modules")).unwrap();
        assert!(load_cached(&k).is_none());
        fs::write(k.join("vmlinuz"), b"x").unwrap();
        fs::write(
            k.join("package.txt"),
            "linux-image-6.12.117+deb12-amd64-unsigned 6.12.117-1~deb12u1\n",
        )
        .unwrap();
        fs::write(k.join("modules/9p.ko"), b"m").unwrap();
        let got = load_cached(&k).unwrap();
        assert_eq!(got.release, "6.12.117+deb12-amd64");
        assert_eq!(got.package_version, "6.12.117-1~deb12u1");
        assert_eq!(got.modules.len(), 1);
        let n = newest_cached(d.path(), &[6, 12]).unwrap();
        assert_eq!(n.release, got.release);
        assert!(newest_cached(d.path(), &[6, 13]).is_none());
        // An exact request is served from the cache without apt.
        let e = ensure_kernel(d.path(), Some("6.12.117"), false).unwrap();
        assert!(!e.fetched);
    }
}
