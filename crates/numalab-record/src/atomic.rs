//! Writing a file so that a reader (or a crash) sees the old content or the
//! new, never half of the new: [`write_atomic`] and [`write_atomic_with`].
//!
//! The text goes to a temporary file in the target's own directory (a
//! rename is only atomic within one filesystem), which is fsynced, renamed
//! over the target, and the directory fsynced so the rename survives a
//! crash too. Whatever goes wrong before the rename removes the temporary
//! and leaves the target untouched. Every file numalab writes (Run and
//! RunSet JSON, traces, validate records, the real-run journal) goes
//! through here; it lives in numalab-record because both the CLI and
//! numalab-real depend on this crate.
//!
//! Left out: targets that are not regular files. `--json /dev/null` or a
//! FIFO cannot be replaced by a rename (and as root, renaming over
//! /dev/null would replace the device), so an existing non-regular target
//! is written in place. A symlink is followed: its target is replaced, as
//! a plain write would. A replaced file keeps its permission bits; a new
//! one gets the usual 0666 less the umask (std's `File::create`), unlike
//! `tempfile`'s 0600.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `contents` to `path` atomically: afterwards `path` holds either
/// its old content (on error) or all of `contents`.
pub fn write_atomic(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    write_atomic_with(path, |w| w.write_all(contents.as_ref()))
}

/// Like [`write_atomic`], with the content produced by `write` into the
/// temporary file (buffered). An error from `write` leaves `path` as it
/// was and no temporary behind.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let target = match fs::metadata(path) {
        // Not a regular file: a device or FIFO is written in place.
        Ok(m) if !m.is_file() && !m.is_dir() => {
            let mut w = io::BufWriter::new(OpenOptions::new().write(true).open(path)?);
            write(&mut w)?;
            return w.flush();
        }
        // Follow a symlink to the file it names.
        Ok(_) => fs::canonicalize(path)?,
        Err(_) => path.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
    let (tmp, file) = create_temp(&dir, &name.to_string_lossy())?;
    let mut guard = TempGuard(Some(tmp));
    let mut w = io::BufWriter::new(file);
    write(&mut w)?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    if let Ok(m) = fs::metadata(&target) {
        file.set_permissions(m.permissions())?;
    }
    file.sync_all()?;
    drop(file);
    let tmp = guard.0.take().unwrap_or_default();
    if let Err(e) = fs::rename(&tmp, &target) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // Make the rename itself durable; a filesystem that cannot fsync a
    // directory still has the complete file in place.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes the temporary file when the write fails (or panics) before
/// the rename.
struct TempGuard(Option<PathBuf>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// A new file `.NAME.PID.N.tmp` in `dir`, trying the next N while one
/// exists (another writer of the same target).
fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    let mut n = 0u32;
    loop {
        let p = dir.join(format!(".{name}.{pid}.{n}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn creates_and_replaces_leaving_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run.json");
        write_atomic(&p, "first").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "first");
        write_atomic(&p, "second, longer").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "second, longer");
        write_atomic(&p, "3").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "3");
        assert_eq!(entries(d.path()), vec!["run.json"]);
    }

    #[test]
    fn a_failed_write_keeps_the_old_content_and_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run.json");
        write_atomic(&p, "old content").unwrap();
        let e = write_atomic_with(&p, |w| {
            // Half of the new content, then the writer fails.
            w.write_all(&[b'x'; 100_000])?;
            Err(io::Error::other("disk gone"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "disk gone");
        assert_eq!(fs::read_to_string(&p).unwrap(), "old content");
        assert_eq!(entries(d.path()), vec!["run.json"]);
        // No old file: none afterwards either.
        let q = d.path().join("new.json");
        write_atomic_with(&q, |_| Err(io::Error::other("no"))).unwrap_err();
        assert!(!q.exists());
        assert_eq!(entries(d.path()), vec!["run.json"]);
    }

    #[test]
    fn a_missing_directory_is_an_error_and_creates_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("no/such/dir/run.json");
        let e = write_atomic(&p, "x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(entries(d.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_followed_permissions_kept_and_devices_written_in_place() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.json");
        write_atomic(&real, "a").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, "b").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "b");
        let mode = fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        // A character device is written, not replaced.
        write_atomic(Path::new("/dev/null"), "gone").unwrap();
        assert!(!fs::metadata("/dev/null").unwrap().is_file());
    }
}
