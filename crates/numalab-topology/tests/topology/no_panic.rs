//! Property tests: no input makes the parser or the importers panic, and
//! every spec that parses round-trips through `to_toml`.

use numalab_topology::import::from_numactl;
use numalab_topology::presets;
use numalab_topology::spec::{parse_machine, to_toml};
use proptest::prelude::*;

/// Parses; when the spec is valid, checks the `to_toml` round trip.
fn check(text: &str) {
    if let Ok(m) = parse_machine(text, "prop") {
        let back = to_toml(&m);
        let again =
            parse_machine(&back, "prop").unwrap_or_else(|e| panic!("{e}\n{text}\n---\n{back}"));
        assert_eq!(again, m, "{text}\n---\n{back}");
    }
}

/// A number in TOML, valid most of the time.
fn num() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just("nan".to_string()),
        1 => Just("inf".to_string()),
        1 => Just("-1".to_string()),
        1 => Just("0".to_string()),
        1 => Just("1e300".to_string()),
        // The values the first mutation fuzzer found grinding the model.
        1 => Just("1e-300".to_string()),
        1 => Just("0.0000001".to_string()),
        1 => Just("5e-324".to_string()),
        1 => Just("-inf".to_string()),
        1 => Just("\"x\"".to_string()),
        40 => (60u32..200).prop_map(|v| v.to_string()),
        20 => (600u32..2000).prop_map(|v| format!("{}.5", v / 10)),
    ]
}

/// A count, valid most of the time.
fn count() -> impl Strategy<Value = Option<i64>> {
    prop::option::weighted(0.99, prop_oneof![1 => -1i64..1, 40 => 1i64..4])
}

fn line(key: &str, v: Option<String>) -> String {
    v.map_or(String::new(), |v| format!("{key} = {v}\n"))
}

/// Physics sections: usually consistent, sometimes with one value replaced
/// by junk or missing.
fn physics() -> impl Strategy<Value = String> {
    (
        (60u32..100, 0u32..20, 0u32..100),
        prop::collection::vec(1u32..300, 5),
        prop::collection::vec(prop::bool::weighted(0.9), 8),
        prop::option::weighted(0.2, (0usize..8, num())),
        prop::option::weighted(0.3, (1usize..5, prop::collection::vec(9i64..40, 25))),
    )
        .prop_map(|((local, dsame, dremote), bw, present, junk, dist)| {
            let mut v: Vec<String> = vec![
                local.to_string(),
                (local + dsame).to_string(),
                (local + dremote).to_string(),
            ];
            v.extend(bw.iter().map(|x| x.to_string()));
            v[7] = format!("1.{}", bw[4] % 10);
            if let Some((i, j)) = junk {
                v[i] = j;
            }
            let v: Vec<Option<String>> = v
                .into_iter()
                .zip(present)
                .map(|(x, p)| p.then_some(x))
                .collect();
            let mut s = String::new();
            if let Some((n, d)) = dist {
                let rows: Vec<String> = (0..n)
                    .map(|a| {
                        let r: Vec<String> = (0..n)
                            .map(|b| {
                                if a == b {
                                    "10".to_string()
                                } else {
                                    d[(a * 5 + b) % 25].to_string()
                                }
                            })
                            .collect();
                        format!("[{}]", r.join(","))
                    })
                    .collect();
                s.push_str(&format!("[distance]\nmatrix = [{}]\n", rows.join(",")));
            }
            s.push_str("[latency]\n");
            s.push_str(&line("local_ns", v[0].clone()));
            s.push_str(&line("same_package_ns", v[1].clone()));
            s.push_str(&line("remote_ns", v[2].clone()));
            s.push_str("[bandwidth]\n");
            s.push_str(&line("node_gbps", v[3].clone()));
            s.push_str(&line("link_gbps", v[4].clone()));
            s.push_str(&line("same_package_link_gbps", v[5].clone()));
            s.push_str(&line("core_gbps", v[6].clone()));
            s.push_str(&line("smt_throughput", v[7].clone()));
            s
        })
}

fn uniform_spec() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(count(), 4),
        prop::option::weighted(0.3, count()),
        prop::option::of(
            prop_oneof![4 => Just("smt-last"), 4 => Just("smt-adjacent"), 1 => Just("other")],
        ),
        prop::option::weighted(0.97, num()),
        physics(),
    )
        .prop_map(|(mut c, llcs, numbering, mem, phys)| {
            c.push(llcs.flatten());
            let mut s = String::from("[topology]\n");
            for (k, v) in [
                "packages",
                "nodes_per_package",
                "cores_per_node",
                "threads_per_core",
                "llcs_per_node",
            ]
            .iter()
            .zip(c)
            {
                s.push_str(&line(k, v.map(|x| x.to_string())));
            }
            if let Some(n) = numbering {
                s.push_str(&format!("cpu_numbering = \"{n}\"\n"));
            }
            s.push_str("[memory]\n");
            s.push_str(&line("per_node_gib", mem));
            s + &phys
        })
}

fn cpulist() -> impl Strategy<Value = String> {
    prop::collection::vec((0usize..10, 0usize..3), 0..3).prop_map(|parts| {
        parts
            .iter()
            .map(|&(a, w)| {
                if w == 0 {
                    a.to_string()
                } else {
                    format!("{a}-{}", a + w)
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// Explicit nodes: CPUs 0..t dealt to nodes at random (so usually valid),
/// sometimes with one node's list replaced by a random one.
fn explicit_spec() -> impl Strategy<Value = String> {
    (
        1usize..4,
        prop::collection::vec(0usize..4, 1..10),
        prop::option::weighted(0.1, cpulist()),
        prop::collection::vec(
            (
                prop::option::weighted(0.95, num()),
                prop::option::weighted(0.15, -1i64..3),
                prop::option::weighted(0.15, 0i64..3),
            ),
            4,
        ),
        prop::collection::vec(cpulist(), 0..2),
        prop::collection::vec(cpulist(), 0..2),
        physics(),
    )
        .prop_map(|(n, deal, replace, attrs, smt, llc, phys)| {
            let mut lists: Vec<Vec<String>> = vec![Vec::new(); n];
            for (cpu, &to) in deal.iter().enumerate() {
                lists[to % n].push(cpu.to_string());
            }
            let mut s = String::new();
            for (i, (cpus, (mem, pkg, tpc))) in lists.iter().zip(attrs).enumerate() {
                let cpus = match (&replace, i) {
                    (Some(r), 0) => r.clone(),
                    _ => cpus.join(","),
                };
                s.push_str(&format!("[[nodes]]\ncpus = \"{cpus}\"\n"));
                s.push_str(&line("mem_gib", mem));
                s.push_str(&line("package", pkg.map(|p| p.to_string())));
                s.push_str(&line("threads_per_core", tpc.map(|p| p.to_string())));
            }
            for g in smt {
                s.push_str(&format!("[[smt]]\nsiblings = \"{g}\"\n"));
            }
            for g in llc {
                s.push_str(&format!("[[llc]]\ncpus = \"{g}\"\n"));
            }
            s + &phys
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_strings_do_not_panic(s in ".{0,200}") {
        check(&s);
        let _ = from_numactl(&s);
    }

    #[test]
    fn mutated_presets_do_not_panic(which in any::<prop::sample::Index>(), at in 0usize..4000, len in 0usize..20, junk in ".{0,10}") {
        let list = presets::list();
        let (name, _) = list[which.index(list.len())];
        let text = presets::preset_toml(name).unwrap_or("");
        let mut cut = at.min(text.len());
        while !text.is_char_boundary(cut) { cut -= 1; }
        let mut end = (cut + len).min(text.len());
        while !text.is_char_boundary(end) { end -= 1; }
        let mutated = format!("{}{}{}", &text[..cut], junk, &text[end..]);
        check(&mutated);
    }

    #[test]
    fn random_uniform_specs_do_not_panic(s in uniform_spec()) {
        check(&s);
    }

    #[test]
    fn random_explicit_specs_do_not_panic(s in explicit_spec()) {
        check(&s);
    }

    #[test]
    fn random_numactl_output_does_not_panic(
        nodes in prop::collection::vec((0usize..5, prop::collection::vec(0usize..12, 0..5), 0u64..3000), 0..4),
        dist in prop::option::of(prop::collection::vec(prop::collection::vec(-1i64..40, 0..5), 0..5)),
    ) {
        let mut s = format!("available: {} nodes (0-{})\n", nodes.len(), nodes.len().saturating_sub(1));
        for (k, cpus, mb) in &nodes {
            let c: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
            s.push_str(&format!("node {k} cpus: {}\nnode {k} size: {mb} MB\nnode {k} free: 0 MB\n", c.join(" ")));
        }
        if let Some(d) = dist {
            s.push_str("node distances:\nnode");
            for k in 0..d.len() { s.push_str(&format!(" {k}")); }
            s.push('\n');
            for (k, row) in d.iter().enumerate() {
                let r: Vec<String> = row.iter().map(|x| x.to_string()).collect();
                s.push_str(&format!("  {k}: {}\n", r.join(" ")));
            }
        }
        if let Ok(spec) = from_numactl(&s) {
            prop_assert!(parse_machine(&spec, "numactl").is_ok(), "{}", spec);
        }
    }
}
