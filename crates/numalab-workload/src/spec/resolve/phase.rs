//! Resolve, phases: a thread's checked phases into the engine's [`Phase`]s.
//!
//! Pass 1 ([`Resolver::phases`]) evaluates every count and set, unrolls
//! `for` loops and scales repeat counts, passes and accesses; a stream or
//! random phase's byte range stays symbolic ([`PendingRange`]) because the
//! region's scaled size is known only once every thread has been seen.
//! Pass 2 ([`place`]) puts each pending range into the scaled region.
//! Left out: region sizes and their scaling ([`super::process`]).

use super::scale::{scale_up, slice_range};
use super::{RegionSize, Resolver};
use crate::expr::{Env, Kind};
use crate::model::Phase;
use crate::spec::checked::{PhaseSpec, RangeSpec};
use crate::spec::error::Result;
use crate::spec::limits::PAGE;

/// Which bytes of a region a stream or random phase uses, before region
/// sizes are scaled.
pub(super) enum PendingRange {
    /// The whole region.
    Whole,
    /// Slice `index` of `of`.
    Slice { index: u64, of: u64 },
    /// A byte range of the region as written.
    Bytes { offset: u64, len: u64 },
}

impl Resolver<'_> {
    /// Pass 1 of a stream or random phase's range: evaluated against the
    /// region as written, checked, and noted in the region's `max_of`.
    fn range(
        &self,
        range: &RangeSpec,
        env: &Env,
        region: &mut RegionSize,
        rname: &str,
        field: &str,
    ) -> Result<PendingRange> {
        match range {
            RangeSpec::Whole => Ok(PendingRange::Whole),
            RangeSpec::Slice { index, of } => {
                let f0 = format!("{field}.slice[0]");
                let f1 = format!("{field}.slice[1]");
                let index = self.count(index, env, Kind::Count, &f0)?;
                let of = self.count(of, env, Kind::Count, &f1)?;
                if of == 0 {
                    return Err(self.err(f1, "slice count `of` must be at least 1"));
                }
                if index >= of {
                    return Err(self.err(f0, format!("slice index {index} >= of {of}")));
                }
                let (_, len) = slice_range(region.bytes, region.thp, index, of);
                if len == 0 {
                    return Err(self.err(
                        format!("{field}.slice"),
                        format!(
                            "slice {index} of {of} of region '{rname}' is empty: the region has only {} pages",
                            region.bytes / PAGE
                        ),
                    ));
                }
                region.max_of = region.max_of.max(of);
                Ok(PendingRange::Slice { index, of })
            }
            RangeSpec::Bytes { offset, len } => {
                let fo = format!("{field}.offset");
                let fl = format!("{field}.len");
                let offset = match offset {
                    Some(o) => self.count(o, env, Kind::Size, &fo)?,
                    None => 0,
                };
                if offset >= region.bytes {
                    return Err(self.err(
                        fo,
                        format!(
                            "offset {offset} is past the end of region '{rname}' ({} bytes)",
                            region.bytes
                        ),
                    ));
                }
                let len = match len {
                    Some(l) => self.count(l, env, Kind::Size, &fl)?,
                    None => region.bytes - offset,
                };
                if len == 0 {
                    return Err(self.err(fl, "length 0"));
                }
                if len > region.bytes - offset {
                    return Err(self.err(
                        fl,
                        format!(
                            "offset {offset} + len {len} is past the end of region '{rname}' ({} bytes)",
                            region.bytes
                        ),
                    ));
                }
                region.max_of = region.max_of.max(1);
                Ok(PendingRange::Bytes { offset, len })
            }
        }
    }

    /// Pass 1 of a list of phases: every phase resolved, `for` loops
    /// unrolled, repeat counts, passes and accesses scaled. A stream or
    /// random phase gets offset and length 0 and its range is pushed on
    /// `pending`, in the order [`place`] visits the phases.
    pub(super) fn phases(
        &mut self,
        list: &[PhaseSpec],
        field: &str,
        env: &mut Env,
        regions: &mut [(String, RegionSize)],
        pending: &mut Vec<PendingRange>,
    ) -> Result<Vec<Phase>> {
        let mut out = Vec::new();
        for (k, ph) in list.iter().enumerate() {
            let f = format!("{field}[{k}]");
            self.charge(1, &f)?;
            match ph {
                PhaseSpec::Stream {
                    region,
                    passes,
                    write,
                    range,
                } => {
                    let ri = self.region(region, regions, &format!("{f}.stream"))?;
                    let passes = self.count_in(
                        "stream.passes",
                        passes,
                        env,
                        Kind::Count,
                        &format!("{f}.passes"),
                    )?;
                    let (rname, rsize) = &mut regions[ri];
                    let range = self.range(range, env, rsize, rname, &f)?;
                    pending.push(range);
                    out.push(Phase::Stream {
                        region: ri,
                        offset: 0,
                        len: 0,
                        passes: scale_up(passes, self.scale),
                        write: *write,
                    });
                }
                PhaseSpec::Random {
                    region,
                    accesses,
                    distribution,
                    write_fraction,
                    mlp,
                    range,
                } => {
                    let ri = self.region(region, regions, &format!("{f}.random"))?;
                    let accesses = self.count_in(
                        "random.accesses",
                        accesses,
                        env,
                        Kind::Count,
                        &format!("{f}.accesses"),
                    )?;
                    let (rname, rsize) = &mut regions[ri];
                    let range = self.range(range, env, rsize, rname, &f)?;
                    pending.push(range);
                    out.push(Phase::Random {
                        region: ri,
                        offset: 0,
                        len: 0,
                        accesses: scale_up(accesses, self.scale),
                        distribution: distribution.clone(),
                        write_fraction: *write_fraction,
                        mlp: *mlp,
                    });
                }
                PhaseSpec::Compute(t) => {
                    let ns =
                        self.count_in("compute", t, env, Kind::Time, &format!("{f}.compute"))?;
                    out.push(Phase::Compute { ns });
                }
                PhaseSpec::Sleep(t) => {
                    let ns = self.count_in("sleep", t, env, Kind::Time, &format!("{f}.sleep"))?;
                    out.push(Phase::Sleep { ns });
                }
                PhaseSpec::Barrier(name) => {
                    out.push(Phase::Barrier { name: name.clone() });
                }
                PhaseSpec::SetMempolicy(pv) => {
                    let p = self.policy(pv, env, &format!("{f}.set_mempolicy"))?;
                    out.push(Phase::SetMempolicy(p));
                }
                PhaseSpec::SetAffinity(s) => {
                    let c = self.cpuset(s, env, &format!("{f}.set_affinity"))?;
                    out.push(Phase::SetAffinity(c));
                }
                PhaseSpec::SetNumaBalancing(c) => {
                    out.push(Phase::SetNumaBalancing(*c));
                }
                PhaseSpec::CgroupWrite { cgroup, write } => {
                    out.push(Phase::CgroupWrite {
                        cgroup: cgroup.clone(),
                        write: *write,
                    });
                }
                PhaseSpec::Repeat {
                    times,
                    request,
                    body,
                } => {
                    let times =
                        self.count_in("repeat", times, env, Kind::Count, &format!("{f}.repeat"))?;
                    let body = self.phases(body, &format!("{f}.body"), env, regions, pending)?;
                    out.push(Phase::Repeat {
                        times: scale_up(times, self.scale),
                        body,
                        request: *request,
                    });
                }
                PhaseSpec::For {
                    var,
                    start,
                    end,
                    body,
                } => {
                    let a = self.num(start, env, Kind::Count, &format!("{f}.range[0]"))?;
                    let b = self.num(end, env, Kind::Count, &format!("{f}.range[1]"))?;
                    let mut v = a;
                    while v < b {
                        self.charge(1, &f)?;
                        env.push(var, v);
                        self.at.push(format!("{var}={v}"));
                        let r = self.phases(body, &format!("{f}.body"), env, regions, pending);
                        self.at.pop();
                        env.pop();
                        out.extend(r?);
                        v += 1;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Pass 2: gives every stream and random phase of `phases` (depth first,
/// the order pass 1 pushed them) its offset and length from `pending`, in
/// the scaled region. `regions` are the regions as written, `scaled` their
/// scaled sizes.
pub(super) fn place(
    phases: &mut [Phase],
    pending: &mut impl Iterator<Item = PendingRange>,
    regions: &[(String, RegionSize)],
    scaled: &[u64],
) {
    Phase::walk_mut(phases, &mut |p| {
        if let Some((region, offset, len)) = p.range_mut() {
            let range = pending
                .next()
                .expect("pass 1 pushes one pending range per stream or random phase");
            (*offset, *len) = placed(&regions[*region].1, scaled[*region], &range);
        }
    });
}

/// Offset and length of `range` in `region` once it is `now` bytes long.
fn placed(region: &RegionSize, now: u64, range: &PendingRange) -> (u64, u64) {
    let orig = region.bytes;
    match *range {
        PendingRange::Whole => (0, now),
        PendingRange::Slice { index, of } => slice_range(now, region.thp, index, of),
        PendingRange::Bytes { offset, len } => {
            if now == orig {
                return (offset, len);
            }
            let at = |b: u64| {
                ((u128::from(b) * u128::from(now) / u128::from(orig)) as u64) / PAGE * PAGE
            };
            let len2 = (at(offset + len).saturating_sub(at(offset)))
                .max(PAGE)
                .min(now);
            let off2 = at(offset).min(now - len2);
            (off2, len2)
        }
    }
}
