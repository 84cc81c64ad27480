//! Shared written lines: what an access pays when the line it touches is
//! held Modified in another core's cache, found from who writes which part
//! of a region, without per-line state.
//!
//! # The model
//! A line is Modified in a writer's cache from the moment the writer writes
//! it until the writer has written about [`WRITER_CACHE_BYTES`] more bytes
//! (its private L2 plus its share of the LLC fill up and the line is
//! evicted and written back). Another core that touches the line before
//! then must take it from that owner: the home agent snoops the owner, who
//! gives the line up (invalidates it and writes it back), and the
//! requester waits for that response. That wait is one transfer of the
//! contended-line model (physics/line.rs: by distance between the two cores
//! and by how many requests for the line are outstanding), added to the
//! access's memory latency. The memory access itself stays: the fluid model
//! charges every byte to its memory controller (large `bzero`s write with
//! streaming or fast-string stores that reach DRAM, and a line taken away
//! from its owner is written back), so sharing adds the ownership transfer
//! and never replaces the memory traffic. So for every access the question
//! is: was the line written by another core recently enough?
//! - A streaming writer `j` over `[o_j, o_j + len_j)` whose next write is at
//!   `o_j + p_j` wrote the line at `o_j + r` exactly `(p_j - r) mod len_j`
//!   bytes ago (in this pass if it is behind `p_j`, in the previous pass
//!   otherwise). It still holds it Modified when that distance is below
//!   [`WRITER_CACHE_BYTES`]. The most recent such writer is the one the
//!   line comes from.
//! - A random writer `j` (share `w_j` of its accesses are writes) holds
//!   about `WRITER_CACHE_BYTES` of its range, `w_j` of it Modified: a given
//!   line of its range is Modified there with probability
//!   `w_j min(1, WRITER_CACHE_BYTES / len_j)`.
//! - A streaming access at `x` pays a transfer when the nearest streaming
//!   writer ahead of it (the one that last wrote `x`) is within the cache
//!   window; otherwise it pays one with the probability random writers hold
//!   `x`. A random access over `[a, a + len)` pays one for the share of its
//!   range inside other writers' windows.
//! - Outstanding requests for the line (the load term of the transfer) are
//!   the accessor plus the streaming writers within [`Sharing::window_bytes`]
//!   of it (their misses in flight cover the same lines at the same time).
//!
//! Time overlap: positions are those of the operations in progress when
//! the engine gathers them (each tick). Streams moving at similar rates
//! keep their distances, so a snapshot per tick stands for the whole tick.
//! Threads writing the same buffer from offset 0 in lockstep (NUMA01) find
//! every line in a neighbour's cache; the same threads spread over the
//! buffer further apart than the cache window find none; threads writing
//! disjoint slices (NUMA01_THREADLOCAL, NUMA02) never share.
//!
//! Left out: a line passed from cache to cache without reaching DRAM (a
//! cluster of writers using ordinary write-allocate stores would read each
//! line from memory once, not once per writer: the model charges memory
//! once per writer); reads that only share a line (S state) and the
//! invalidations a write sends to many sharers; the working set of other
//! operations than the one in progress (a random writer that has moved on
//! to another phase no longer counts, although its lines are still
//! cached); accesses' own distributions (random accesses are taken as
//! uniform over their range); the cache size of each machine (one figure).

use super::line::{Distance, LineModel, Place};
use crate::gallop::{gallop_down, gallop_up, partition_point_from};
use crate::kernel::CpuId;
use crate::resort::{insertion_sort_or_hand_over, Resort};
use numalab_topology::Machine;
use rustc_hash::{FxHashMap, FxHasher};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::ops::Range;

/// Bytes of a writer's most recent writes still in its caches: its private
/// L2 plus its per-core share of the LLC. Intel's published per-core
/// figures: Cascade Lake-SP 1 MiB L2 + 1.375 MiB LLC = 2.4 MiB; Ice Lake-SP
/// 1.25 + 1.5 = 2.75 MiB; Sapphire Rapids 2 + 1.875 = 3.9 MiB. 3 MiB taken
/// for every machine: EXTRAPOLATED (the machine spec has no cache sizes).
pub const WRITER_CACHE_BYTES: f64 = 3.0 * 1024.0 * 1024.0;

/// What one writer does in a region.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WriterKind {
    /// Streaming writes; its next write is at this byte offset of the region.
    Stream {
        /// Absolute offset in the region of the next byte it writes.
        at: u64,
    },
    /// Random accesses, this share of them writes.
    Random {
        /// Share of accesses that are writes, in (0, 1].
        write_fraction: f64,
    },
}

/// One task writing part of a region.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Writer {
    /// Who (a task index), so an access does not share with itself.
    pub id: usize,
    /// The CPU it runs on.
    pub cpu: CpuId,
    /// First byte of its range in the region.
    pub offset: u64,
    /// Bytes in its range (> 0).
    pub len: u64,
    /// How it writes.
    pub kind: WriterKind,
}

/// How an access touches its range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AccessKind {
    /// Streaming: the next byte is at this absolute offset.
    Stream {
        /// Absolute offset in the region of the next byte it touches.
        at: u64,
    },
    /// Random over the range.
    Random,
}

/// One task's accesses to a region (reads or writes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Access {
    /// Who (a task index).
    pub id: usize,
    /// The CPU it runs on.
    pub cpu: CpuId,
    /// First byte of its range.
    pub offset: u64,
    /// Bytes in its range (> 0).
    pub len: u64,
    /// How it touches it.
    pub kind: AccessKind,
}

/// What shared lines cost an access.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SharedLines {
    /// Share of its accesses that find the line Modified in another core.
    pub fraction: f64,
    /// Mean cost of those transfers (ns), distance and load included.
    pub transfer_ns: f64,
}

impl SharedLines {
    /// Mean latency of the access given the latency of its memory accesses
    /// (ns): every access keeps its memory access, and the shared share
    /// waits for the owner's snoop response on top (see the module doc).
    pub fn latency_ns(&self, mem_ns: f64) -> f64 {
        mem_ns + self.fraction * self.transfer_ns
    }
}

/// The model's parameters besides the writers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sharing {
    /// The contended-line cost.
    pub line: LineModel,
    /// Bytes of recent writes a writer still holds Modified.
    pub cache_bytes: f64,
    /// Bytes ahead and behind an access within which another streaming
    /// writer's misses hit the same lines at the same time.
    pub window_bytes: f64,
}

/// Writers of one region, in range classes (writers with the same range),
/// for quick look-ups. The classes' lists live in three flat vectors (a
/// class holds its slices' bounds), so an index rebuilt at every tick
/// (streams move) reuses its room instead of allocating per class.
#[derive(Clone, Debug, Default)]
pub struct RegionWriters {
    writers: Vec<Writer>,
    classes: Vec<Class>,
    /// Largest range end over classes `0..=i` (classes sorted by offset).
    max_end: Vec<u64>,
    /// Per class `i`: the last class before it whose range ends later
    /// (`NO_CLASS`: none), so [`RegionWriters::overlapping`] skips the
    /// classes that end before an access in one step ([`prev_longer`]).
    prev_longer: Vec<u32>,
    /// `(position in the range, writer index)` of every class's streams,
    /// class by class, each class's sorted.
    streams: Vec<(u64, usize)>,
    /// `(task id, position in the range)` of the same streams, class by
    /// class, each class's sorted, to find an accessor's own streams.
    by_id: Vec<(usize, u64)>,
    /// Writer indices of random writers, class by class.
    randoms: Vec<usize>,
    /// Costs of random accesses already asked, by (task, CPU, offset,
    /// length): they depend on nothing else while the writers stay the
    /// same, and random writers (pmbench's 64 threads) do stay from tick
    /// to tick, so the engine keeps this index while they do.
    random_memo: RefCell<FxHashMap<(usize, usize, u64, u64), SharedLines>>,
    /// The `random_memo`s of the last [`RECENT_WRITER_SETS`] writer sets
    /// this index held, oldest first ([`RecentMemo`]).
    recent: VecDeque<RecentMemo>,
    /// The random writers as a random access reads them, built on the
    /// first random access after the writers change ([`RandomTerms`]).
    random_terms: RefCell<RandomTerms>,
    /// Scratch of the one-class rebuild ([`OneClassScratch`]).
    scratch: OneClassScratch,
    /// By accessor id: where its last streaming access's two searches
    /// ended ([`SearchHint`]).
    hints: RefCell<Vec<SearchHint>>,
    /// Whether `classes` and the lists index `writers` (false: put off,
    /// see [`RegionWriters::update`]).
    indexed: bool,
    /// `(offset, end, task id)` of the writers' ranges, sorted, while the
    /// index is put off: pairwise disjoint then.
    spans: Vec<(u64, u64, usize)>,
    /// Task ids of the last `spans` in their sorted order, and the scratch
    /// that sorts the next from it ([`Resort`]): the same threads hold the
    /// same slices from tick to tick, so the next sort is nearly linear.
    span_ids: Vec<usize>,
    span_resort: Resort<(u64, u64, usize)>,
}

/// Each writer in `randoms` (same order) packed with what a random access
/// reads of it: its id, the topology of its CPU and its [`random_density`]
/// for the cache size `cache_bytes`. Every random access of a tick reads
/// every other random writer (pmbench: 64 writers of one map), so this is
/// computed once per index instead of once per access and writer.
#[derive(Clone, Debug, Default)]
struct RandomTerms {
    cache_bytes: f64,
    terms: Vec<RandomTerm>,
}

/// One random writer in [`RandomTerms`].
#[derive(Clone, Debug)]
struct RandomTerm {
    id: usize,
    place: Place,
    density: f64,
}

/// Writer sets whose random-access answers an index keeps. pmbench's 64
/// writers of one map change set at about every other tick (a writer
/// preempted for a tick, then back), and nearly half of those changes
/// return to one of the 16 sets before (measured at `--scale 0.02`; 64 %
/// for pmbench-busy), whose answers would otherwise be worked out again.
const RECENT_WRITER_SETS: usize = 16;

/// The random-access answers of one writer set (`writers` as the index
/// held them, `hash` = [`writers_hash`] of them). The answers are a
/// function of the writer list (order included: it orders the sums) and
/// the model's parameters, fixed for the run, so they hold again when the
/// same list comes back.
#[derive(Clone, Debug)]
struct RecentMemo {
    hash: u64,
    writers: Vec<Writer>,
    memo: FxHashMap<(usize, usize, u64, u64), SharedLines>,
}

/// A hash of a writer list, to pass over most [`RecentMemo`]s without
/// comparing their lists.
fn writers_hash(writers: &[Writer]) -> u64 {
    let mut h = FxHasher::default();
    for w in writers {
        (w.id, w.cpu.index(), w.offset, w.len).hash(&mut h);
        match w.kind {
            WriterKind::Stream { at } => (0u8, at).hash(&mut h),
            WriterKind::Random { write_fraction } => (1u8, write_fraction.to_bits()).hash(&mut h),
        }
    }
    h.finish()
}

/// Where an accessor's searches in a class's lists ended last time: the
/// first stream past its position, and its first entry in `by_id`. Streams
/// keep their order from tick to tick, so the next searches start there
/// ([`partition_point_from`]); a search finds the same index from any
/// start, so a hint changes the cost, never the answer.
#[derive(Clone, Copy, Debug, Default)]
struct SearchHint {
    ahead: u32,
    mine: u32,
}

/// What a rebuild keeps from the index it replaces, so that it sorts
/// nearly sorted lists: a rebuild comes when a writer joins or leaves (a
/// kworker preempted it for a tick), and the others' streams have moved a
/// tick's worth, mostly keeping their order. The lists are sorted all the
/// same (a total order: writer indices differ), so what is kept changes
/// the cost, never the index. The one-class rebuild's fields come first,
/// then the several-class rebuild's (`all*`).
#[derive(Clone, Debug, Default)]
struct OneClassScratch {
    /// Task ids of the old index's streams, in its stream order.
    last_ids: Vec<usize>,
    /// Sorts the new streams starting from that order.
    resort: Resort<(u64, usize)>,
    /// By task id: the position of its one stream (`u64::MAX`: none).
    pos_of: Vec<u64>,
    /// The rebuild of several classes: `(offset, len, position, writer
    /// index)` of every writer, sorted ([`RegionWriters::rebuild_classes`]).
    all: Vec<(u64, u64, u64, usize)>,
    /// Task ids of `all` in the last such rebuild's order.
    all_last_ids: Vec<usize>,
    /// Sorts `all` starting from that order.
    all_resort: Resort<(u64, u64, u64, usize)>,
}

/// One range class: its range and where its lists are in the flat vectors.
#[derive(Clone, Debug)]
struct Class {
    offset: u64,
    len: u64,
    /// Its slice of `streams` and of `by_id`.
    streams: Range<usize>,
    /// Its slice of `randoms`.
    randoms: Range<usize>,
}

/// [`RegionWriters::prev_longer`] of a class with no class before it
/// ending later.
const NO_CLASS: u32 = u32::MAX;

/// Fills `out` with, per class, the index of the last class before it
/// whose range ends later (`NO_CLASS`: none): the previous greater
/// element of the range ends, one pass over a stack.
fn prev_longer(classes: &[Class], out: &mut Vec<u32>) {
    out.clear();
    let end = |i: usize| classes[i].offset + classes[i].len;
    for i in 0..classes.len() {
        // Walk back the chain of later-ending classes to the first that
        // ends after class i.
        let mut j = i.checked_sub(1);
        while let Some(k) = j {
            if end(k) > end(i) {
                break;
            }
            j = match out[k] {
                NO_CLASS => None,
                p => Some(p as usize),
            };
        }
        out.push(j.map_or(NO_CLASS, |k| k as u32));
    }
}

/// A class's streams, as [`count_near`] reads them.
struct ClassStreams<'a> {
    len: u64,
    /// `(position, writer index)`, sorted.
    streams: &'a [(u64, usize)],
    /// `(task id, position)`, sorted.
    by_id: &'a [(usize, u64)],
}

impl RegionWriters {
    /// Indexes `writers` (order does not matter; ranges of length 0 are
    /// dropped).
    pub fn new(writers: &[Writer]) -> RegionWriters {
        let mut r = RegionWriters::default();
        r.rebuild(writers);
        r
    }

    /// Takes this tick's `writers` of the region: streams that only moved
    /// are moved in place ([`RegionWriters::move_streams`]); writers whose
    /// ranges are pairwise disjoint (each thread its own slice: NUMA02,
    /// NUMA01_THREADLOCAL) are kept with their sorted ranges, and the
    /// index is built on the first access that reads another writer's
    /// range ([`RegionWriters::cost`]), which none of them does: they
    /// share nothing, and a rebuild at each tick a writer joins or leaves
    /// (a kworker preempting one) was a tenth of NUMA02's run; any other
    /// writers are indexed at once ([`RegionWriters::rebuild`]). Every
    /// answer is the one a fresh index of `writers` gives.
    pub fn update(&mut self, writers: &[Writer]) {
        if self.move_streams(writers) {
            return;
        }
        if self.disjoint_spans(writers) {
            self.defer_index(writers);
        } else {
            self.rebuild(writers);
        }
    }

    /// Fills `spans` with `(offset, end, task id)` of the writers' ranges
    /// (length 0 dropped), sorted, and tells whether they are pairwise
    /// disjoint.
    fn disjoint_spans(&mut self, writers: &[Writer]) -> bool {
        let out = &mut self.spans;
        out.clear();
        // Two writers next to each other that overlap settle it without
        // the sort: writers of one shared range (NUMA01's 160, pmbench's
        // 64).
        let overlap =
            |a: &Writer, b: &Writer| a.offset < b.offset + b.len && b.offset < a.offset + a.len;
        let mut live = writers.iter().filter(|w| w.len > 0);
        if let Some(first) = live.next() {
            let mut prev = first;
            for w in live {
                if overlap(prev, w) {
                    return false;
                }
                prev = w;
            }
        }
        out.extend(
            writers
                .iter()
                .filter(|w| w.len > 0)
                .map(|w| (w.offset, w.offset + w.len, w.id)),
        );
        // Ids differ, so the order is total and the sort's result is
        // sort_unstable's whatever order it starts from.
        self.span_resort.sort(out, &self.span_ids, |s| s.2);
        self.span_ids.clear();
        self.span_ids.extend(out.iter().map(|s| s.2));
        out.windows(2).all(|p| p[0].1 <= p[1].0)
    }

    /// Holds `writers` (pairwise disjoint, their ranges in `spans`)
    /// without an index: the old writers' random answers are filed as a
    /// rebuild files them, and the lists are emptied, so that moving
    /// streams touches none and a later rebuild starts its sorts afresh.
    fn defer_index(&mut self, writers: &[Writer]) {
        self.keep_recent_memo();
        self.writers.clear();
        self.writers
            .extend(writers.iter().filter(|w| w.len > 0).copied());
        self.random_terms.get_mut().terms.clear();
        self.classes.clear();
        self.max_end.clear();
        self.prev_longer.clear();
        self.streams.clear();
        self.by_id.clear();
        self.randoms.clear();
        self.indexed = false;
    }

    /// While the index is put off: whether every writer whose range the
    /// access reads is the accessor itself, so that it shares nothing
    /// (what the index answers for an accessor alone in its range: its
    /// own streams and random writes are skipped, and no other writer's
    /// window or density adds to the sums).
    fn reads_only_own_range(&self, a: &Access) -> bool {
        let (lo, hi) = match a.kind {
            AccessKind::Stream { at } => (at, at + 1),
            AccessKind::Random => (a.offset, a.offset + a.len),
        };
        // Disjoint and sorted by start, so sorted by end too: the spans
        // that end after `lo` and start before `hi` are one run.
        let mut i = self.spans.partition_point(|s| s.0 < hi);
        while i > 0 {
            i -= 1;
            let (_, end, id) = self.spans[i];
            if end <= lo {
                break;
            }
            if id != a.id {
                return false;
            }
        }
        true
    }

    /// Indexes `writers` in place of what this held, keeping the vectors'
    /// room, and the answers of the old writers among the recent sets'
    /// ([`RecentMemo`]): the answers are those of the new writers when
    /// they are a recent set again, none otherwise.
    pub fn rebuild(&mut self, writers: &[Writer]) {
        let ws = &self.writers;
        self.scratch.last_ids.clear();
        self.scratch
            .last_ids
            .extend(self.streams.iter().map(|&(_, wi)| ws[wi].id));
        self.keep_recent_memo();
        self.writers.clear();
        self.writers
            .extend(writers.iter().filter(|w| w.len > 0).copied());
        self.take_recent_memo();
        self.random_terms.get_mut().terms.clear();
        if !self.rebuild_one_class() {
            self.rebuild_classes();
        }
        self.indexed = true;
    }

    /// Indexes `self.writers` in range classes, whatever their ranges.
    ///
    /// One sort of every writer by (range, position in it, writer index)
    /// gives the classes in order and, class by class, the streams sorted
    /// by (position, writer) and the random writers by writer: the orders
    /// of sorting the classes' keys, then (class, position, writer) and
    /// (class, writer) apart, as `class` follows the range's order. The
    /// sort starts from the last rebuild's order of the writers' ids
    /// ([`Resort`]): NUMA02's 320 one-thread ranges keep their order from
    /// tick to tick while a writer joins or leaves.
    fn rebuild_classes(&mut self) {
        let sc = &mut self.scratch;
        let mut all = std::mem::take(&mut sc.all);
        all.clear();
        all.extend(self.writers.iter().enumerate().map(|(i, w)| {
            let rel = match w.kind {
                WriterKind::Stream { at } => at.saturating_sub(w.offset).min(w.len - 1),
                WriterKind::Random { .. } => 0,
            };
            (w.offset, w.len, rel, i)
        }));
        let writers = &self.writers;
        sc.all_resort
            .sort(&mut all, &sc.all_last_ids, |&(.., i)| writers[i].id);
        sc.all_last_ids.clear();
        sc.all_last_ids
            .extend(all.iter().map(|&(.., i)| writers[i].id));
        self.streams.clear();
        self.by_id.clear();
        self.randoms.clear();
        self.classes.clear();
        self.max_end.clear();
        let mut e = 0;
        for class in all.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            let (offset, len) = (class[0].0, class[0].1);
            let (s0, r0) = (self.streams.len(), self.randoms.len());
            for &(_, _, rel, wi) in class {
                match self.writers[wi].kind {
                    WriterKind::Stream { .. } => {
                        self.streams.push((rel, wi));
                        self.by_id.push((self.writers[wi].id, rel));
                    }
                    WriterKind::Random { write_fraction } if write_fraction > 0.0 => {
                        self.randoms.push(wi)
                    }
                    WriterKind::Random { .. } => {}
                }
            }
            let (s1, r1) = (self.streams.len(), self.randoms.len());
            self.by_id[s0..s1].sort_unstable();
            self.classes.push(Class {
                offset,
                len,
                streams: s0..s1,
                randoms: r0..r1,
            });
            e = e.max(offset + len);
            self.max_end.push(e);
        }
        prev_longer(&self.classes, &mut self.prev_longer);
        self.scratch.all = all;
    }

    /// [`RegionWriters::rebuild`] when every writer has the same range
    /// (NUMA01's threads all write their process's buffer): one class, so
    /// no class keys to sort and search, and the streams sort as
    /// `(position, writer)` pairs, the order the general path gives them.
    /// Returns false, changing nothing but `writers`, when the ranges differ.
    fn rebuild_one_class(&mut self) -> bool {
        let Some(first) = self.writers.first() else {
            return false;
        };
        let (offset, len) = (first.offset, first.len);
        if self
            .writers
            .iter()
            .any(|w| (w.offset, w.len) != (offset, len))
        {
            return false;
        }
        self.streams.clear();
        self.randoms.clear();
        for (i, w) in self.writers.iter().enumerate() {
            match w.kind {
                WriterKind::Stream { at } => {
                    self.streams
                        .push((at.saturating_sub(w.offset).min(w.len - 1), i));
                }
                // Pushed in writer order, the order the general path sorts
                // them to.
                WriterKind::Random { write_fraction } if write_fraction > 0.0 => {
                    self.randoms.push(i)
                }
                WriterKind::Random { .. } => {}
            }
        }
        self.sort_streams_from_last_order();
        self.by_id_from_dense_ids();
        self.classes.clear();
        self.classes.push(Class {
            offset,
            len,
            streams: 0..self.streams.len(),
            randoms: 0..self.randoms.len(),
        });
        self.max_end.clear();
        self.max_end.push(offset + len);
        self.prev_longer.clear();
        self.prev_longer.push(NO_CLASS);
        true
    }

    /// Files `random_memo` (when it holds answers) under the writers it
    /// answered for, dropping the oldest set beyond
    /// [`RECENT_WRITER_SETS`]; leaves `random_memo` empty.
    fn keep_recent_memo(&mut self) {
        let memo = self.random_memo.get_mut();
        if memo.is_empty() {
            return;
        }
        let mut e = if self.recent.len() >= RECENT_WRITER_SETS {
            self.recent.pop_front().expect("recent sets are full")
        } else {
            RecentMemo {
                hash: 0,
                writers: Vec::new(),
                memo: FxHashMap::default(),
            }
        };
        e.hash = writers_hash(&self.writers);
        e.writers.clear();
        e.writers.extend_from_slice(&self.writers);
        e.memo.clear();
        std::mem::swap(&mut e.memo, memo);
        self.recent.push_back(e);
    }

    /// Takes the answers of `writers` from the recent sets into the empty
    /// `random_memo`, if they are one of them.
    fn take_recent_memo(&mut self) {
        if self.recent.is_empty() {
            return;
        }
        let hash = writers_hash(&self.writers);
        if let Some(i) = self
            .recent
            .iter()
            .position(|e| e.hash == hash && e.writers == self.writers)
        {
            let e = self.recent.remove(i).expect("a found set");
            *self.random_memo.get_mut() = e.memo;
        }
    }

    /// Sorts `streams` (one class) starting from the old index's order
    /// ([`Resort`]): a tick's moves disorder it a few places at most.
    fn sort_streams_from_last_order(&mut self) {
        let writers = &self.writers;
        self.scratch
            .resort
            .sort(&mut self.streams, &self.scratch.last_ids, |&(_, wi)| {
                writers[wi].id
            });
    }

    /// Builds `by_id` (one class, `streams` built): with one stream per
    /// task, as every running task has one operation, the ids are placed
    /// by value and read back in order; a task with two falls back to a
    /// sort.
    fn by_id_from_dense_ids(&mut self) {
        let sc = &mut self.scratch;
        self.by_id.clear();
        let max_id = self.writers.iter().map(|w| w.id).max().unwrap_or(0);
        sc.pos_of.clear();
        sc.pos_of.resize(max_id + 1, u64::MAX);
        let mut once = true;
        for &(pos, wi) in &self.streams {
            let slot = &mut sc.pos_of[self.writers[wi].id];
            once &= *slot == u64::MAX;
            *slot = pos;
        }
        if once {
            self.by_id.extend(
                sc.pos_of
                    .iter()
                    .enumerate()
                    .filter(|&(_, &p)| p != u64::MAX)
                    .map(|(id, &p)| (id, p)),
            );
        } else {
            self.by_id.extend(
                self.streams
                    .iter()
                    .map(|&(pos, wi)| (self.writers[wi].id, pos)),
            );
            self.by_id.sort_unstable();
        }
    }

    /// When `writers` are these writers with at most their streams moved
    /// (the same tasks on the same CPUs over the same ranges, in the same
    /// order: NUMA01's streams from one tick to the next, pmbench's random
    /// writers), takes their new positions in place, re-sorting each
    /// class's streams, and returns true: the index is then the one
    /// [`RegionWriters::new`] would build, and keeps the random-access
    /// costs it answered when nothing moved. Otherwise changes nothing and
    /// returns false.
    pub fn move_streams(&mut self, writers: &[Writer]) -> bool {
        let same_but_position = |w: &Writer, n: &Writer| {
            w.id == n.id
                && w.cpu == n.cpu
                && w.offset == n.offset
                && w.len == n.len
                && match (w.kind, n.kind) {
                    (WriterKind::Stream { .. }, WriterKind::Stream { .. }) => true,
                    (a, b) => a == b,
                }
        };
        let mut kept = writers.iter().filter(|w| w.len > 0);
        if !self
            .writers
            .iter()
            .all(|w| kept.next().is_some_and(|n| same_but_position(w, n)))
            || kept.next().is_some()
        {
            return false;
        }
        let mut moved = false;
        for (w, n) in self
            .writers
            .iter_mut()
            .zip(writers.iter().filter(|w| w.len > 0))
        {
            moved |= w.kind != n.kind;
            w.kind = n.kind;
        }
        if !moved {
            return true;
        }
        self.random_memo.get_mut().clear();
        for c in &self.classes {
            let streams = &mut self.streams[c.streams.clone()];
            for (rel, wi) in streams.iter_mut() {
                let w = &self.writers[*wi];
                if let WriterKind::Stream { at } = w.kind {
                    *rel = at.saturating_sub(w.offset).min(w.len - 1);
                }
            }
            // Sorted by the old positions, and a tick moves few streams
            // past others (a wrap to the range's start moves one across):
            // an insertion sort, handing over to a full sort past a few
            // shifts per stream. The order is total (writer indices
            // differ), so the result is the full sort's.
            let budget = 4 * streams.len();
            insertion_sort_or_hand_over(streams, budget);
            let by_id = &mut self.by_id[c.streams.clone()];
            for (e, &(pos, wi)) in by_id.iter_mut().zip(streams.iter()) {
                *e = (self.writers[wi].id, pos);
            }
            by_id.sort_unstable();
        }
        true
    }

    /// Accessor `id`'s search hint (zeros when it has none).
    fn hint(&self, id: usize) -> SearchHint {
        self.hints.borrow().get(id).copied().unwrap_or_default()
    }

    /// Remembers where accessor `id`'s searches ended.
    fn set_hint(&self, id: usize, h: SearchHint) {
        let mut hints = self.hints.borrow_mut();
        if hints.len() <= id {
            hints.resize(id + 1, SearchHint::default());
        }
        hints[id] = h;
    }

    /// Class `c`'s streams.
    fn class_streams(&self, c: &Class) -> ClassStreams<'_> {
        ClassStreams {
            len: c.len,
            streams: &self.streams[c.streams.clone()],
            by_id: &self.by_id[c.streams.clone()],
        }
    }

    /// Class `c`'s random writers.
    fn class_randoms(&self, c: &Class) -> &[usize] {
        &self.randoms[c.randoms.clone()]
    }

    /// True when nobody writes the region.
    pub fn is_empty(&self) -> bool {
        self.writers.is_empty()
    }

    /// Indices of the classes whose range overlaps `[a, b)`, from the
    /// last down: those starting before `b`, back to the first whose
    /// classes before it all end by `a`. A class ending by `a` is passed
    /// with every class between it and its [`prev_longer`] (they end
    /// earlier still): when a long class comes first (NUMA01_THREADLOCAL's
    /// threads still streaming their whole buffer while others stream
    /// their own slices of it), the walk does not visit every slice's
    /// class before it at every access.
    fn overlapping(&self, a: u64, b: u64) -> impl Iterator<Item = usize> + '_ {
        let hi = self.classes.partition_point(|c| c.offset < b);
        let mut next = hi.checked_sub(1);
        std::iter::from_fn(move || loop {
            let i = next?;
            if self.max_end[i] <= a {
                next = None;
                return None;
            }
            let c = &self.classes[i];
            if c.offset + c.len > a {
                next = i.checked_sub(1);
                return Some(i);
            }
            next = match self.prev_longer[i] {
                NO_CLASS => None,
                j => Some(j as usize),
            };
        })
    }

    /// What shared lines cost access `a` on machine `m`. Builds the index
    /// first when it was put off and the access reads another writer's
    /// range ([`RegionWriters::update`]).
    pub fn cost(&mut self, m: &Machine, p: &Sharing, a: &Access) -> SharedLines {
        if self.writers.is_empty() || a.len == 0 {
            return SharedLines::default();
        }
        if !self.indexed {
            if self.reads_only_own_range(a) {
                return SharedLines::default();
            }
            let writers = std::mem::take(&mut self.writers);
            self.rebuild(&writers);
        }
        match a.kind {
            AccessKind::Stream { at } => self.stream_cost(m, p, a, at),
            AccessKind::Random => {
                let key = (a.id, a.cpu.index(), a.offset, a.len);
                if let Some(s) = self.random_memo.borrow().get(&key) {
                    return *s;
                }
                let s = self.random_cost(m, p, a);
                self.random_memo.borrow_mut().insert(key, s);
                s
            }
        }
    }

    fn stream_cost(&self, m: &Machine, p: &Sharing, a: &Access, x: u64) -> SharedLines {
        // The most recent streaming writer of x, and who collides near x.
        let mut best: Option<(u64, usize)> = None;
        let mut near = 0usize;
        // Whether a class over x has random writers (else the second pass
        // below adds nothing).
        let mut randoms_over_x = false;
        for ci in self.overlapping(x, x + 1) {
            let c = &self.classes[ci];
            randoms_over_x |= !c.randoms.is_empty();
            let rel = x - c.offset;
            // First stream strictly ahead of x (it wrote x most recently),
            // skipping the accessor itself; wraps to the start.
            let cs = self.class_streams(c);
            // A class of the accessor's own streams alone (a thread over
            // its own slice, NUMA01_THREADLOCAL): no stream ahead, none
            // near, and its search hint only ever changes the cost.
            if c.randoms.is_empty()
                && cs.by_id.first().is_some_and(|e| e.0 == a.id)
                && cs.by_id.last().is_some_and(|e| e.0 == a.id)
            {
                continue;
            }
            let n = cs.streams.len();
            let hint = self.hint(a.id);
            let first =
                partition_point_from(cs.streams, hint.ahead as usize, |&(pos, _)| pos <= rel);
            let (near_here, mine_at) =
                count_near(&cs, rel, first, hint.mine as usize, p.window_bytes, a.id);
            self.set_hint(
                a.id,
                SearchHint {
                    ahead: first as u32,
                    mine: mine_at as u32,
                },
            );
            for k in 0..n {
                let (pos, wi) = cs.streams[(first + k) % n];
                if self.writers[wi].id == a.id {
                    continue;
                }
                let gap = if pos > rel {
                    pos - rel
                } else {
                    c.len - rel + pos
                };
                if best.is_none_or(|(g, _)| gap < g) {
                    best = Some((gap, wi));
                }
                break;
            }
            near += near_here;
        }
        let outstanding = 1.0 + near as f64;
        if let Some((gap, wi)) = best {
            if (gap as f64) < p.cache_bytes {
                let w = &self.writers[wi];
                return SharedLines {
                    fraction: 1.0,
                    transfer_ns: p.line.transfer_ns(m, Some(w.cpu), a.cpu, outstanding),
                };
            }
        }
        // Otherwise the random writers holding x, now that the load on
        // the line is known.
        let mut randoms = Shares::new();
        if !randoms_over_x {
            return randoms.finish();
        }
        for ci in self.overlapping(x, x + 1) {
            for &wi in self.class_randoms(&self.classes[ci]) {
                let w = &self.writers[wi];
                if w.id != a.id {
                    randoms.add(
                        random_density(w, p.cache_bytes),
                        p.line.transfer_ns(m, Some(w.cpu), a.cpu, outstanding),
                    );
                }
            }
        }
        randoms.finish()
    }

    /// Fills `random_terms` for `cache_bytes` (writers' CPUs of `m`)
    /// unless it holds them.
    fn fill_random_terms(&self, m: &Machine, cache_bytes: f64) {
        let mut rt = self.random_terms.borrow_mut();
        if rt.cache_bytes.to_bits() == cache_bytes.to_bits() && rt.terms.len() == self.randoms.len()
        {
            return;
        }
        rt.cache_bytes = cache_bytes;
        rt.terms.clear();
        rt.terms.extend(self.randoms.iter().map(|&wi| {
            let w = &self.writers[wi];
            RandomTerm {
                id: w.id,
                place: Place::of(&m.cpus[w.cpu.index()]),
                density: random_density(w, cache_bytes),
            }
        }));
    }

    fn random_cost(&self, m: &Machine, p: &Sharing, a: &Access) -> SharedLines {
        let (lo, hi) = (a.offset, a.offset + a.len);
        // p.line.transfer_ns(m, Some(w.cpu), a.cpu, 1.0), by distance:
        // the same products, looked up.
        let by_distance = p.line.transfer_by_distance(1.0);
        let to = Place::of(&m.cpus[a.cpu.index()]);
        let transfer = |w: &Writer| by_distance[Distance::between(m, w.cpu, a.cpu) as usize];
        self.fill_random_terms(m, p.cache_bytes);
        let random_terms = self.random_terms.borrow();
        let mut parts = Shares::new();
        for ci in self.overlapping(lo, hi) {
            let c = &self.classes[ci];
            let ov = overlap(lo, hi, c.offset, c.offset + c.len) as f64 / a.len as f64;
            for &(pos, wi) in self.class_streams(c).streams {
                let w = &self.writers[wi];
                if w.id == a.id {
                    continue;
                }
                // The writer's Modified window: the cache_bytes behind its
                // position, wrapping to the end of its range.
                let win = (p.cache_bytes as u64).min(c.len);
                let end = c.offset + pos;
                let mut cover = 0;
                if win <= pos {
                    cover += overlap(lo, hi, end - win, end);
                } else {
                    cover += overlap(lo, hi, c.offset, end);
                    let rest = win - pos;
                    let top = c.offset + c.len;
                    cover += overlap(lo, hi, top - rest, top);
                }
                if cover > 0 {
                    parts.add(cover as f64 / a.len as f64, transfer(w));
                }
            }
            for t in &random_terms.terms[c.randoms.clone()] {
                if t.id != a.id {
                    let d = Distance::between_places(t.place, to);
                    parts.add(ov * t.density, by_distance[d as usize]);
                }
            }
        }
        parts.finish()
    }
}

/// Shares of an access's lines held by other writers, summed as they are
/// found: the total (capped at 1) and the transfer cost weighted by them.
/// Both sums run in the order the shares come, as the sums over a list of
/// them did, without the list (it was allocated and grown per access).
struct Shares {
    total: f64,
    weighted: f64,
}

impl Shares {
    /// No share yet (sums start at -0.0, as `f64`'s `Sum` does).
    fn new() -> Shares {
        Shares {
            total: -0.0,
            weighted: -0.0,
        }
    }

    /// A share `q` of the lines, each costing `transfer_ns` to take.
    fn add(&mut self, q: f64, transfer_ns: f64) {
        self.total += q;
        self.weighted += q * transfer_ns;
    }

    fn finish(self) -> SharedLines {
        if self.total <= 0.0 {
            return SharedLines::default();
        }
        SharedLines {
            fraction: self.total.min(1.0),
            transfer_ns: self.weighted / self.total,
        }
    }
}

/// Probability that a given line of a random writer's range is Modified in
/// its cache.
fn random_density(w: &Writer, cache_bytes: f64) -> f64 {
    match w.kind {
        WriterKind::Random { write_fraction } => {
            write_fraction.clamp(0.0, 1.0) * (cache_bytes / w.len as f64).min(1.0)
        }
        WriterKind::Stream { .. } => 0.0,
    }
}

/// Streaming writers of class `c` (not `me`) within `window` bytes of `rel`
/// either way (modulo the range); `ahead` is the index of the first stream
/// past `rel` (`partition_point(pos <= rel)`, which the caller has). The
/// positions are sorted, so the window is found by galloping out from
/// `ahead`, a few steps when few streams are near, not by a pass over every
/// writer: NUMA01's 80 threads per process all stream one range, and every
/// one of them asks this each tick.
///
/// Also returns where `me`'s entries start in `by_id`, found from
/// `mine_guess` ([`partition_point_from`]).
fn count_near(
    c: &ClassStreams,
    rel: u64,
    ahead: usize,
    mine_guess: usize,
    window: f64,
    me: usize,
) -> (usize, usize) {
    let w = window.max(0.0) as u64;
    let len = c.len;
    let in_window = |pos: u64| {
        let d = pos.abs_diff(rel);
        d.min(len - d) <= w
    };
    let all = if w.saturating_mul(2) >= len {
        c.streams.len()
    } else {
        // Positions within w of rel, then those within w across the wrap.
        let count = |lo: u64, hi: u64| {
            c.streams.partition_point(|&(p, _)| p <= hi)
                - c.streams.partition_point(|&(p, _)| p < lo)
        };
        // Every stream before `ahead` is at or before rel, so at or
        // before rel + w; every one from it is past rel, so not before
        // rel - w.
        let (lo, hi) = (rel.saturating_sub(w), rel.saturating_add(w));
        let mut n = gallop_up(c.streams, ahead, |&(p, _)| p <= hi)
            - gallop_down(c.streams, ahead, |&(p, _)| p < lo);
        if rel < w {
            n += count(len - (w - rel), u64::MAX);
        }
        if rel + w >= len {
            n += count(0, rel + w - len);
        }
        n
    };
    let first = partition_point_from(c.by_id, mine_guess, |&(id, _)| id < me);
    let mine = c.by_id[first..]
        .iter()
        .take_while(|&&(id, _)| id == me)
        .filter(|&&(_, pos)| in_window(pos))
        .count();
    (all - mine, first)
}

/// Length of `[a, b) ∩ [c, d)`.
fn overlap(a: u64, b: u64, c: u64, d: u64) -> u64 {
    b.min(d).saturating_sub(a.max(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn m() -> Machine {
        numalab_topology::presets::load("clx-2s-104").expect("preset")
    }

    fn params() -> Sharing {
        Sharing {
            line: LineModel::new(true),
            cache_bytes: WRITER_CACHE_BYTES,
            window_bytes: 2048.0,
        }
    }

    fn cpu_on(m: &Machine, package: usize, k: usize) -> CpuId {
        let i = (0..m.cpus.len())
            .filter(|&i| m.cpus[i].package == package && m.cpus[i].smt == 0)
            .nth(k)
            .expect("cpu");
        CpuId::new(i)
    }

    fn stream(id: usize, cpu: CpuId, offset: u64, len: u64, at: u64) -> Writer {
        Writer {
            id,
            cpu,
            offset,
            len,
            kind: WriterKind::Stream { at },
        }
    }

    fn access(w: &Writer) -> Access {
        Access {
            id: w.id,
            cpu: w.cpu,
            offset: w.offset,
            len: w.len,
            kind: match w.kind {
                WriterKind::Stream { at } => AccessKind::Stream { at },
                WriterKind::Random { .. } => AccessKind::Random,
            },
        }
    }

    #[test]
    fn disjoint_writers_share_nothing() {
        let m = m();
        // NUMA01_THREADLOCAL-like: each writer its own slice, on both packages.
        let ws: Vec<Writer> = (0..8)
            .map(|i| {
                let cpu = cpu_on(&m, i % 2, i / 2);
                stream(
                    i,
                    cpu,
                    i as u64 * 64 * MIB,
                    64 * MIB,
                    i as u64 * 64 * MIB + MIB,
                )
            })
            .collect();
        let mut r = RegionWriters::new(&ws);
        for w in &ws {
            assert_eq!(r.cost(&m, &params(), &access(w)).fraction, 0.0);
        }
    }

    #[test]
    fn lockstep_writers_on_another_package_pay_remote_transfers() {
        let m = m();
        let a = stream(0, cpu_on(&m, 0, 0), 0, 3 * GIB, 100 * MIB);
        // b is 64 KiB ahead of a: a finds every line in b's cache.
        let b = stream(1, cpu_on(&m, 1, 0), 0, 3 * GIB, 100 * MIB + 64 * 1024);
        let mut r = RegionWriters::new(&[a, b]);
        let s = r.cost(&m, &params(), &access(&a));
        assert_eq!(s.fraction, 1.0);
        assert!(s.transfer_ns >= crate::physics::costs::C2C_REMOTE_PACKAGE_NS);
        // The leader b finds its lines last written a whole pass ago.
        assert_eq!(r.cost(&m, &params(), &access(&b)).fraction, 0.0);
        // Same package: cheaper than across packages.
        let c = stream(1, cpu_on(&m, 0, 1), 0, 3 * GIB, 100 * MIB + 64 * 1024);
        let near = RegionWriters::new(&[a, c]).cost(&m, &params(), &access(&a));
        assert!(near.fraction == 1.0 && near.transfer_ns < s.transfer_ns);
    }

    #[test]
    fn writers_further_apart_than_the_cache_share_nothing() {
        let m = m();
        let a = stream(0, cpu_on(&m, 0, 0), 0, 3 * GIB, 100 * MIB);
        let b = stream(1, cpu_on(&m, 1, 0), 0, 3 * GIB, 200 * MIB);
        let mut r = RegionWriters::new(&[a, b]);
        assert_eq!(r.cost(&m, &params(), &access(&a)).fraction, 0.0);
        // The window wraps around the end of the range.
        let c = stream(1, cpu_on(&m, 1, 0), 0, 3 * GIB, MIB);
        let d = stream(0, cpu_on(&m, 0, 0), 0, 3 * GIB, 3 * GIB - MIB);
        let mut r = RegionWriters::new(&[c, d]);
        assert_eq!(r.cost(&m, &params(), &access(&d)).fraction, 1.0);
    }

    #[test]
    fn crowded_lines_cost_more_than_a_single_neighbour() {
        let m = m();
        let a = stream(0, cpu_on(&m, 0, 0), 0, GIB, 10 * MIB);
        let mut ws = vec![a];
        let one = RegionWriters::new(&[a, stream(1, cpu_on(&m, 1, 0), 0, GIB, 10 * MIB + 512)])
            .cost(&m, &params(), &access(&a));
        for i in 1..20 {
            ws.push(stream(
                i,
                cpu_on(&m, 1, i),
                0,
                GIB,
                10 * MIB + 64 * i as u64,
            ));
        }
        let many = RegionWriters::new(&ws).cost(&m, &params(), &access(&a));
        assert!(many.transfer_ns > one.transfer_ns, "{one:?} {many:?}");
    }

    /// A writer set that comes back gets its answers from the recent sets,
    /// and they are the answers of an index built for it afresh; another
    /// set starts with none.
    #[test]
    fn a_returning_writer_set_answers_as_a_fresh_index() {
        let m = m();
        let rnd = |id, package, k, wf| Writer {
            id,
            cpu: cpu_on(&m, package, k),
            offset: 0,
            len: 64 * MIB,
            kind: WriterKind::Random { write_fraction: wf },
        };
        let all: Vec<Writer> = (0..12).map(|i| rnd(i, i % 2, i / 2, 0.25)).collect();
        // One writer preempted for a tick: the set without it.
        let less: Vec<Writer> = all.iter().copied().filter(|w| w.id != 5).collect();
        let ask = |r: &mut RegionWriters, ws: &[Writer]| -> Vec<SharedLines> {
            ws.iter()
                .map(|w| r.cost(&m, &params(), &access(w)))
                .collect()
        };
        let mut r = RegionWriters::new(&all);
        let first = ask(&mut r, &all);
        r.rebuild(&less);
        assert!(r.random_memo.borrow().is_empty());
        let without = ask(&mut r, &less);
        assert_eq!(without, ask(&mut RegionWriters::new(&less), &less));
        r.rebuild(&all);
        assert_eq!(r.random_memo.borrow().len(), all.len());
        assert_eq!(ask(&mut r, &all), first);
        assert_eq!(first, ask(&mut RegionWriters::new(&all), &all));
        // The same writers in another order are another list (the order
        // orders the sums): no answers taken.
        let mut reversed = all.clone();
        reversed.reverse();
        r.rebuild(&reversed);
        assert!(r.random_memo.borrow().is_empty());
    }

    #[test]
    fn random_writers_share_in_proportion_to_their_cached_footprint() {
        let m = m();
        let rnd = |id, cpu, len, wf| Writer {
            id,
            cpu,
            offset: 0,
            len,
            kind: WriterKind::Random { write_fraction: wf },
        };
        let a = rnd(0, cpu_on(&m, 0, 0), 4 * MIB, 0.5);
        let b = rnd(1, cpu_on(&m, 1, 0), 4 * MIB, 0.5);
        let small = RegionWriters::new(&[a, b]).cost(&m, &params(), &access(&a));
        let a2 = rnd(0, cpu_on(&m, 0, 0), 4 * GIB, 0.5);
        let b2 = rnd(1, cpu_on(&m, 1, 0), 4 * GIB, 0.5);
        let big = RegionWriters::new(&[a2, b2]).cost(&m, &params(), &access(&a2));
        assert!(small.fraction > 0.3 && small.fraction <= 1.0, "{small:?}");
        assert!(big.fraction < 0.01 * small.fraction, "{big:?}");
        // A reader-only random op writes nothing: no footprint.
        let c = rnd(1, cpu_on(&m, 1, 0), 4 * MIB, 0.0);
        assert_eq!(
            RegionWriters::new(&[a, c])
                .cost(&m, &params(), &access(&a))
                .fraction,
            0.0
        );
    }

    proptest::proptest! {
        /// The classes `overlapping` walks, and their order, are those of
        /// a walk over every class starting before the access, back to the
        /// first whose classes before it all end by its start: ranges of
        /// any lengths, long ones before short ones included.
        #[test]
        fn overlapping_skips_only_classes_that_end_first(
            ranges in proptest::collection::vec((0u64..64, 1u64..64), 1..40),
            a in 0u64..130,
            span in 1u64..40,
        ) {
            let m = m();
            let ws: Vec<Writer> = ranges
                .iter()
                .enumerate()
                .map(|(id, &(off, len))| stream(id, cpu_on(&m, 0, 0), off * MIB, len * MIB, off * MIB))
                .collect();
            let r = RegionWriters::new(&ws);
            let (a, b) = (a * MIB, (a + span) * MIB);
            let hi = r.classes.partition_point(|c| c.offset < b);
            let want: Vec<usize> = (0..hi)
                .rev()
                .take_while(|&i| r.max_end[i] > a)
                .filter(|&i| r.classes[i].offset + r.classes[i].len > a)
                .collect();
            let got: Vec<usize> = r.overlapping(a, b).collect();
            proptest::prop_assert_eq!(got, want);
        }

        /// Writers over several ranges, streams and randoms interleaved:
        /// the index answers the same whatever order the writers come in,
        /// and rebuilding an index over another's room answers as a fresh
        /// one (each class finds its own writers in the flat lists).
        /// Stream positions are distinct: two streams at one position tie,
        /// and the tie goes to the first writer.
        #[test]
        fn index_is_independent_of_writer_order_and_of_rebuilds(
            spec in proptest::collection::vec((0usize..3, proptest::bool::ANY, 0u64..64, 0usize..4), 1..24),
            old in proptest::collection::vec((0usize..3, proptest::bool::ANY, 0u64..64, 0usize..4), 0..24),
        ) {
            let m = m();
            let ranges = [(0, 64 * MIB), (32 * MIB, 64 * MIB), (0, 8 * MIB)];
            let make = |v: &[(usize, bool, u64, usize)]| -> Vec<Writer> {
                v.iter()
                    .enumerate()
                    .map(|(i, &(r, is_stream, at, k))| {
                        let (offset, len) = ranges[r];
                        let cpu = cpu_on(&m, k % 2, k);
                        if is_stream {
                            stream(i, cpu, offset, len, offset + (at * 24 + i as u64) * len / (64 * 24))
                        } else {
                            Writer { id: i, cpu, offset, len, kind: WriterKind::Random { write_fraction: 0.5 } }
                        }
                    })
                    .collect()
            };
            let ws = make(&spec);
            let mut reversed = ws.clone();
            reversed.reverse();
            let mut fresh = RegionWriters::new(&ws);
            let mut other_order = RegionWriters::new(&reversed);
            let mut rebuilt = RegionWriters::new(&make(&old));
            rebuilt.rebuild(&ws);
            for w in &ws {
                let a = access(w);
                let want = fresh.cost(&m, &params(), &a);
                for got in [other_order.cost(&m, &params(), &a), rebuilt.cost(&m, &params(), &a)] {
                    proptest::prop_assert!((got.fraction - want.fraction).abs() < 1e-12);
                    proptest::prop_assert!((got.transfer_ns - want.transfer_ns).abs() < 1e-9);
                }
            }
        }

        /// Writers over one range (streams at any positions, ties
        /// included, and randoms): the one-class path indexes them exactly
        /// as the general one, fresh or over an older index of other
        /// writers (whose order it starts its sorts from).
        #[test]
        fn one_class_index_is_the_general_one(
            spec in proptest::collection::vec((proptest::bool::ANY, 0u64..16, 0usize..4, 0usize..6), 1..40),
        ) {
            let m = m();
            let ws: Vec<Writer> = spec
                .iter()
                .map(|&(is_stream, at, k, id)| {
                    let cpu = cpu_on(&m, k % 2, k);
                    if is_stream {
                        stream(id, cpu, 8 * MIB, 64 * MIB, 8 * MIB + at * 4 * MIB)
                    } else {
                        Writer { id, cpu, offset: 8 * MIB, len: 64 * MIB, kind: WriterKind::Random { write_fraction: 0.5 } }
                    }
                })
                .collect();
            let fresh = RegionWriters::new(&ws);
            // The same writers indexed over an older index of them: some
            // streams elsewhere, some writers gone, one that was not there.
            let older: Vec<Writer> = ws
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 3 != 1)
                .map(|(i, w)| match w.kind {
                    WriterKind::Stream { at } if i % 2 == 0 => {
                        stream(w.id, w.cpu, 8 * MIB, 64 * MIB, 8 * MIB + (at - 8 * MIB + 20 * MIB) % (64 * MIB))
                    }
                    _ => *w,
                })
                .chain(std::iter::once(stream(7, cpu_on(&m, 0, 1), 8 * MIB, 64 * MIB, 9 * MIB)))
                .collect();
            let mut reused = RegionWriters::new(&older);
            reused.rebuild(&ws);
            for one in [fresh, reused] {
            let mut general = one.clone();
            general.rebuild_classes();
            proptest::prop_assert_eq!(&one.streams, &general.streams);
            proptest::prop_assert_eq!(&one.by_id, &general.by_id);
            proptest::prop_assert_eq!(&one.randoms, &general.randoms);
            proptest::prop_assert_eq!(&one.max_end, &general.max_end);
            proptest::prop_assert_eq!(&one.prev_longer, &general.prev_longer);
            let bounds = |r: &RegionWriters| -> Vec<_> {
                r.classes.iter().map(|c| (c.offset, c.len, c.streams.clone(), c.randoms.clone())).collect()
            };
            proptest::prop_assert_eq!(bounds(&one), bounds(&general));
            }
        }

        /// Writers taken tick by tick through `update`: private slices
        /// (the index put off), shared ranges (rebuilt), the same writers
        /// moved on (in place, with or without an index). Every access
        /// gets what a fresh index of the tick's writers answers: each
        /// writer's own, and readers' over any range, which build a put-off
        /// index when they read another writer's range.
        #[test]
        fn updated_index_answers_as_a_fresh_one(
            ticks in proptest::collection::vec(
                (
                    0u8..3,
                    proptest::collection::vec((0u64..16, 1u64..4, proptest::bool::ANY, 0u64..64, 0usize..4), 1..10),
                ),
                1..8,
            ),
            reads in proptest::collection::vec((0u64..20, 1u64..6, 0usize..12, proptest::bool::ANY, 0u64..64), 0..6),
            readers_first in proptest::bool::ANY,
        ) {
            let m = m();
            // Writer `id` on the `k`th CPU of package `k % 2` over
            // `[offset, offset + len)`: a stream `at` 64ths into it, or a
            // random writer.
            let writer = |id: usize, k: usize, offset: u64, len: u64, is_stream: bool, at: u64| {
                let cpu = cpu_on(&m, k % 2, k);
                if is_stream {
                    stream(id, cpu, offset, len, offset + at * len / 64)
                } else {
                    Writer { id, cpu, offset, len, kind: WriterKind::Random { write_fraction: 0.5 } }
                }
            };
            let mut r = RegionWriters::default();
            let mut ws: Vec<Writer> = Vec::new();
            for (shape, spec) in &ticks {
                ws = match shape {
                    // The last tick's writers, each stream a step further.
                    0 if !ws.is_empty() => ws
                        .iter()
                        .map(|w| match w.kind {
                            WriterKind::Stream { at } => {
                                stream(w.id, w.cpu, w.offset, w.len, w.offset + (at - w.offset + MIB) % w.len)
                            }
                            _ => *w,
                        })
                        .collect(),
                    // Each writer its own slice, some left out.
                    1 | 0 => spec
                        .iter()
                        .enumerate()
                        .filter(|(i, e)| e.0 % 5 != 0 || *i == 0)
                        .map(|(i, &(_, width, is_stream, at, k))| {
                            writer(i, k, i as u64 * 4 * MIB, width * MIB, is_stream, at)
                        })
                        .collect(),
                    // Ranges anywhere, mostly overlapping.
                    _ => spec
                        .iter()
                        .enumerate()
                        .map(|(i, &(slot, width, is_stream, at, k))| {
                            writer(i, k, slot * 4 * MIB, width * 4 * MIB, is_stream, at)
                        })
                        .collect(),
                };
                r.update(&ws);
                let mut fresh = RegionWriters::new(&ws);
                let own: Vec<Access> = ws.iter().map(access).collect();
                let readers: Vec<Access> = reads
                    .iter()
                    .map(|&(slot, width, id, is_stream, at)| {
                        let (offset, len) = (slot * 4 * MIB, width * 4 * MIB);
                        Access {
                            id,
                            cpu: cpu_on(&m, id % 2, id % 4),
                            offset,
                            len,
                            kind: if is_stream {
                                AccessKind::Stream { at: offset + at * len / 64 }
                            } else {
                                AccessKind::Random
                            },
                        }
                    })
                    .collect();
                let asks: Vec<&Access> = if readers_first {
                    readers.iter().chain(&own).collect()
                } else {
                    own.iter().chain(&readers).collect()
                };
                for a in asks {
                    proptest::prop_assert_eq!(r.cost(&m, &params(), a), fresh.cost(&m, &params(), a));
                }
            }
        }

        /// Streams moved in place answer exactly as a fresh index of the
        /// moved writers.
        #[test]
        fn moved_streams_index_as_a_fresh_one(
            spec in proptest::collection::vec((0usize..3, proptest::bool::ANY, 0u64..64, 0usize..4, 0u64..64), 1..24),
        ) {
            let m = m();
            let ranges = [(0, 64 * MIB), (32 * MIB, 64 * MIB), (0, 8 * MIB)];
            let make = |moved: bool| -> Vec<Writer> {
                spec.iter()
                    .enumerate()
                    .map(|(i, &(r, is_stream, at, k, step))| {
                        let (offset, len) = ranges[r];
                        let cpu = cpu_on(&m, k % 2, k);
                        let at = if moved { (at + step) % 64 } else { at };
                        if is_stream {
                            stream(i, cpu, offset, len, offset + (at * 24 + i as u64) * len / (64 * 24))
                        } else {
                            Writer { id: i, cpu, offset, len, kind: WriterKind::Random { write_fraction: 0.5 } }
                        }
                    })
                    .collect()
            };
            let (before, after) = (make(false), make(true));
            let mut moved = RegionWriters::new(&before);
            proptest::prop_assert!(moved.move_streams(&after));
            let mut fresh = RegionWriters::new(&after);
            for w in &after {
                let a = access(w);
                proptest::prop_assert_eq!(moved.cost(&m, &params(), &a), fresh.cost(&m, &params(), &a));
            }
            let mut other = after.clone();
            other[0].cpu = cpu_on(&m, 1, 5);
            proptest::prop_assert!(!moved.move_streams(&other));
        }

        /// The binary-search window count is the pass over every writer
        /// it replaced, wrap-around and the accessor's own streams included.
        #[test]
        fn count_near_matches_a_pass_over_every_writer(
            len in 1u64..10_000,
            pos in proptest::collection::vec((0u64..10_000, 0usize..6), 0..40),
            rel in 0u64..10_000,
            window in 0.0f64..12_000.0,
            me in 0usize..6,
            mine_guess in 0usize..50,
        ) {
            let writers: Vec<Writer> = pos
                .iter()
                .map(|&(p, id)| stream(id, CpuId::new(0), 0, len, p % len))
                .collect();
            let r = RegionWriters::new(&writers);
            let rel = rel % len;
            let naive = writers
                .iter()
                .filter(|w| {
                    let WriterKind::Stream { at } = w.kind else { return false };
                    let d = at.abs_diff(rel);
                    w.id != me && d.min(len - d) <= window as u64
                })
                .count();
            let got = r
                .classes
                .first()
                .map_or(0, |c| {
                    let cs = r.class_streams(c);
                    let ahead = cs.streams.partition_point(|&(p, _)| p <= rel);
                    let (n, mine_at) = count_near(&cs, rel, ahead, mine_guess, window, me);
                    // Where `me`'s entries start, whatever the guess.
                    assert_eq!(mine_at, cs.by_id.partition_point(|&(id, _)| id < me));
                    n
                });
            proptest::prop_assert_eq!(got, naive);
        }
    }

    #[test]
    fn latency_adds_the_transfer_to_the_shared_share() {
        let s = SharedLines {
            fraction: 0.25,
            transfer_ns: 200.0,
        };
        assert!((s.latency_ns(100.0) - 150.0).abs() < 1e-9);
        assert_eq!(SharedLines::default().latency_ns(90.0), 90.0);
    }
}
