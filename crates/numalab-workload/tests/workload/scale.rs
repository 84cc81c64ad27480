//! `--scale` shrinks sizes and counts but keeps the shape.

use crate::common::{big, small, GIB};
use numalab_workload::presets::{list, load};
use numalab_workload::spec::{parse, resolve};
use numalab_workload::{Phase, Workload};

/// (region, offset, len) of every stream/random, flattened in order.
fn ranges(phases: &[Phase], out: &mut Vec<(usize, u64, u64)>) {
    Phase::walk(phases, &mut |p| out.extend(p.range()));
}

/// The phase tree with ranges and counts blanked out.
fn skeleton(phases: &[Phase]) -> Vec<String> {
    phases
        .iter()
        .map(|p| match p {
            Phase::Stream { region, write, .. } => format!("stream {region} {write}"),
            Phase::Random {
                region,
                distribution,
                write_fraction,
                mlp,
                ..
            } => {
                format!("random {region} {distribution:?} {write_fraction} {mlp}")
            }
            Phase::Repeat { body, request, .. } => format!("repeat {request} {:?}", skeleton(body)),
            other => format!("{other:?}"),
        })
        .collect()
}

fn counts(phases: &[Phase], out: &mut Vec<u64>) {
    for p in phases {
        match p {
            Phase::Stream { passes, .. } => out.push(*passes),
            Phase::Random { accesses, .. } => out.push(*accesses),
            Phase::Repeat { times, body, .. } => {
                out.push(*times);
                counts(body, out);
            }
            _ => {}
        }
    }
}

fn assert_same_shape(a: &Workload, b: &Workload, f: f64) {
    assert_eq!(a.cgroups, b.cgroups);
    assert_eq!(a.score, b.score);
    match (a.duration_ns, b.duration_ns) {
        (Some(x), Some(y)) => assert!(
            ((x as f64 * f).max(1.0) - y as f64).abs() <= 1.0,
            "{x} x {f} -> {y}"
        ),
        (x, y) => assert_eq!(x, y),
    }
    assert_eq!(a.processes.len(), b.processes.len());
    for (pa, pb) in a.processes.iter().zip(&b.processes) {
        assert_eq!(pa.name, pb.name);
        assert_eq!(pa.cgroup, pb.cgroup);
        for (ra, rb) in pa.regions.iter().zip(&pb.regions) {
            assert_eq!(
                (&ra.name, ra.page_size, &ra.policy),
                (&rb.name, rb.page_size, &rb.policy)
            );
            assert!(rb.bytes <= ra.bytes && rb.bytes % 4096 == 0 && rb.bytes > 0);
            assert!(rb.bytes >= (ra.bytes as f64 * f) as u64 / 4096 * 4096);
        }
        assert_eq!(pa.threads.len(), pb.threads.len());
        let mut all_a = Vec::new();
        let mut all_b = Vec::new();
        for (ta, tb) in pa.threads.iter().zip(&pb.threads) {
            assert_eq!(
                (&ta.name, &ta.affinity, &ta.policy),
                (&tb.name, &tb.affinity, &tb.policy)
            );
            assert_eq!(ta.start_after, tb.start_after);
            assert_eq!(skeleton(&ta.phases), skeleton(&tb.phases));
            let (mut ca, mut cb) = (Vec::new(), Vec::new());
            counts(&ta.phases, &mut ca);
            counts(&tb.phases, &mut cb);
            for (x, y) in ca.iter().zip(&cb) {
                let want = if *x == 0 {
                    0
                } else {
                    ((*x as f64 * f - 1e-9).ceil() as u64).max(1)
                };
                assert_eq!(*y, want, "{} count {x} at scale {f}", ta.name);
            }
            ranges(&ta.phases, &mut all_a);
            ranges(&tb.phases, &mut all_b);
        }
        // Ranges keep their place: whole stays whole, and offsets keep their
        // order (never reversed, equal stays equal).
        for (x, y) in all_a.iter().zip(&all_b) {
            assert_eq!(x.0, y.0);
            let (whole_a, whole_b) = (pa.regions[x.0].bytes, pb.regions[y.0].bytes);
            assert_eq!(x.1 == 0 && x.2 == whole_a, y.1 == 0 && y.2 == whole_b);
            assert!(y.2 > 0 && y.1 + y.2 <= whole_b);
        }
        for i in 0..all_a.len() {
            for j in 0..all_a.len() {
                let (a1, b1) = (all_a[i], all_b[i]);
                let (a2, b2) = (all_a[j], all_b[j]);
                if a1.0 != a2.0 {
                    continue;
                }
                if a1.1 == a2.1 {
                    assert_eq!(b1.1, b2.1);
                }
                if a1.1 < a2.1 {
                    assert!(b1.1 <= b2.1);
                }
            }
        }
    }
}

#[test]
fn every_preset_keeps_its_shape_when_scaled() {
    for (name, _) in list() {
        let spec = load(name).unwrap();
        for m in [small(), big()] {
            let full = resolve(&spec, &m, 3, 1.0).unwrap();
            for f in [0.5, 0.1, 0.013, 1e-6] {
                let s = resolve(&spec, &m, 3, f).unwrap_or_else(|e| panic!("{name} {f}: {e}"));
                assert_same_shape(&full, &s, f);
            }
        }
    }
}

#[test]
fn scaled_numbers_for_numa01_and_numa02() {
    let w = resolve(&load("numa01-threadlocal").unwrap(), &big(), 0, 0.1).unwrap();
    let p = &w.processes[0];
    let pages = (3 * GIB / 4096) as f64 * 0.1;
    assert_eq!(p.regions[0].bytes, pages.floor() as u64 * 4096);
    let Phase::Stream { passes, .. } = p.threads[0].phases[3] else {
        panic!()
    };
    assert_eq!(passes, 100);
    let w = resolve(&load("numa01").unwrap(), &big(), 0, 0.1).unwrap();
    let Phase::Stream { passes, .. } = w.processes[0].threads[0].phases[3] else {
        panic!()
    };
    assert_eq!(passes, 5, "50 x 0.1 is 5, not 6");

    // numa02 at 1e-3: 262 pages would leave some of the 320 slices empty, so
    // the region keeps one page per slice; 800 passes become 1.
    let w = resolve(&load("numa02").unwrap(), &big(), 0, 1e-3).unwrap();
    let p = &w.processes[0];
    assert_eq!(p.regions[0].bytes, 320 * 4096);
    for (i, t) in p.threads[1..].iter().enumerate() {
        assert_eq!(
            t.phases[0],
            Phase::Stream {
                region: 0,
                offset: i as u64 * 4096,
                len: 4096,
                passes: 1,
                write: true
            }
        );
    }

    let w = resolve(&load("oltp").unwrap(), &big(), 0, 0.01).unwrap();
    assert_eq!(w.duration_ns, Some(30_000_000));
    let Phase::Repeat { times, body, .. } = &w.processes[0].threads[1].phases[1] else {
        panic!()
    };
    assert_eq!(*times, 10_000);
    assert!(
        body.contains(&Phase::Compute { ns: 40_000 }),
        "compute is not scaled"
    );
    assert!(
        body.contains(&Phase::Sleep { ns: 60_000 }),
        "sleep is not scaled"
    );
}

#[test]
fn byte_ranges_move_with_their_region() {
    let s = parse(
        "[[process]]\nname = \"a\"\n[[process.region]]\nname = \"r\"\nsize = \"1GiB\"\n[[process.thread]]\nname = \"t\"\n\
         phases = [{ stream = \"r\", offset = \"256MiB\", len = \"256MiB\" }, { stream = \"r\", offset = \"1GiB - 4KiB\", len = \"4KiB\" }]\n",
        "x",
    )
    .unwrap();
    let w = resolve(&s, &small(), 0, 0.5).unwrap();
    let ph = &w.processes[0].threads[0].phases;
    assert_eq!(w.processes[0].regions[0].bytes, GIB / 2);
    assert_eq!(
        ph[0],
        Phase::Stream {
            region: 0,
            offset: 128 << 20,
            len: 128 << 20,
            passes: 1,
            write: true
        }
    );
    assert_eq!(
        ph[1],
        Phase::Stream {
            region: 0,
            offset: GIB / 2 - 4096,
            len: 4096,
            passes: 1,
            write: true
        }
    );
}
