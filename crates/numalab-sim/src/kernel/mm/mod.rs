//! Address spaces, VMAs and pages (mm/).
//!
//! Pages are real objects: each has a node (or none before first touch), a
//! PROT_NONE hinting mark and a `last_cpupid`. A VMA also keeps, per 2 MiB
//! chunk of virtual space, how many of its pages sit on each node and how
//! many are *special* (not present, or marked for a hinting fault), so an
//! access stream skips whole chunks that need no fault in O(1) and the
//! physics can ask for a range's node mix cheaply.
//!
//! Memory shared between processes is a shared object's ([`shmem`]): its
//! folios are the object's, each mapping's pages its PTEs.
//!
//! Left out: page cache and file mappings, swap, reclaim, KSM, the zero
//! page, page-table pages as memory, partial THP (a THP VMA is all 2 MiB
//! pages, its size rounded up to 2 MiB).

pub mod fault;
pub mod memcontrol;
pub mod mempolicy;
pub mod page_alloc;
pub mod page_types;
pub mod shmem;
pub mod state;
pub mod tlb;

use crate::kernel::ids::TiVec;
use crate::kernel::{MmId, NodeId, VmaId};
use mempolicy::MemPolicy;
pub use state::MmState;

pub use page_types::{CPUPID_UNSET, HPAGE_PMD_NR, HPAGE_SHIFT, NO_NODE, PAGE_SHIFT};

/// One page (a folio of one base or huge page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// Node holding the page, or [`NO_NODE`].
    pub nid: u8,
    /// PROT_NONE set by NUMA scanning: the next access takes a hinting fault.
    pub protnone: bool,
    /// `folio_last_cpupid`: (pid & 0xff) << 16 | cpu of the last hinting
    /// fault, or [`CPUPID_UNSET`].
    pub last_cpupid: u32,
}

impl Page {
    const EMPTY: Page = Page {
        nid: NO_NODE,
        protnone: false,
        last_cpupid: CPUPID_UNSET,
    };

    /// A page an access must fault on: not present, or marked.
    pub fn special(&self) -> bool {
        self.nid == NO_NODE || self.protnone
    }

    /// Node of a page known to be present (a hinting fault or a migration
    /// only meets present pages).
    pub fn node_id(&self) -> NodeId {
        debug_assert!(self.nid != NO_NODE, "page not present");
        NodeId::new(self.nid as usize)
    }

    /// Node holding the page, None when not present.
    pub fn node(&self) -> Option<NodeId> {
        (self.nid != NO_NODE).then(|| NodeId::new(self.nid as usize))
    }
}

/// From this many set bits to pass over, [`select_bit`]'s six halvings
/// cost less than clearing them one by one.
const SELECT_BY_HALVES: u64 = 16;

/// The position of the `k`-th set bit of `w` (0: the lowest), which has
/// more than `k`: the word halved six times by its halves' popcounts,
/// where clearing the `k` lowest bits one by one took up to 63 dependent
/// steps (a random fault's gap lands anywhere in a word of special pages;
/// pmbench-hour spent a twentieth of its time there).
#[inline]
pub fn select_bit(mut w: u64, mut k: u32) -> u32 {
    debug_assert!(w.count_ones() > k);
    let mut pos = 0;
    let mut width = 64;
    while width > 1 {
        let half = width / 2;
        let low = w & ((1u64 << half) - 1);
        let c = low.count_ones();
        if k >= c {
            k -= c;
            w >>= half;
            pos += half;
        } else {
            w = low;
        }
        width = half;
    }
    pos
}

/// A virtual memory area.
#[derive(Clone, Debug)]
pub struct Vma {
    /// Name of the workload region.
    pub name: String,
    /// First virtual address.
    pub start: u64,
    /// Size in bytes (a multiple of the page size).
    pub bytes: u64,
    /// `PAGE_SHIFT` or `HPAGE_SHIFT`.
    pub page_shift: u32,
    /// VMA policy (mbind), if any.
    pub policy: Option<MemPolicy>,
    /// The pages.
    pub pages: Vec<Page>,
    /// Pages per chunk.
    pub pages_per_chunk: usize,
    /// `chunk_nodes[c * nr_nodes + n]`: pages of chunk `c` on node `n`.
    pub chunk_nodes: Vec<u32>,
    /// Pages of the whole VMA on each node (the sum of `chunk_nodes`).
    node_pages: Vec<u64>,
    /// Special pages per chunk.
    pub chunk_special: Vec<u32>,
    /// Special pages in the whole VMA.
    pub nr_special: u64,
    /// One bit per page, set when the page is special: lets
    /// [`Vma::next_special`] find the next one a word at a time.
    special_bits: Vec<u64>,
    /// One bit per chunk, set when the chunk has a special page: lets
    /// [`Vma::next_special`] skip runs of settled chunks a word at a time.
    chunk_bits: Vec<u64>,
    /// Bumped whenever a page changes node or presence.
    pub version: u64,
    nr_nodes: usize,
    /// NUMA balancing per-VMA state (`vma->numab_state`), if created.
    pub numab: Option<crate::kernel::numa::VmaNumabState>,
    /// A mapping of a shared object ([`shmem::Shmem`], by its index in
    /// [`MmState::shmem`]): `VM_SHARED`. Its pages are then this mm's
    /// PTEs (present on a node, PROT_NONE), its folios the object's
    /// (node, `last_cpupid`); `None` for a private anonymous VMA, whose
    /// pages are both.
    pub shm: Option<usize>,
    /// The workload region this VMA models stands for separate VMAs of
    /// this many bytes each (thread stacks split by guard pages): the
    /// size 3.9's scanner judges (`numalab.numa_scan_39`). `None`: `bytes`.
    pub piece_bytes: Option<u64>,
}

impl Vma {
    /// A VMA of `bytes` at `start` with all pages not present.
    pub fn new(
        name: &str,
        start: u64,
        bytes: u64,
        thp: bool,
        policy: Option<MemPolicy>,
        nr_nodes: usize,
    ) -> Vma {
        let page_shift = if thp { HPAGE_SHIFT } else { PAGE_SHIFT };
        let psize = 1u64 << page_shift;
        let bytes = bytes.div_ceil(psize) * psize;
        let npages = (bytes >> page_shift) as usize;
        let pages_per_chunk = 1usize << (HPAGE_SHIFT - page_shift);
        let nchunks = npages.div_ceil(pages_per_chunk);
        let mut chunk_special = vec![pages_per_chunk as u32; nchunks];
        if let Some(last) = chunk_special.last_mut() {
            let rem = npages - (nchunks - 1) * pages_per_chunk;
            *last = rem as u32;
        }
        Vma {
            name: name.to_string(),
            start,
            bytes,
            page_shift,
            policy,
            pages: vec![Page::EMPTY; npages],
            pages_per_chunk,
            chunk_nodes: vec![0; nchunks * nr_nodes],
            node_pages: vec![0; nr_nodes],
            chunk_special,
            nr_special: npages as u64,
            special_bits: {
                let mut b = vec![u64::MAX; npages.div_ceil(64)];
                if !npages.is_multiple_of(64) {
                    if let Some(last) = b.last_mut() {
                        *last = (1u64 << (npages % 64)) - 1;
                    }
                }
                b
            },
            // Every chunk starts with special (not present) pages.
            chunk_bits: {
                let mut b = vec![u64::MAX; nchunks.div_ceil(64)];
                if !nchunks.is_multiple_of(64) {
                    if let Some(last) = b.last_mut() {
                        *last = (1u64 << (nchunks % 64)) - 1;
                    }
                }
                b
            },
            version: 0,
            nr_nodes,
            numab: None,
            shm: None,
            piece_bytes: None,
        }
    }

    /// End address (exclusive).
    pub fn end(&self) -> u64 {
        self.start + self.bytes
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> u64 {
        1u64 << self.page_shift
    }

    /// True for a THP-backed VMA.
    pub fn is_thp(&self) -> bool {
        self.page_shift == HPAGE_SHIFT
    }

    /// Base pages per page of this VMA (`folio_nr_pages`).
    pub fn nr_base_pages(&self) -> u64 {
        1u64 << (self.page_shift - PAGE_SHIFT)
    }

    /// Number of chunks.
    pub fn nr_chunks(&self) -> usize {
        self.chunk_special.len()
    }

    fn chunk_of(&self, page: usize) -> usize {
        page / self.pages_per_chunk
    }

    /// Places page `idx` on node `node`, keeping the chunk summaries right.
    pub fn set_page_node(&mut self, idx: usize, node: NodeId) {
        let nid = node.index() as u8;
        let c = self.chunk_of(idx);
        let old = self.pages[idx];
        let was_special = old.special();
        if old.nid != NO_NODE {
            self.chunk_nodes[c * self.nr_nodes + old.nid as usize] -= 1;
            self.node_pages[old.nid as usize] -= 1;
        }
        if nid != NO_NODE {
            self.chunk_nodes[c * self.nr_nodes + nid as usize] += 1;
            self.node_pages[nid as usize] += 1;
        }
        self.pages[idx].nid = nid;
        self.fix_special(idx, c, was_special, self.pages[idx].special());
        self.version += 1;
    }

    /// Sets or clears the hinting mark of page `idx`.
    pub fn set_protnone(&mut self, idx: usize, on: bool) {
        let c = self.chunk_of(idx);
        let was_special = self.pages[idx].special();
        self.pages[idx].protnone = on;
        self.fix_special(idx, c, was_special, self.pages[idx].special());
    }

    fn fix_special(&mut self, idx: usize, c: usize, was: bool, now: bool) {
        match (was, now) {
            (false, true) => {
                if self.chunk_special[c] == 0 {
                    self.chunk_bits[c / 64] |= 1u64 << (c % 64);
                }
                self.chunk_special[c] += 1;
                self.nr_special += 1;
                self.special_bits[idx / 64] |= 1u64 << (idx % 64);
            }
            (true, false) => {
                self.chunk_special[c] -= 1;
                if self.chunk_special[c] == 0 {
                    self.chunk_bits[c / 64] &= !(1u64 << (c % 64));
                }
                self.nr_special -= 1;
                self.special_bits[idx / 64] &= !(1u64 << (idx % 64));
            }
            _ => {}
        }
    }

    /// True when page `idx` is special (not present, or marked for a
    /// hinting fault): the same answer as `pages[idx].special()`, read from
    /// the bitmap. A random access samples a page anywhere in a region of
    /// millions; its bit lies in an array 64 times smaller than the pages',
    /// which stays in cache where the page's own state is a miss.
    #[inline]
    pub fn is_special(&self, idx: usize) -> bool {
        self.special_bits[idx / 64] >> (idx % 64) & 1 == 1
    }

    /// Asks the CPU to bring page `p`'s state into cache ahead of a fault
    /// on it. Random faults land anywhere in a region of millions of pages
    /// (pmbench's 16 GiB), and the load of each page's state was a cache
    /// and TLB miss the engine waited for one fault at a time. A hint only:
    /// nothing changes if it is dropped, or off x86-64.
    #[inline]
    pub fn prefetch_page(&self, p: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(page) = self.pages.get(p) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: SSE is part of x86-64, and a prefetch never faults or
            // reads into the program: it is a hint to the cache about a
            // live element's address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>((page as *const Page).cast::<i8>()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }

    /// The first special page in `[from, to)` (page indices), if any.
    pub fn next_special(&self, from: usize, to: usize) -> Option<usize> {
        if self.nr_special == 0 || from >= to {
            return None;
        }
        let mut p = from;
        while p < to {
            let c = self.chunk_of(p);
            let chunk_end = ((c + 1) * self.pages_per_chunk).min(to);
            if self.chunk_special[c] == 0 {
                match self.next_special_chunk(c + 1) {
                    Some(n) => p = n * self.pages_per_chunk,
                    None => return None,
                }
                continue;
            }
            while p < chunk_end {
                let w = self.special_bits[p / 64] >> (p % 64);
                if w != 0 {
                    let q = p + w.trailing_zeros() as usize;
                    if q < chunk_end {
                        return Some(q);
                    }
                    break;
                }
                p = (p / 64 + 1) * 64;
            }
            p = chunk_end;
        }
        None
    }

    /// The special page `k` places after the first in `[from, to)` (`k`
    /// = 0: the first), if there are that many: counts a word of the
    /// bitmap at a time, so skipping over special pages costs one popcount
    /// per 64 pages.
    pub fn nth_special(&self, from: usize, to: usize, k: u64) -> Option<usize> {
        self.nth_special_in(from, to.min(self.pages.len()), k).ok()
    }

    /// As [`Vma::nth_special`], but whole chunks are skipped by their
    /// special-page counts, and chunks with none by the chunk bitmap: the
    /// cost follows the chunks passed, not the pages, for gaps that span a
    /// large sparse range (random accesses over GiBs with a few scanned
    /// windows marked).
    pub fn nth_special_far(&self, from: usize, to: usize, mut k: u64) -> Option<usize> {
        let to = to.min(self.pages.len());
        let ppc = self.pages_per_chunk;
        let mut p = from;
        while p < to {
            let c = p / ppc;
            let chunk_end = ((c + 1) * ppc).min(to);
            if p == c * ppc && chunk_end == (c + 1) * ppc {
                let n = u64::from(self.chunk_special[c]);
                if n == 0 {
                    p = self.next_special_chunk(c + 1)? * ppc;
                    continue;
                }
                if n <= k {
                    k -= n;
                    p = chunk_end;
                    continue;
                }
            }
            match self.nth_special_in(p, chunk_end, k) {
                Ok(q) => return Some(q),
                Err(rest) => k = rest,
            }
            p = chunk_end;
        }
        None
    }

    /// The special page `k` places after the first in `[from, to)`
    /// (`to` within the VMA), or how many of `k` are left past `to`.
    fn nth_special_in(&self, from: usize, to: usize, mut k: u64) -> Result<usize, u64> {
        let mut p = from;
        while p < to {
            let word_end = ((p / 64 + 1) * 64).min(to);
            let mut w = self.special_bits[p / 64] >> (p % 64);
            let width = word_end - p;
            if width < 64 {
                w &= (1u64 << width) - 1;
            }
            let n = w.count_ones() as u64;
            if n > k {
                if k >= SELECT_BY_HALVES {
                    return Ok(p + select_bit(w, k as u32) as usize);
                }
                for _ in 0..k {
                    w &= w - 1;
                }
                return Ok(p + w.trailing_zeros() as usize);
            }
            k -= n;
            p = word_end;
        }
        Err(k)
    }

    /// The first chunk at or after `c` with a special page, if any.
    fn next_special_chunk(&self, c: usize) -> Option<usize> {
        let mut i = c / 64;
        let mut w = self.chunk_bits.get(i)? & (u64::MAX << (c % 64));
        loop {
            if w != 0 {
                return Some(i * 64 + w.trailing_zeros() as usize);
            }
            i += 1;
            w = *self.chunk_bits.get(i)?;
        }
    }

    /// Special pages in `[from, to)`: exact over whole chunks, counted page by
    /// page at partial chunks.
    pub fn special_in(&self, from: usize, to: usize) -> u64 {
        if self.nr_special == 0 || from >= to {
            return 0;
        }
        let mut n = 0u64;
        let mut p = from;
        while p < to {
            let c = self.chunk_of(p);
            let cs = c * self.pages_per_chunk;
            let ce = ((c + 1) * self.pages_per_chunk).min(self.pages.len());
            let end = ce.min(to);
            if self.chunk_special[c] == 0 {
            } else if p == cs && end == ce {
                n += self.chunk_special[c] as u64;
            } else {
                n += self.pages[p..end].iter().filter(|pg| pg.special()).count() as u64;
            }
            p = end;
        }
        n
    }

    /// Pages per node over the chunks overlapping `[from, to)` (whole chunks,
    /// so approximate at the edges), plus pages not present.
    pub fn node_pages_in(&self, from: usize, to: usize, out: &mut [f64]) -> f64 {
        out.iter_mut().for_each(|x| *x = 0.0);
        if from >= to {
            return 0.0;
        }
        let (c0, c1) = (self.chunk_of(from), self.chunk_of(to - 1));
        let mut present = 0.0;
        if c0 == 0 && c1 + 1 == self.nr_chunks() {
            // The whole VMA: the running totals.
            for (o, &v) in out.iter_mut().zip(&self.node_pages) {
                *o = v as f64;
                present += v as f64;
            }
            return self.pages.len() as f64 - present;
        }
        for c in c0..=c1 {
            for (n, o) in out.iter_mut().enumerate() {
                let v = self.chunk_nodes[c * self.nr_nodes + n] as f64;
                *o += v;
                present += v;
            }
        }
        let total =
            ((c1 + 1) * self.pages_per_chunk).min(self.pages.len()) - c0 * self.pages_per_chunk;
        total as f64 - present
    }

    /// Pages of the VMA on each node.
    pub fn pages_by_node(&self) -> Vec<u64> {
        let mut v = vec![0u64; self.nr_nodes];
        for c in 0..self.nr_chunks() {
            for (n, x) in v.iter_mut().enumerate() {
                *x += self.chunk_nodes[c * self.nr_nodes + n] as u64;
            }
        }
        v
    }

    /// Checks the chunk summaries against the pages (debug invariant).
    pub fn check_invariants(&self) -> Result<(), String> {
        if let Some(i) = (0..self.pages.len())
            .find(|&i| self.pages[i].special() != (self.special_bits[i / 64] >> (i % 64) & 1 == 1))
        {
            return Err(format!("vma {} page {i}: special bit wrong", self.name));
        }
        let mut special = 0u64;
        for c in 0..self.nr_chunks() {
            let s = c * self.pages_per_chunk;
            let e = (s + self.pages_per_chunk).min(self.pages.len());
            let sp = self.pages[s..e].iter().filter(|p| p.special()).count() as u32;
            if sp != self.chunk_special[c] {
                return Err(format!(
                    "vma {} chunk {c}: special {sp} != {}",
                    self.name, self.chunk_special[c]
                ));
            }
            if (sp > 0) != (self.chunk_bits[c / 64] >> (c % 64) & 1 == 1) {
                return Err(format!("vma {} chunk {c}: chunk bit wrong", self.name));
            }
            special += sp as u64;
            for n in 0..self.nr_nodes {
                let cnt = self.pages[s..e]
                    .iter()
                    .filter(|p| p.nid as usize == n)
                    .count() as u32;
                if cnt != self.chunk_nodes[c * self.nr_nodes + n] {
                    return Err(format!(
                        "vma {} chunk {c} node {n}: count mismatch",
                        self.name
                    ));
                }
            }
        }
        if special != self.nr_special {
            return Err(format!("vma {}: nr_special mismatch", self.name));
        }
        if self.pages_by_node() != self.node_pages {
            return Err(format!("vma {}: per-node page totals mismatch", self.name));
        }
        Ok(())
    }
}

/// An address space (`struct mm_struct`).
#[derive(Clone, Debug)]
pub struct Mm {
    /// This mm.
    pub id: MmId,
    /// Pid of the owning process.
    pub tgid: u64,
    /// VMAs in address order.
    pub vmas: TiVec<VmaId, Vma>,
    /// Threads using the mm (`mm_users` as the threads make it; the
    /// kernel's `get_nr_threads`).
    pub users: u64,
    /// Other references counted in `mm_users` (a `/proc/PID/numa_maps`
    /// reader while it walks, `numalab.proc_mm_refs`).
    pub refs: u64,
    /// NUMA balancing scan state (`mm->numa_next_scan`, offset, seq).
    pub numa: crate::kernel::numa::MmNumaState,
}

impl Mm {
    /// A new address space `id` of process `tgid` with `vmas`, no user yet
    /// and a fresh NUMA scan state.
    pub fn new(id: MmId, tgid: u64, vmas: TiVec<VmaId, Vma>) -> Mm {
        Mm {
            id,
            tgid,
            vmas,
            users: 0,
            refs: 0,
            numa: Default::default(),
        }
    }

    /// `atomic_read(&mm->mm_users)`: its threads and other references.
    pub fn mm_users(&self) -> u64 {
        self.users + self.refs
    }

    /// Resident pages (base-page units) on each node.
    pub fn rss_by_node(&self, nr_nodes: usize) -> Vec<u64> {
        let mut v = vec![0u64; nr_nodes];
        for vma in &self.vmas {
            let k = vma.nr_base_pages();
            for (n, x) in vma.pages_by_node().into_iter().enumerate() {
                v[n] += x * k;
            }
        }
        v
    }

    /// Resident base pages in total (`get_mm_rss`).
    pub fn rss(&self) -> u64 {
        self.vmas
            .iter()
            .map(|v| {
                (v.pages.len() as u64 - v.pages.iter().filter(|p| p.nid == NO_NODE).count() as u64)
                    * v.nr_base_pages()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_summaries_follow_page_moves() {
        let mut v = Vma::new("a", 0, 3 << 20, false, None, 2);
        assert_eq!(v.nr_chunks(), 2);
        assert_eq!(v.nr_special, 768);
        assert_eq!(v.next_special(0, 768), Some(0));
        for p in 0..600 {
            v.set_page_node(p, NodeId::new(p % 2));
        }
        assert_eq!(v.next_special(0, 768), Some(600));
        assert_eq!(v.special_in(0, 768), 168);
        v.set_protnone(10, true);
        assert_eq!(v.next_special(0, 768), Some(10));
        assert_eq!(v.pages_by_node(), vec![300, 300]);
        v.set_page_node(3, NodeId::new(0));
        assert_eq!(v.pages_by_node(), vec![301, 299]);
        v.check_invariants().unwrap();
    }

    proptest::proptest! {
        /// The halving search finds the bit clearing the lower ones
        /// finds.
        #[test]
        fn select_bit_is_the_kth_set_bit(w in proptest::num::u64::ANY, k in 0u32..64) {
            proptest::prop_assume!(w.count_ones() > k);
            let mut v = w;
            for _ in 0..k {
                v &= v - 1;
            }
            proptest::prop_assert_eq!(select_bit(w, k), v.trailing_zeros());
        }

        /// The bitmap answer of `is_special` is the page's own, after any
        /// mix of faults in, hinting marks and their clearing.
        #[test]
        fn is_special_reads_the_pages_state(
            steps in proptest::collection::vec((0usize..300, 0u8..3), 0..400),
        ) {
            let mut v = Vma::new("a", 0, 300 * 4096, false, None, 2);
            for &(p, what) in &steps {
                match what {
                    0 => v.set_page_node(p, NodeId::new(p % 2)),
                    1 => v.set_protnone(p, true),
                    _ => v.set_protnone(p, false),
                }
            }
            for p in 0..300 {
                proptest::prop_assert_eq!(v.is_special(p), v.pages[p].special());
            }
        }

        #[test]
        fn nth_special_is_the_kth_special_page(
            present in proptest::collection::vec(proptest::bool::ANY, 700),
            from in 0usize..700,
            len in 0usize..700,
            k in 0u64..300,
        ) {
            let mut v = Vma::new("a", 0, 700 * 4096, false, None, 2);
            for (p, &yes) in present.iter().enumerate() {
                if yes {
                    v.set_page_node(p, NodeId::new(0));
                }
            }
            let to = (from + len).min(700);
            let naive = (from..to).filter(|&p| v.pages[p].special()).nth(k as usize);
            proptest::prop_assert_eq!(v.nth_special(from, to, k), naive);
        }

        /// The chunk-skipping search finds the same page as the word walk,
        /// over chunks that are all special, none special or mixed.
        #[test]
        fn nth_special_far_is_nth_special(
            kinds in proptest::collection::vec(0u8..3, 4),
            mixed in proptest::collection::vec(proptest::bool::ANY, 1636),
            from in 0usize..1636,
            len in 0usize..1700,
            k in 0u64..1700,
        ) {
            let n = 1636;
            let mut v = Vma::new("a", 0, n as u64 * 4096, false, None, 2);
            for p in 0..n {
                let present = match kinds[p / 512] {
                    0 => true,
                    1 => false,
                    _ => mixed[p],
                };
                if present {
                    v.set_page_node(p, NodeId::new(0));
                }
            }
            let to = from + len;
            proptest::prop_assert_eq!(v.nth_special_far(from, to, k), v.nth_special(from, to, k));
        }
    }

    #[test]
    fn thp_vma_rounds_up_and_has_one_page_per_chunk() {
        let v = Vma::new("t", 0, (2 << 20) + 1, true, None, 2);
        assert_eq!(v.bytes, 4 << 20);
        assert_eq!(v.pages.len(), 2);
        assert_eq!(v.nr_base_pages(), 512);
        assert_eq!(v.pages_per_chunk, 1);
    }
}
