//! Which threads race a fault, and charging everyone who took it.
//!
//! The engine runs each CPU's task ahead to the tick horizon on its own,
//! so the first task the engine runs over a page takes its fault and the
//! others find it present. In the machine, threads streaming over the same
//! range reach a page at the same time and all take the fault (mm/fault.rs
//! handles the race). Who races, from the tasks running now:
//! - a first touch: every other running thread of the mm whose current
//!   stream covers the page. A page not yet present is a wall every such
//!   stream has to pass, and a stream catches up with the wall at memory
//!   speed (present pages) while the wall moves at fault speed, so they
//!   meet there: the convoy of NUMA01's first `bzero` of the shared buffer.
//! - a hinting fault: every other running thread of the mm whose stream is
//!   at most one fault's duration of streaming (its rate times
//!   `HINT_FAULT_NS`) before the page in its current pass: it reaches the
//!   page while the fault is being handled.
//!
//! Streams are read once per tick per VMA (positions as of the first fault
//! in the VMA that tick; up to one tick stale, like the engine's node
//! mixes). The threads of one range race every first touch in it
//! together, so their losers' costs are summed per range and charged at
//! the next tick (one tick later than the fault, like any kernel work a
//! task owes); other losers are charged at once. Random accesses do not race: two threads hitting the same page
//! at the same instant at random is rare.
//!
//! Left out: threads blocked or waiting for a CPU (they are not at the
//! wall), hinting-fault convoys (a slow PROT_NONE range making followers
//! catch up), races on page-table locks between different pages.

use super::exec::Op;
use super::Sim;
use crate::gallop::partition_point_from;
use crate::kernel::locking::ptl::cpu_set_key;
use crate::kernel::mm::fault::Race;
use crate::kernel::scratch;
use crate::kernel::{CpuId, MmId, TaskId, VmaId};
use crate::physics::costs;
use crate::resort::Resort;
use smallvec::SmallVec;

/// Racers held inline before a fault's lists spill to the heap: faults
/// run per page, so their small lists stay off the allocator.
const INLINE_RACERS: usize = 8;

/// The running streams of the VMAs that faulted this tick.
#[derive(Clone, Debug, Default)]
pub(crate) struct RaceStreams {
    /// Tick start they were read at.
    tick: Option<u64>,
    /// Per (mm, VMA), in first-fault order.
    vmas: Vec<((MmId, VmaId), VmaStreams)>,
    /// Per (mm, VMA), the task ids of its last read in sorted order, kept
    /// across ticks: streams seldom pass each other within a tick, so the
    /// next read's rows sort fast starting from it ([`Resort`]).
    last_order: Vec<((MmId, VmaId), Vec<usize>)>,
    /// Scratch of those sorts.
    resort: Resort<StreamRow>,
}

/// A running stream as read: (range offset, range length, absolute
/// position, task, CPU). A task runs on one CPU, so (range, position,
/// task) keys are unique and the sort order is total.
type StreamRow = (u64, u64, u64, TaskId, CpuId);

impl RaceStreams {
    /// Sorts the rows of one read of (mm, VMA) `key`, starting from the
    /// order of its last read, and remembers their order for the next.
    fn sort_rows(&mut self, key: (MmId, VmaId), rows: &mut Vec<StreamRow>) {
        let li = match self.last_order.iter().position(|e| e.0 == key) {
            Some(i) => i,
            None => {
                self.last_order.push((key, Vec::new()));
                self.last_order.len() - 1
            }
        };
        self.resort
            .sort(rows, &self.last_order[li].1, |r| r.3.index());
        let last = &mut self.last_order[li].1;
        last.clear();
        last.extend(rows.iter().map(|r| r.3.index()));
    }
}

/// The running streams of one VMA, grouped by range.
#[derive(Clone, Debug, Default)]
struct VmaStreams {
    /// Groups sorted by range start.
    groups: Vec<Group>,
    /// By task index: `(group, index in its members)` of the task's
    /// stream, `NO_MEMBER` for a task with none. A running task streams
    /// one range at most (it runs on one CPU, one op), so a fault finds
    /// its own member by one look-up instead of a sort of each group's
    /// tasks per read (NUMA01's first touch runs 160 threads in one
    /// group).
    member: Vec<(u32, u32)>,
    /// Each group's range start, in group order: what the searches of
    /// [`VmaStreams::candidates`] read, in one dense array.
    starts: Vec<u64>,
    /// The last [`VmaStreams::candidates`] answer: a task faults page
    /// after page of its own range while it runs, so the next search
    /// mostly ends where the last did (NUMA02's 320 one-thread ranges).
    last: std::ops::Range<usize>,
    /// Longest range of any group (bytes), to bound the search back.
    max_len: u64,
}

/// [`VmaStreams::member`] of a task that streams none of its ranges.
const NO_MEMBER: (u32, u32) = (u32::MAX, u32::MAX);

/// The streams over one range `[offset, offset + len)` of a VMA.
#[derive(Clone, Debug)]
struct Group {
    offset: u64,
    len: u64,
    /// The streams, sorted by position.
    members: Vec<Member>,
    /// The members' CPUs, in member order.
    cpus: Vec<CpuId>,
    /// Members per node.
    per_node: Vec<u64>,
    /// `cpu_set_key(cpus)`.
    key: u64,
    /// Longest reach of any member during one hinting fault (bytes), so a
    /// fault looks only at members that can reach it.
    max_reach: u64,
    /// Losers' CPU time summed over this tick's first touches (ns).
    owed_cpu: f64,
    /// Losers' sleep summed likewise (ns).
    owed_sleep: f64,
}

/// One running stream.
#[derive(Clone, Debug)]
struct Member {
    /// Absolute position in the VMA (bytes).
    pos: u64,
    /// Rate (bytes/ns).
    rate: f64,
    task: TaskId,
    cpu: CpuId,
    /// Loser costs of the faults this member won (it does not owe them).
    won_cpu: f64,
    won_sleep: f64,
    /// Where the racer search of its last hinting fault in this group
    /// ended (an index into the members), the next one's first guess.
    search_from: u32,
}

impl Sim {
    /// Task `t` on `cpu` faults page `p` of `vma` with the threads racing
    /// it; charges the winner (`t`) and the losers. `stream` is `t`'s own
    /// stream (range offset, length and absolute position, bytes), taken
    /// out of its exec state while it runs; `None` for random accesses.
    /// `writes`: the op writes the pages it touches (a `write` stream, a
    /// random op with writes: the kernel's `FAULT_FLAG_WRITE`).
    pub(crate) fn fault_page(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        p: usize,
        stream: Option<(u64, u64, u64)>,
        writes: bool,
    ) -> Result<(), String> {
        if !self.k.mem.locks().on.fault_retry {
            let c = self
                .k
                .handle_mm_fault_racing(t, cpu, vma, p, writes, Race::default())
                .map_err(|e| e.0)?;
            self.k.charge_sys(t, c.cpu_ns);
            return Ok(());
        }
        if self.race_streams.tick != Some(self.tick_start) {
            self.flush_race_debts();
            self.race_streams.tick = Some(self.tick_start);
        }
        let mm = self.k.tasks[t].mm;
        let vi = match self.race_streams.vmas.iter().position(|e| e.0 == (mm, vma)) {
            Some(i) => i,
            None => {
                let mut rows = self.stream_rows(mm, vma, t, cpu, stream);
                self.race_streams.sort_rows((mm, vma), &mut rows);
                let vs = self.group_streams(rows);
                self.race_streams.vmas.push(((mm, vma), vs));
                self.race_streams.vmas.len() - 1
            }
        };
        let v = &self.k.mem.mms[mm].vmas[vma];
        let shift = v.page_shift;
        let first_touch = v.pages[p].nid == crate::kernel::mm::NO_NODE;
        let lo = (p as u64) << shift;
        let hi = lo + (1u64 << shift);
        let vs = &mut self.race_streams.vmas[vi].1;
        let candidates = vs.candidates(lo, hi);
        let mut covering = candidates.clone().filter(|&i| vs.overlaps(i, lo));
        let only = match (covering.next(), covering.next()) {
            (Some(i), None) => Some(i),
            _ => None,
        };
        // The common case: a first touch in the one range `t` streams
        // with the others.
        if let (true, Some(gi)) = (first_touch, only) {
            if let Some(w) = vs.member_of(gi, t) {
                let g = &mut vs.groups[gi];
                let race = Race {
                    cpus: &g.cpus,
                    per_node: &g.per_node,
                    key: g.key,
                };
                let c = self
                    .k
                    .handle_mm_fault_racing(t, cpu, vma, p, writes, race)
                    .map_err(|e| e.0)?;
                self.k.charge_sys(t, c.cpu_ns);
                if g.members.len() > 1 {
                    g.owed_cpu += c.loser_cpu_ns;
                    g.owed_sleep += c.loser_sleep_ns;
                    g.members[w].won_cpu += c.loser_cpu_ns;
                    g.members[w].won_sleep += c.loser_sleep_ns;
                }
                return Ok(());
            }
        }
        // Otherwise: the racers one by one.
        let mut racers: SmallVec<[(TaskId, CpuId); INLINE_RACERS]> = SmallVec::new();
        for gi in candidates {
            if !vs.overlaps(gi, lo) {
                continue;
            }
            let g = &vs.groups[gi];
            if first_touch {
                racers.extend(
                    g.members
                        .iter()
                        .filter(|m| m.task != t)
                        .map(|m| (m.task, m.cpu)),
                );
            } else {
                // Before the page by at most one fault's streaming; members
                // further back than the group's longest reach cannot be.
                // A member's faults come page after page while positions
                // hold for the tick, so its last answer is where the
                // search starts (the same answer from any start).
                let own = vs.member_of(gi, t);
                let guess = own.map_or(0, |w| g.members[w].search_from as usize);
                let from = partition_point_from(&g.members, guess, |m| {
                    m.pos.saturating_add(g.max_reach) < lo
                });
                for m in &g.members[from..] {
                    if m.pos >= hi {
                        break;
                    }
                    if m.task != t && m.pos + reach(m.rate) >= lo {
                        racers.push((m.task, m.cpu));
                    }
                }
                if let Some(w) = own {
                    vs.groups[gi].members[w].search_from = from as u32;
                }
            }
        }
        if racers.is_empty() {
            // No race (most hinting faults): the fault path ignores a race
            // of one thread, so its CPU list and node counts are not built.
            let c = self
                .k
                .handle_mm_fault_racing(t, cpu, vma, p, writes, Race::default())
                .map_err(|e| e.0)?;
            self.k.charge_sys(t, c.cpu_ns);
            return Ok(());
        }
        let mut cpus: SmallVec<[CpuId; INLINE_RACERS]> = SmallVec::with_capacity(racers.len() + 1);
        cpus.push(cpu);
        cpus.extend(racers.iter().map(|r| r.1));
        let (mut stack, mut heap) = ([0u64; scratch::STACK_WORDS], Vec::new());
        let per_node = scratch::zeroed(self.k.m.nr_nodes(), &mut stack, &mut heap);
        for &c in &cpus {
            per_node[self.k.cpu_node(c).index()] += 1;
        }
        let key = cpu_set_key(&cpus);
        let race = Race {
            cpus: &cpus,
            per_node,
            key,
        };
        let c = self
            .k
            .handle_mm_fault_racing(t, cpu, vma, p, writes, race)
            .map_err(|e| e.0)?;
        self.k.charge_sys(t, c.cpu_ns);
        for (r, _) in racers {
            self.k.charge_sys(r, c.loser_cpu_ns);
            self.k.delay_task(r, c.loser_sleep_ns);
        }
        Ok(())
    }

    /// Charges the losers' costs summed per range this tick, and forgets
    /// the streams (they are read again at the next fault).
    pub(crate) fn flush_race_debts(&mut self) {
        for (_, vs) in std::mem::take(&mut self.race_streams.vmas) {
            for g in vs.groups {
                if g.owed_cpu <= 0.0 && g.owed_sleep <= 0.0 {
                    continue;
                }
                for m in g.members {
                    let cpu_ns = g.owed_cpu - m.won_cpu;
                    if cpu_ns > 0.0 {
                        self.k.charge_sys(m.task, cpu_ns);
                    }
                    self.k.delay_task(m.task, g.owed_sleep - m.won_sleep);
                }
            }
        }
        self.race_streams.tick = None;
    }

    /// The running streams over `vma` of `mm` as rows, unsorted; the
    /// running task `cur` on `cur_cpu` streams `stream`. Sorted rows are
    /// cut into groups where the range changes ([`Sim::group_streams`]):
    /// one sort of small rows instead of a search of the groups per
    /// stream (NUMA01_THREADLOCAL's 160 threads per process each stream a
    /// range of their own).
    fn stream_rows(
        &self,
        mm: MmId,
        vma: VmaId,
        cur: TaskId,
        cur_cpu: CpuId,
        stream: Option<(u64, u64, u64)>,
    ) -> Vec<StreamRow> {
        let mut found: Vec<StreamRow> = Vec::with_capacity(self.k.sched.rq.len());
        // The memory behind the VMA: with numalab.migration_entry_sleep a
        // shared object's threads of every mapping mm race on its folios
        // (another mm's PTE is a migration entry while the folio moves,
        // kernel/mm/shmem.rs), and the losers sleep off their CPUs.
        let shared = self.k.mem.mms[mm].vmas[vma].shm.is_some()
            && self.k.mem.locks().on.migration_entry_sleep;
        let region = self.k.mem.region_key(mm, vma);
        let same_memory = |tmm: MmId, sv: VmaId| {
            if shared {
                self.k.mem.region_key(tmm, sv) == region
            } else {
                (tmm, sv) == (mm, vma)
            }
        };
        for (cpu, rq) in self.k.sched.rq.iter_enumerated() {
            let Some(t) = rq.curr else { continue };
            let tmm = self.k.tasks[t].mm;
            if tmm != mm && !shared {
                continue;
            }
            let (offset, len, pos) = if t == cur && cpu == cur_cpu {
                match stream {
                    Some(s) => s,
                    None => continue,
                }
            } else {
                match &self.exec[t].op {
                    Op::Stream {
                        vma: sv,
                        offset,
                        len,
                        pos,
                        ..
                    } if same_memory(tmm, *sv) => (*offset, *len, offset + *pos as u64),
                    _ => continue,
                }
            };
            found.push((offset, len, pos, t, cpu));
        }
        found
    }

    /// Groups sorted stream rows by range.
    fn group_streams(&self, found: Vec<StreamRow>) -> VmaStreams {
        let nn = self.k.m.nr_nodes();
        let mut groups: Vec<Group> = Vec::new();
        for (offset, len, pos, task, cpu) in found {
            let m = Member {
                pos,
                rate: self.exec[task].rate,
                task,
                cpu,
                won_cpu: 0.0,
                won_sleep: 0.0,
                search_from: 0,
            };
            match groups.last_mut() {
                Some(g) if g.offset == offset && g.len == len => g.members.push(m),
                _ => groups.push(Group {
                    offset,
                    len,
                    members: vec![m],
                    cpus: Vec::new(),
                    per_node: Vec::new(),
                    key: 0,
                    max_reach: 0,
                    owed_cpu: 0.0,
                    owed_sleep: 0.0,
                }),
            }
        }
        let top = groups
            .iter()
            .flat_map(|g| g.members.iter().map(|m| m.task.index() + 1))
            .max()
            .unwrap_or(0);
        let mut member = vec![NO_MEMBER; top];
        for (gi, g) in groups.iter().enumerate() {
            for (w, m) in g.members.iter().enumerate() {
                member[m.task.index()] = (gi as u32, w as u32);
            }
        }
        for g in &mut groups {
            g.cpus = g.members.iter().map(|m| m.cpu).collect();
            g.per_node = vec![0; nn];
            for &c in &g.cpus {
                g.per_node[self.k.cpu_node(c).index()] += 1;
            }
            g.key = cpu_set_key(&g.cpus);
            g.max_reach = g.members.iter().map(|m| reach(m.rate)).max().unwrap_or(0);
        }
        let max_len = groups.iter().map(|g| g.len).max().unwrap_or(0);
        let starts = groups.iter().map(|g| g.offset).collect();
        VmaStreams {
            groups,
            member,
            starts,
            last: 0..0,
            max_len,
        }
    }
}

/// Bytes a stream at `rate` (bytes/ns) covers during one hinting fault.
fn reach(rate: f64) -> u64 {
    (rate * costs::HINT_FAULT_NS) as u64
}

impl VmaStreams {
    /// Index of task `t`'s member in group `gi`, if it streams in that
    /// group.
    fn member_of(&self, gi: usize, t: TaskId) -> Option<usize> {
        match self.member.get(t.index()) {
            Some(&(g, w)) if g as usize == gi => Some(w as usize),
            _ => None,
        }
    }

    /// Indices of the groups that may overlap `[lo, hi)`: every group
    /// that does is among them ([`VmaStreams::overlaps`] tells which).
    /// Groups are sorted by start, so the ones starting before `hi` are a
    /// prefix, and within it those that can reach `lo` (start plus the
    /// longest range past it) a suffix.
    ///
    /// The last answer is checked first: each bound is the partition
    /// point of a monotone test, so a bound whose neighbours pass and fail
    /// the test is the one a search would find.
    fn candidates(&mut self, lo: u64, hi: u64) -> std::ops::Range<usize> {
        let s = &self.starts;
        let before_hi = |i: usize| s[i] < hi;
        let behind_lo = |i: usize| s[i] + self.max_len <= lo;
        let (start, end) = (self.last.start, self.last.end);
        let end_holds = end <= s.len()
            && (end == 0 || before_hi(end - 1))
            && (end == s.len() || !before_hi(end));
        if end_holds
            && start <= end
            && (start == 0 || behind_lo(start - 1))
            && (start == end || !behind_lo(start))
        {
            return start..end;
        }
        let end = s.partition_point(|&o| o < hi);
        let start = s[..end].partition_point(|&o| o + self.max_len <= lo);
        self.last = start..end;
        start..end
    }

    /// Whether group `i`, one of [`VmaStreams::candidates`], overlaps the
    /// page starting at `lo`.
    fn overlaps(&self, i: usize, lo: u64) -> bool {
        let g = &self.groups[i];
        g.offset + g.len > lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows as (range, position, task): tasks unique, CPUs by task.
    fn rows(spec: &[(u64, u64, usize)]) -> Vec<StreamRow> {
        let mut seen = std::collections::BTreeSet::new();
        spec.iter()
            .filter(|r| seen.insert(r.2))
            .map(|&(range, pos, task)| {
                (range * 1000, 1000, pos, TaskId::new(task), CpuId::new(task))
            })
            .collect()
    }

    proptest::proptest! {
        /// Whatever order the last read left, and whoever joined or left
        /// since, the rows come out as a plain sort gives them.
        #[test]
        fn sort_rows_is_a_sort_from_any_last_order(
            first in proptest::collection::vec((0u64..3, 0u64..5000, 0usize..40), 0..40),
            second in proptest::collection::vec((0u64..3, 0u64..5000, 0usize..40), 0..40),
        ) {
            let mut rs = RaceStreams::default();
            let key = (MmId::new(0), VmaId::new(0));
            for spec in [&first, &second] {
                let mut got = rows(spec);
                let mut want = got.clone();
                want.sort_unstable();
                rs.sort_rows(key, &mut got);
                proptest::prop_assert_eq!(&got, &want);
            }
        }

        /// Whatever the last answer was, candidates() gives the two
        /// searches' answer for each page in turn, over sorted range
        /// starts with repeats.
        #[test]
        fn candidates_are_the_searches_from_any_last_answer(
            mut starts in proptest::collection::vec(0u64..64, 0..12),
            max_len in 0u64..24,
            pages in proptest::collection::vec(0u64..80, 1..24),
            last in (0usize..14, 0usize..14),
        ) {
            starts.sort_unstable();
            // Any first "last answer", in range or not, ordered or not.
            let mut vs = VmaStreams {
                groups: Vec::new(),
                member: Vec::new(),
                starts: starts.clone(),
                last: last.0..last.1,
                max_len,
            };
            for lo in pages {
                let hi = lo + 4;
                let end = starts.partition_point(|&o| o < hi);
                let start = starts[..end].partition_point(|&o| o + max_len <= lo);
                proptest::prop_assert_eq!(vs.candidates(lo, hi), start..end);
            }
        }
    }
}
