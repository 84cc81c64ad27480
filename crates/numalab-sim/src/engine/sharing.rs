//! Who writes which part of which region, gathered from the running tasks'
//! operations at each tick, for the shared-line model (physics/sharing.rs).
//!
//! At every tick, before the fluid solve, each running task whose
//! operation in progress writes (a stream of a writing phase, random
//! accesses with a write share) is indexed under its (mm, VMA) with its
//! range and, for a stream, its position (a shared object's mappings in
//! several mms are one region: `MmState::region_key`). Then [`Sim::shared_line_latency`]
//! tells `op_demand` the latency an access sees once the lines other cores
//! hold Modified are counted. Switch: `numalab.shared_line_transfers`.
//!
//! Left out: tasks that are not running at the tick (their caches still
//! hold their lines), and positions reached inside the tick (streams at
//! similar rates keep their distances; see physics/sharing.rs).

use super::exec::Op;
use super::Sim;
use crate::kernel::sysctl::knob;
use crate::kernel::{CpuId, MmId, TaskId, VmaId};
use crate::physics::line::LineModel;
use crate::physics::sharing::{
    Access, AccessKind, RegionWriters, Sharing, Writer, WriterKind, WRITER_CACHE_BYTES,
};

/// The part of a region an operation covers.
struct Span {
    vma: VmaId,
    offset: u64,
    len: u64,
    /// Share of its accesses that are writes.
    write: f64,
    /// For a stream, the byte of the region it is at.
    at: Option<u64>,
}

impl Span {
    /// The span of a stream or random operation.
    fn of(op: &Op) -> Option<Span> {
        match *op {
            Op::Stream {
                vma,
                offset,
                len,
                pos,
                write,
                ..
            } => Some(Span {
                vma,
                offset,
                len,
                write,
                at: Some(offset + (pos as u64).min(len.saturating_sub(1))),
            }),
            Op::Random {
                vma,
                offset,
                len,
                write,
                ..
            } => Some(Span {
                vma,
                offset,
                len,
                write,
                at: None,
            }),
            _ => None,
        }
    }
}

/// The writers of every region that has any, at the last tick, sorted by
/// region: a handful of regions, looked up once per running task per tick
/// (a search of a short sorted list costs less than a tree's).
pub(crate) type SharedWriters = Vec<((MmId, VmaId), RegionWriters)>;

/// The shared-line model's parameters for a run: its knobs and machine
/// are fixed, so they are read once ([`Sim::shared_line_latency`] is asked
/// for every running memory op at every tick).
pub(crate) fn sharing_params(k: &crate::kernel::Kernel) -> Sharing {
    let m = &k.m;
    // A core's streaming misses in flight span core_gbps x latency
    // bytes (Little's law, as op_demand's stream cap).
    Sharing {
        line: LineModel::from_knobs(&k.knobs),
        cache_bytes: WRITER_CACHE_BYTES,
        window_bytes: m.bandwidth.core_gbps * m.latency_ns[0][0],
    }
}

/// Distinct keys [`group_by_key_stable`] buckets by; more take a sort.
const FEW_KEYS: usize = 8;

/// Orders `v` by key as a stable sort does (equal keys keep their order),
/// by one pass per distinct key when there are at most [`FEW_KEYS`]: the
/// writers of a tick are every running CPU's (1024 on xl-8s-1024) over a
/// few regions (one per written buffer), and their sort was a few percent
/// of such a run.
fn group_by_key_stable<K: Ord + Copy, T: Copy>(v: &mut Vec<(K, T)>) {
    if v.is_sorted_by_key(|e| e.0) {
        return;
    }
    let mut keys: smallvec::SmallVec<[K; FEW_KEYS]> = smallvec::SmallVec::new();
    for e in v.iter() {
        if !keys.contains(&e.0) {
            if keys.len() == FEW_KEYS {
                v.sort_by_key(|e| e.0);
                return;
            }
            keys.push(e.0);
        }
    }
    keys.sort_unstable();
    let mut out = Vec::with_capacity(v.capacity());
    for k in &keys {
        out.extend(v.iter().filter(|e| e.0 == *k).copied());
    }
    *v = out;
}

impl Sim {
    /// Indexes the running writers by region (numalab.shared_line_transfers;
    /// nothing when it is off).
    pub(crate) fn gather_shared_writers(&mut self) {
        if !self.k.knobs.get(knob::SHARED_LINE_TRANSFERS) {
            self.shared.clear();
            return;
        }
        // Every running writer with its region, kept between ticks so the
        // list does not grow anew each tick.
        let mut found = std::mem::take(&mut self.shared_scratch);
        found.clear();
        for cpu in CpuId::range(self.k.m.nr_cpus()) {
            let Some(t) = self.k.sched.rq[cpu].curr else {
                continue;
            };
            let Some(span) = Span::of(&self.exec[t].op) else {
                continue;
            };
            if span.write <= 0.0 || span.len == 0 {
                continue;
            }
            let (vma, offset, len) = (span.vma, span.offset, span.len);
            let kind = match span.at {
                Some(at) => WriterKind::Stream { at },
                None => WriterKind::Random {
                    write_fraction: span.write,
                },
            };
            found.push((
                self.k.mem.region_key(self.k.tasks[t].mm, vma),
                Writer {
                    id: t.index(),
                    cpu,
                    offset,
                    len,
                    kind,
                },
            ));
        }
        // By region; a region's writers stay in CPU order (stable sort).
        group_by_key_stable(&mut found);
        // Regions nobody writes this tick drop out.
        self.shared
            .retain(|(k, _)| found.binary_search_by_key(k, |e| e.0).is_ok());
        let mut writers = std::mem::take(&mut self.shared_writers);
        for region in found.chunk_by(|a, b| a.0 == b.0) {
            writers.clear();
            writers.extend(region.iter().map(|e| e.1));
            match self.shared.binary_search_by_key(&region[0].0, |e| e.0) {
                // The same writers keep their index (and what it answered);
                // streams that only moved update it in place; writers of
                // disjoint slices put it off; other changes rebuild it in
                // the old index's room (RegionWriters::update; the
                // parameters of the model are fixed for the run).
                Ok(i) => self.shared[i].1.update(&writers),
                Err(i) => {
                    let mut r = RegionWriters::default();
                    r.update(&writers);
                    self.shared.insert(i, (region[0].0, r));
                }
            }
        }
        self.shared_writers = writers;
        self.shared_scratch = found;
    }

    /// The latency task `t` on `cpu` sees for `op` when its memory
    /// accesses average `mem_ns`: lines other cores hold Modified come by
    /// a cache-to-cache transfer instead (physics/sharing.rs).
    pub(crate) fn shared_line_latency(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        op: &Op,
        mem_ns: f64,
    ) -> f64 {
        if self.shared.is_empty() {
            return mem_ns;
        }
        let Some(Span {
            vma,
            offset,
            len,
            at,
            ..
        }) = Span::of(op)
        else {
            return mem_ns;
        };
        let kind = match at {
            Some(at) => AccessKind::Stream { at },
            None => AccessKind::Random,
        };
        let key = self.k.mem.region_key(self.k.tasks[t].mm, vma);
        let Ok(i) = self.shared.binary_search_by_key(&key, |e| e.0) else {
            return mem_ns;
        };
        let r = &mut self.shared[i].1;
        let m = &self.k.m;
        let p = &self.sharing;
        let a = Access {
            id: t.index(),
            cpu,
            offset,
            len,
            kind,
        };
        r.cost(m, p, &a).latency_ns(mem_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Bucketing by key orders as a stable sort by key, with few keys
        /// (the buckets) and with more than [`FEW_KEYS`] (the sort).
        #[test]
        fn grouping_by_key_is_a_stable_sort(
            v in proptest::collection::vec((0u8..12, 0u32..1000), 0..200),
            few in proptest::bool::ANY,
        ) {
            let v: Vec<(u8, u32)> = v
                .into_iter()
                .map(|(k, x)| (if few { k % 3 } else { k }, x))
                .collect();
            let mut want = v.clone();
            want.sort_by_key(|e| e.0);
            let mut got = v;
            group_by_key_stable(&mut got);
            proptest::prop_assert_eq!(got, want);
        }
    }
}
