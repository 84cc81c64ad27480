//! Property tests: no input makes parse or resolve panic, resolution is
//! deterministic, and whatever resolves is well-formed.

use crate::common::{big, machine, small};
use numalab_topology::Machine;
use numalab_workload::expr::{self, Env, Kind};
use numalab_workload::spec::{parse, resolve};
use numalab_workload::{Phase, Workload};
use proptest::prelude::*;

/// Every range inside its region, every set and node on the machine, every
/// `start_after` pointing at an earlier thread.
fn check_well_formed(w: &Workload, m: &Machine) {
    fn phases(ph: &[Phase], regions: &[u64], m: &Machine) {
        for p in ph {
            if let Some((region, offset, len)) = p.range() {
                assert!(len > 0 && offset + len <= regions[region]);
            }
            match p {
                Phase::SetAffinity(Some(s)) => {
                    assert!(!s.is_empty() && s.last().unwrap() < m.nr_cpus())
                }
                Phase::SetMempolicy(Some(pol)) => {
                    assert!(pol.nodes.iter().all(|&n| n < m.nr_nodes()))
                }
                Phase::Repeat { body, .. } => phases(body, regions, m),
                _ => {}
            }
        }
    }
    for p in &w.processes {
        let sizes: Vec<u64> = p.regions.iter().map(|r| r.bytes).collect();
        assert!(sizes
            .iter()
            .all(|&b| b > 0 && b % 4096 == 0 && b <= m.total_mem_bytes()));
        for (k, t) in p.threads.iter().enumerate() {
            assert!(t.start_after.iter().all(|&j| j < k));
            if let Some(a) = &t.affinity {
                assert!(!a.is_empty() && a.last().unwrap() < m.nr_cpus());
            }
            phases(&t.phases, &sizes, m);
        }
    }
}

fn try_all(text: &str, seed: u64, scale: f64) {
    if let Ok(spec) = parse(text, "fuzz") {
        for m in [small(), machine(3, 3, 1, 1, true)] {
            if let Ok(w) = resolve(&spec, &m, seed, scale) {
                check_well_formed(&w, &m);
                assert_eq!(resolve(&spec, &m, seed, scale).unwrap(), w);
            }
        }
    }
}

/// Mostly valid values, with some that must fail, for each kind of field.
const COUNTS: &[&str] = &[
    "0",
    "1",
    "2",
    "ncpus",
    "ncpus / 2",
    "nnodes",
    "cpus_per_node",
    "ncores",
    "seed % 3",
    "np",
];
const SIZES: &[&str] = &[
    "4KiB",
    "1MiB",
    "3MiB + 5",
    "64MiB * (p + 1)",
    "1GiB",
    "2MiB * nnodes",
];
const TIMES: &[&str] = &["0", "10us", "1ms", "i * 1us", "k * 5ns"];
const INDEXES: &[&str] = &["i", "n", "0", "1", "i % nnodes", "k", "n - 1 - i", "nnodes"];
const BAD: &[&str] = &[
    "-1",
    "1 / 0",
    "foo",
    "((",
    "9223372036854775807",
    "3GiB",
    "1s",
    "i",
    "k",
    "n * 1000000",
    "2 -",
];
const SETS: &[&str] = &[
    "all",
    "0",
    "0-3",
    "node:0",
    "node:i % nnodes",
    "nodes:0..nnodes",
    "cpu:i % ncpus",
    "cpus:0..ncpus",
    "node:k % nnodes",
    "0,node:1",
    "nodes:p..p + 1",
];
const BAD_SETS: &[&str] = &[
    "0-99",
    "nodes:1..1",
    "3-1",
    "node:",
    "cpu:-1",
    "node:k",
    "cpu:ncpus",
];
const NODES: &[&str] = &[
    "all",
    "0",
    "0-1",
    "i % nnodes",
    "0..nnodes",
    "k % nnodes",
    "(3-1) % nnodes",
];
const BAD_NODES: &[&str] = &["1..1", "k", "5", "x..", "0-9"];

fn pick(list: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    prop::sample::select(list)
}

fn mostly(
    good: &'static [&'static str],
    bad: &'static [&'static str],
) -> impl Strategy<Value = &'static str> {
    prop_oneof![12 => pick(good), 1 => pick(bad)]
}

fn policy() -> impl Strategy<Value = String> {
    (
        mostly(
            &["bind", "preferred", "preferred-many", "interleave"],
            &["weird", "default", "local"],
        ),
        mostly(NODES, BAD_NODES),
        prop::bool::weighted(0.9),
        any::<bool>(),
    )
        .prop_map(|(mode, nodes, with_nodes, nb)| {
            if with_nodes {
                format!("{{ mode = \"{mode}\", nodes = \"{nodes}\", numa_balancing = {nb} }}")
            } else {
                format!("{{ mode = \"{mode}\" }}")
            }
        })
}

fn leaf_phase() -> impl Strategy<Value = String> {
    prop_oneof![
        (mostly(&["buf", "other"], &["nope"]), mostly(INDEXES, BAD), mostly(COUNTS, BAD), mostly(COUNTS, BAD), any::<bool>())
            .prop_map(|(r, a, b, passes, w)| format!(
                "{{ stream = \"{r}\", slice = [\"{a}\", \"{b}\"], passes = \"{passes}\", write = {w} }}"
            )),
        (pick(&["buf", "other"]), mostly(&["0", "4KiB", "1MiB", "i * 4KiB"], BAD), mostly(&["4KiB", "8KiB", "1MiB"], BAD)).prop_map(|(r, o, l)| format!(
            "{{ random = \"{r}\", accesses = 3, offset = \"{o}\", len = \"{l}\", distribution = {{ zipf = 1.1 }} }}"
        )),
        mostly(TIMES, BAD).prop_map(|e| format!("{{ compute = \"{e}\" }}")),
        mostly(TIMES, BAD).prop_map(|e| format!("{{ sleep = \"{e}\" }}")),
        mostly(SETS, BAD_SETS).prop_map(|s| format!("{{ set_affinity = \"{s}\" }}")),
        policy().prop_map(|p| format!("{{ set_mempolicy = {p} }}")),
        Just("{ stream = \"buf\" }".to_string()),
    ]
}

fn phase() -> impl Strategy<Value = String> {
    leaf_phase().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (
                mostly(COUNTS, BAD),
                prop::collection::vec(inner.clone(), 0..3),
                any::<bool>()
            )
                .prop_map(|(t, b, r)| format!(
                    "{{ repeat = \"{t}\", request = {r}, body = [{}] }}",
                    b.join(", ")
                )),
            (
                mostly(&["0", "1"], BAD),
                mostly(COUNTS, BAD),
                prop::collection::vec(inner, 0..3)
            )
                .prop_map(|(a, e, b)| format!(
                    "{{ for = \"k\", range = [\"{a}\", \"{e}\"], body = [{}] }}",
                    b.join(", ")
                )),
        ]
    })
}

fn spec_text() -> impl Strategy<Value = String> {
    (
        mostly(COUNTS, BAD),
        mostly(SIZES, BAD),
        mostly(COUNTS, BAD),
        any::<bool>(),
        prop::option::of(mostly(SETS, BAD_SETS)),
        prop::option::of(policy()),
        prop::collection::vec(phase(), 0..4),
        prop::option::of(mostly(&["1s", "10ms"], BAD)),
        prop::option::of((mostly(SETS, BAD_SETS), mostly(NODES, BAD_NODES))),
    )
        .prop_map(|(pcount, size, tcount, thp, aff, pol, phases, duration, cg)| {
            let mut s = String::new();
            if let Some(d) = duration {
                s += &format!("duration = \"{d}\"\n");
            }
            if let Some((cpus, mems)) = cg {
                s += &format!("[[cgroup]]\npath = \"/g/h\"\ncpuset_cpus = \"{cpus}\"\ncpuset_mems = \"{mems}\"\n");
            }
            s += &format!("[[process]]\nname = \"a\"\ncount = \"{pcount}\"\n");
            s += &format!("[[process.region]]\nname = \"buf\"\nsize = \"{size}\"\nthp = {thp}\n");
            s += "[[process.region]]\nname = \"other\"\nsize = \"2MiB\"\n";
            s += "[[process.thread]]\nname = \"first\"\nphases = [{ stream = \"buf\" }]\n";
            s += &format!("[[process.thread]]\nname = \"t\"\ncount = \"{tcount}\"\nstart_after = \"first\"\n");
            if let Some(a) = aff {
                s += &format!("affinity = \"{a}\"\n");
            }
            if let Some(p) = pol {
                s += &format!("policy = {p}\n");
            }
            s += &format!("phases = [{}]\n", phases.join(", "));
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn structured_specs_never_panic(text in spec_text(), seed in any::<u64>(), scale in 1e-6f64..=1.0) {
        try_all(&text, seed, scale);
    }

    #[test]
    fn toml_ish_noise_never_panics(text in "[\\[\\]{}=,\"a-z0-9_. \n:/%+*()-]{0,200}", seed in any::<u64>()) {
        try_all(&text, seed, 1.0);
    }

    #[test]
    fn mutated_presets_never_panic(which in any::<prop::sample::Index>(), cut in 0usize..4000, junk in "[\\[\\]{}=,\"a-z0-9_. \n]{0,12}") {
        let list = numalab_workload::presets::list();
        let (name, _) = list[which.index(list.len())];
        let text = numalab_workload::presets::text(name).unwrap();
        let mut at = cut.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let mutated = format!("{}{}{}", &text[..at], junk, &text[at..]);
        try_all(&mutated, 1, 0.5);
    }

    #[test]
    fn expressions_never_panic(src in "[0-9a-z_ +*/%()-]{0,40}", v in any::<i64>()) {
        let mut env = Env::new();
        env.push("ncpus", v);
        env.push("i", 3);
        if let Ok(e) = expr::parse(&src) {
            let _ = e.eval(&env, Kind::Count);
            let _ = e.eval(&env, Kind::Time);
        }
        let m = big();
        let _ = expr::eval_cpuset(&src, &env, &m);
        let _ = expr::eval_nodes(&src, &env, 4);
    }
}
