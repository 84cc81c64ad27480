//! Where the kernel's knob filesystems are mounted: procfs sysctls, debugfs
//! and sysfs. Its own file because both the knob writer (knobs.rs) and the
//! journal that restores knobs after a killed run (journal.rs) need it, and
//! the writer uses the journal. Left out: finding the mounts (mounts.rs).

use std::path::PathBuf;

/// Where the knob filesystems are (a test points them at a fake tree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnobRoots {
    /// procfs sysctl directory, normally /proc/sys.
    pub proc_sys: PathBuf,
    /// debugfs mount, normally /sys/kernel/debug.
    pub debugfs: PathBuf,
    /// sysfs mount, normally /sys.
    pub sys: PathBuf,
}

impl Default for KnobRoots {
    fn default() -> Self {
        KnobRoots {
            proc_sys: PathBuf::from("/proc/sys"),
            debugfs: PathBuf::from("/sys/kernel/debug"),
            sys: PathBuf::from("/sys"),
        }
    }
}
