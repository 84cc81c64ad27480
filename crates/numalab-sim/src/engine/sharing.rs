//! Who writes which part of which region, gathered from the running tasks'
//! operations at each tick, for the shared-line model (physics/sharing.rs).
//!
//! At every tick, before the fluid solve, each running task whose
//! operation in progress writes (a stream of a writing phase, random
//! accesses with a write share) is indexed under its (mm, VMA) with its
//! range and, for a stream, its position. Then [`Sim::shared_line_latency`]
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
use numalab_workload::Phase;
use std::collections::BTreeMap;

/// The writers of every region that has any, at the last tick.
pub(crate) type SharedWriters = BTreeMap<(MmId, VmaId), RegionWriters>;

impl Sim {
    /// Share of the accesses of task `t`'s operation in progress that are
    /// writes, from the phase that started it.
    fn op_write_share(&self, t: TaskId) -> f64 {
        let ex = &self.exec[t];
        let mut list: &[Phase] = &self.threads[ex.proc][ex.thread];
        let depth = ex.frames.len();
        for f in &ex.frames[..depth - 1] {
            match list.get(f.pc) {
                Some(Phase::Repeat { body, .. }) => list = body,
                _ => return 0.0,
            }
        }
        // The cursor has moved past the phase that started the op.
        let pc = ex.frames[depth - 1].pc;
        match pc.checked_sub(1).and_then(|i| list.get(i)) {
            Some(Phase::Stream { write, .. }) => f64::from(u8::from(*write)),
            Some(Phase::Random { write_fraction, .. }) => *write_fraction,
            _ => 0.0,
        }
    }

    /// Indexes the running writers by region (numalab.shared_line_transfers;
    /// nothing when it is off).
    pub(crate) fn gather_shared_writers(&mut self) {
        self.shared.clear();
        if !self.k.knobs.get(knob::SHARED_LINE_TRANSFERS) {
            return;
        }
        let mut by: BTreeMap<(MmId, VmaId), Vec<Writer>> = BTreeMap::new();
        for cpu in CpuId::range(self.k.m.nr_cpus()) {
            let Some(t) = self.k.rq[cpu].curr else {
                continue;
            };
            let (vma, offset, len, kind) = match &self.exec[t].op {
                Op::Stream {
                    vma,
                    offset,
                    len,
                    pos,
                    ..
                } => (
                    *vma,
                    *offset,
                    *len,
                    WriterKind::Stream {
                        at: offset + (*pos as u64).min(len.saturating_sub(1)),
                    },
                ),
                Op::Random {
                    vma, offset, len, ..
                } => (
                    *vma,
                    *offset,
                    *len,
                    WriterKind::Random {
                        write_fraction: 0.0,
                    },
                ),
                _ => continue,
            };
            let share = self.op_write_share(t);
            if share <= 0.0 || len == 0 {
                continue;
            }
            let kind = match kind {
                WriterKind::Random { .. } => WriterKind::Random {
                    write_fraction: share,
                },
                k => k,
            };
            by.entry((self.k.tasks[t].mm, vma))
                .or_default()
                .push(Writer {
                    id: t.index(),
                    cpu,
                    offset,
                    len,
                    kind,
                });
        }
        self.shared = by
            .into_iter()
            .map(|(k, v)| (k, RegionWriters::new(v)))
            .collect();
    }

    /// The latency task `t` on `cpu` sees for `op` when its memory
    /// accesses average `mem_ns`: lines other cores hold Modified come by
    /// a cache-to-cache transfer instead (physics/sharing.rs).
    pub(crate) fn shared_line_latency(&self, t: TaskId, cpu: CpuId, op: &Op, mem_ns: f64) -> f64 {
        if self.shared.is_empty() {
            return mem_ns;
        }
        let (vma, offset, len, kind) = match op {
            Op::Stream {
                vma,
                offset,
                len,
                pos,
                ..
            } => (
                *vma,
                *offset,
                *len,
                AccessKind::Stream {
                    at: offset + (*pos as u64).min(len.saturating_sub(1)),
                },
            ),
            Op::Random {
                vma, offset, len, ..
            } => (*vma, *offset, *len, AccessKind::Random),
            _ => return mem_ns,
        };
        let Some(r) = self.shared.get(&(self.k.tasks[t].mm, vma)) else {
            return mem_ns;
        };
        let m = &self.k.m;
        // A core's streaming misses in flight span core_gbps x latency
        // bytes (Little's law, as op_demand's stream cap).
        let window = m.bandwidth.core_gbps * m.latency_ns[0][0];
        let p = Sharing {
            line: LineModel::from_knobs(&self.k.knobs),
            cache_bytes: WRITER_CACHE_BYTES,
            window_bytes: window,
        };
        let a = Access {
            id: t.index(),
            cpu,
            offset,
            len,
            kind,
        };
        r.cost(m, &p, &a).latency_ns(mem_ns)
    }
}
