//! The guest's initramfs: busybox, the numalab binary (and its shared
//! libraries when it is not static), the 9p modules, and `/init`.
//!
//! The archive is written directly in the kernel's "newc" cpio format
//! (no cpio tool needed, byte-identical for the same inputs: inode numbers
//! count up, every mtime is 0, owners are root). `/init` is a busybox
//! shell script: it mounts proc, sysfs, devtmpfs, cgroup2 (and enables
//! cpuset, cpu and memory for children), debugfs and tracefs, loads the 9p
//! modules and mounts the host share on /share, runs
//! `/bin/numalab ARGS...` (arguments one per line in /numalab.args), and
//! powers off. Its progress lines on the serial console start with
//! `NUMALAB-`; when the share cannot be mounted, the result file is printed
//! between `NUMALAB-JSON-BEGIN` and `NUMALAB-JSON-END` instead.
//!
//! Left out: compression (the kernel unpacks a plain archive fastest) and
//! any init system beyond that script.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A newc cpio archive being built.
#[derive(Debug, Default)]
pub struct Cpio {
    buf: Vec<u8>,
    ino: u32,
    dirs: BTreeSet<String>,
    names: BTreeSet<String>,
}

fn pad4(buf: &mut Vec<u8>) {
    while !buf.len().is_multiple_of(4) {
        buf.push(0);
    }
}

impl Cpio {
    /// An empty archive.
    pub fn new() -> Cpio {
        Cpio::default()
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        self.ino += 1;
        let namesize = name.len() + 1;
        let hdr = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            data.len(),
            0,
            0,
            rdev.0,
            rdev.1,
            namesize,
            0
        );
        self.buf.extend_from_slice(hdr.as_bytes());
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        pad4(&mut self.buf);
        self.buf.extend_from_slice(data);
        pad4(&mut self.buf);
    }

    fn rel(path: &str) -> String {
        path.trim_start_matches('/').to_string()
    }

    /// Adds a directory (and its parents) once.
    pub fn dir(&mut self, path: &str) {
        let rel = Cpio::rel(path);
        if rel.is_empty() || self.dirs.contains(&rel) {
            return;
        }
        if let Some((parent, _)) = rel.rsplit_once('/') {
            self.dir(parent);
        }
        self.dirs.insert(rel.clone());
        self.entry(&rel, 0o040755, &[], (0, 0));
    }

    fn parent_of(&mut self, rel: &str) {
        if let Some((parent, _)) = rel.rsplit_once('/') {
            self.dir(parent);
        }
    }

    /// Adds a regular file with permission bits `perm` (e.g. 0o755).
    /// A path added twice keeps its first content.
    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) {
        let rel = Cpio::rel(path);
        if !self.names.insert(rel.clone()) {
            return;
        }
        self.parent_of(&rel);
        self.entry(&rel, 0o100000 | (perm & 0o7777), data, (0, 0));
    }

    /// Adds a symbolic link.
    pub fn symlink(&mut self, path: &str, target: &str) {
        let rel = Cpio::rel(path);
        if !self.names.insert(rel.clone()) {
            return;
        }
        self.parent_of(&rel);
        self.entry(&rel, 0o120777, target.as_bytes(), (0, 0));
    }

    /// Adds a character device node.
    pub fn char_dev(&mut self, path: &str, major: u32, minor: u32) {
        let rel = Cpio::rel(path);
        if !self.names.insert(rel.clone()) {
            return;
        }
        self.parent_of(&rel);
        self.entry(&rel, 0o020600, &[], (major, minor));
    }

    /// Closes the archive with the trailer and returns its bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.ino = 0;
        self.entry("TRAILER!!!", 0, &[], (0, 0));
        while !self.buf.len().is_multiple_of(512) {
            self.buf.push(0);
        }
        self.buf
    }
}

/// The `PT_INTERP` of an ELF64 little-endian executable: `None` for a
/// static binary. Errors for anything that is not such an ELF file.
pub fn elf_interpreter(bytes: &[u8]) -> Result<Option<String>, String> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let u64_at = |o: usize| -> Result<usize, String> {
        let s = bytes.get(o..o + 8).ok_or("truncated ELF")?;
        Ok(u64::from_le_bytes(s.try_into().map_err(|_| "truncated ELF")?) as usize)
    };
    let phoff = u64_at(0x20)?;
    let phentsize = u16_at(0x36);
    let phnum = u16_at(0x38);
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        let ty = bytes
            .get(ph..ph + 4)
            .ok_or("truncated ELF program header")?;
        if u32::from_le_bytes(ty.try_into().map_err(|_| "bad header")?) == 3 {
            let off = u64_at(ph + 8)?;
            let size = u64_at(ph + 32)?;
            let s = bytes.get(off..off + size).ok_or("truncated PT_INTERP")?;
            let s = s.split(|&b| b == 0).next().unwrap_or(&[]);
            return Ok(Some(String::from_utf8_lossy(s).into_owned()));
        }
    }
    Ok(None)
}

/// Absolute library paths in `ldd` output (`libc.so.6 => /lib/... (0x..)`
/// and the loader line `/lib64/ld-linux-x86-64.so.2 (0x..)`).
pub fn parse_ldd(out: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for line in out.lines() {
        let line = line.trim();
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path {
            if p.starts_with('/') {
                v.push(PathBuf::from(p));
            }
        }
    }
    v
}

/// Files a dynamically linked binary needs in the guest (from `ldd`).
pub fn shared_libs(binary: &Path) -> Result<Vec<PathBuf>, String> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| format!("ldd {}: {e}", binary.display()))?;
    if !out.status.success() {
        return Err(format!(
            "ldd {}: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(parse_ldd(&String::from_utf8_lossy(&out.stdout)))
}

/// The /init script.
pub fn init_script() -> String {
    r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
for c in cpuset cpu memory; do echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; done
echo "NUMALAB-INIT uptime=$(cut -d' ' -f1 /proc/uptime) release=$(uname -r) nodes=$(cat /sys/devices/system/node/online) cpus=$(cat /sys/devices/system/cpu/online)"
SHARE=no
if [ -d /modules ]; then
  for m in netfs 9pnet 9pnet_virtio 9p; do
    [ -f /modules/$m.ko ] && insmod /modules/$m.ko 2>/dev/null
  done
fi
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host0 /share 2>/dev/null; then SHARE=yes; fi
echo "NUMALAB-SHARE $SHARE"
set --
while IFS= read -r a; do set -- "$@" "$a"; done < /numalab.args
echo "NUMALAB-RUN $(cut -d' ' -f1 /proc/uptime)"
/bin/numalab "$@"
rc=$?
echo "NUMALAB-EXIT rc=$rc uptime=$(cut -d' ' -f1 /proc/uptime)"
if [ "$SHARE" = yes ]; then
  dmesg > /share/dmesg.txt 2>/dev/null
else
  for f in /share/*.json; do
    [ -f "$f" ] || continue
    echo "NUMALAB-JSON-BEGIN $f"
    cat "$f"
    echo
    echo "NUMALAB-JSON-END"
  done
fi
sync
poweroff -f
"#
    .to_string()
}

/// Builds the initramfs: `busybox` (must be static), `binary` as
/// /bin/numalab (plus its libraries when dynamic), `modules` under
/// /modules, `args` in /numalab.args, and /init.
pub fn build(
    busybox: &Path,
    binary: &Path,
    args: &[String],
    modules: &[PathBuf],
) -> Result<Vec<u8>, String> {
    let read = |p: &Path| fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let bb = read(busybox)?;
    if elf_interpreter(&bb)
        .map_err(|e| format!("{}: {e}", busybox.display()))?
        .is_some()
    {
        return Err(format!(
            "{} is dynamically linked; install the static one: apt-get install busybox-static",
            busybox.display()
        ));
    }
    let bin = read(binary)?;
    let interp = elf_interpreter(&bin).map_err(|e| format!("{}: {e}", binary.display()))?;
    let mut c = Cpio::new();
    for d in [
        "/bin", "/dev", "/proc", "/sys", "/tmp", "/share", "/modules", "/root",
    ] {
        c.dir(d);
    }
    c.char_dev("/dev/console", 5, 1);
    c.char_dev("/dev/null", 1, 3);
    c.file("/bin/busybox", 0o755, &bb);
    c.symlink("/bin/sh", "busybox");
    c.file("/bin/numalab", 0o755, &bin);
    if interp.is_some() {
        for lib in shared_libs(binary)? {
            let data = read(&lib)?;
            c.file(&lib.display().to_string(), 0o755, &data);
        }
    }
    for m in modules {
        let name = m
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| format!("bad module path {}", m.display()))?;
        c.file(&format!("/modules/{name}"), 0o644, &read(m)?);
    }
    let mut a = String::new();
    for x in args {
        if x.contains('\n') {
            return Err(format!("guest argument {x:?} contains a newline"));
        }
        a.push_str(x);
        a.push('\n');
    }
    c.file("/numalab.args", 0o644, a.as_bytes());
    c.file("/init", 0o755, init_script().as_bytes());
    Ok(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_headers_and_padding() {
        let mut c = Cpio::new();
        c.file("/a/b", 0o644, b"hello");
        let b = c.finish();
        let s = String::from_utf8_lossy(&b);
        // Directory "a" first, then "a/b", then the trailer.
        assert!(s.starts_with("070701"));
        let first_name = &s[110..111];
        assert_eq!(first_name, "a");
        assert!(s.contains("a/b\0"));
        assert!(s.contains("hello"));
        assert!(s.contains("TRAILER!!!"));
        assert_eq!(b.len() % 512, 0);
        // File header: mode 0100644, size 5.
        let i = s.find("a/b\0").unwrap() - 110;
        assert_eq!(&s[i + 14..i + 22], "000081a4");
        assert_eq!(&s[i + 54..i + 62], "00000005");
        // Names are 4-byte aligned with their header.
        assert_eq!(i % 4, 0);
    }

    #[test]
    fn same_inputs_same_bytes_and_no_duplicates() {
        let mk = || {
            let mut c = Cpio::new();
            c.file("/x/y", 0o755, b"1");
            c.file("/x/y", 0o755, b"2");
            c.char_dev("/dev/console", 5, 1);
            c.finish()
        };
        let a = mk();
        assert_eq!(a, mk());
        assert_eq!(String::from_utf8_lossy(&a).matches("x/y\0").count(), 1);
    }

    #[test]
    fn ldd_output_is_parsed() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(out),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
    }

    #[test]
    fn elf_interpreter_of_this_test_binary() {
        let me = fs::read(std::env::current_exe().unwrap()).unwrap();
        let i = elf_interpreter(&me).unwrap();
        // Test binaries are dynamically linked unless built with crt-static.
        if let Some(i) = i {
            assert!(i.contains("ld-linux"), "{i}");
        }
        assert!(elf_interpreter(b"#!/bin/sh\n").is_err());
    }

    #[test]
    fn init_reads_args_and_powers_off() {
        let s = init_script();
        assert!(s.contains("/numalab.args"));
        assert!(s.contains("poweroff -f"));
        assert!(s.contains("mount -t cgroup2"));
        assert!(s.contains("NUMALAB-JSON-BEGIN"));
    }
}
