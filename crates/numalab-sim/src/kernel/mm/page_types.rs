//! Page sizes and page-state markers (arch/x86/include/asm/page_types.h's
//! `PAGE_SHIFT`, include/linux/huge_mm.h's `HPAGE_PMD_NR`, the `NUMA_NO_NODE`
//! and unset `last_cpupid` values): constants the mm and NUMA balancing both
//! read, in a leaf file so that reading them imports nothing. Left out: page
//! sizes other than 4 KiB and 2 MiB.

/// Base page shift (4 KiB).
pub const PAGE_SHIFT: u32 = 12;
/// Huge page shift (2 MiB).
pub const HPAGE_SHIFT: u32 = 21;
/// Base pages in a huge page (`HPAGE_PMD_NR`).
pub const HPAGE_PMD_NR: u64 = 512;
/// Marker for a page that is not present.
pub const NO_NODE: u8 = u8::MAX;

/// `last_cpupid` value of a page nobody has faulted on yet (`-1` masked).
pub const CPUPID_UNSET: u32 = u32::MAX;
