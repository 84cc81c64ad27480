//! /proc/self/mounts: where a filesystem type is mounted, with the octal
//! escapes of mount points undone. Its own file because the host facts
//! (host.rs) and the cgroup tree (cgroup.rs) both read mounts, and neither
//! should import the other. Left out: mount options and bind mounts.

use std::path::PathBuf;

/// First mount point of a filesystem type in /proc/self/mounts text.
pub fn find_mount(mounts: &str, fstype: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 3 && f[2] == fstype).then(|| PathBuf::from(unescape_mount(f[1])))
    })
}

/// Undoes the octal escapes (`\040` for a space) of /proc/mounts.
pub fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_are_found_and_unescaped() {
        let t = "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\ntracefs /sys/kernel/my\\040tracing tracefs rw 0 0\n";
        assert_eq!(
            find_mount(t, "tracefs").unwrap(),
            PathBuf::from("/sys/kernel/my tracing")
        );
        assert!(find_mount(t, "debugfs").is_none());
    }
}
