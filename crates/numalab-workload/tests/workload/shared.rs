//! `[[shared]]` regions: memory several processes map. Each process that
//! lists one gets it as a region of the same size, page size and policy,
//! marked shared; names are checked (unknown, mapped twice, clashing with
//! a region of the process, mapped by nobody) and sizes scale once for all.

use crate::common::small;
use numalab_workload::spec::{parse, resolve, WorkloadError};
use numalab_workload::{PageSize, Phase, PolicyMode};

const ORIGIN: &str = "s.toml";

/// Two processes `w.0`, `w.1` mapping the shared region `buf`; each has
/// its own region `own` too, and one thread writing slice `p` of 2 of
/// `buf` and then all of `own`.
fn two_procs(shared_extra: &str, process_extra: &str) -> String {
    format!(
        r#"
[[shared]]
name = "buf"
size = "64MiB"
{shared_extra}

[[process]]
name = "w"
count = 2
shared = ["buf"]
{process_extra}

[[process.region]]
name = "own"
size = "16MiB"

[[process.thread]]
name = "t"
phases = [ {{ stream = "buf", slice = ["p", 2] }}, {{ stream = "own" }} ]
"#
    )
}

fn field_err(text: &str) -> (String, String) {
    let e = parse(text, ORIGIN)
        .and_then(|s| resolve(&s, &small(), 0, 1.0))
        .expect_err("must fail");
    match e {
        WorkloadError::Field { field, message, .. } => (field, message),
        other => panic!("expected a field error, got {other}"),
    }
}

#[test]
fn every_mapping_process_gets_the_same_region_marked_shared() {
    let text = two_procs(
        r#"policy = { mode = "bind", nodes = "all", numa_balancing = true }"#,
        "",
    );
    let w = resolve(&parse(&text, ORIGIN).unwrap(), &small(), 0, 1.0).unwrap();
    assert_eq!(w.processes.len(), 2);
    for (p, proc_) in w.processes.iter().enumerate() {
        // Own regions first, then the shared ones.
        assert_eq!(proc_.regions[0].name, "own");
        assert!(!proc_.regions[0].shared);
        let b = &proc_.regions[1];
        assert_eq!(b.name, "buf");
        assert!(b.shared);
        assert_eq!(b.bytes, 64 << 20);
        assert_eq!(b.page_size, PageSize::Base4K);
        let pol = b.policy.as_ref().expect("shared policy");
        assert_eq!(pol.mode, PolicyMode::Bind);
        assert_eq!(pol.nodes.len(), 2);
        assert!(pol.numa_balancing);
        // The phase names the shared region by its index in this process
        // and covers this instance's slice.
        match proc_.threads[0].phases[0] {
            Phase::Stream {
                region,
                offset,
                len,
                ..
            } => {
                assert_eq!(region, 1);
                assert_eq!((offset, len), (p as u64 * (32 << 20), 32 << 20));
            }
            ref other => panic!("{other:?}"),
        }
    }
    assert_eq!(w.processes[0].regions[1], w.processes[1].regions[1]);
}

#[test]
fn a_shared_region_scales_once_for_every_process() {
    // Process a cuts `buf` into 4 slices, process b into 4096: at a tiny
    // scale both map the size b's slices need.
    let text = r#"
[[shared]]
name = "buf"
size = "64MiB"
[[process]]
name = "a"
shared = ["buf"]
[[process.thread]]
name = "t"
phases = [ { stream = "buf", slice = [0, 4] } ]
[[process]]
name = "b"
shared = ["buf"]
[[process.thread]]
name = "t"
phases = [ { stream = "buf", slice = [1, 4096] } ]
"#;
    let w = resolve(&parse(text, ORIGIN).unwrap(), &small(), 0, 0.0001).unwrap();
    let (a, b) = (&w.processes[0].regions[0], &w.processes[1].regions[0]);
    assert_eq!(a.bytes, b.bytes);
    assert_eq!(a.bytes, 4096 * 4096);
}

#[test]
fn names_are_checked() {
    // Unknown.
    let (f, m) =
        field_err(&two_procs("", "").replace(r#"shared = ["buf"]"#, r#"shared = ["bfu"]"#));
    assert_eq!(f, "process[0].shared[0]");
    assert!(
        m.contains("no [[shared]] region named 'bfu' (declared: buf)"),
        "{m}"
    );
    // Mapped twice.
    let (f, m) =
        field_err(&two_procs("", "").replace(r#"shared = ["buf"]"#, r#"shared = ["buf", "buf"]"#));
    assert_eq!(f, "process[0].shared[1]");
    assert!(m.contains("mapped twice"), "{m}");
    // Ambiguous: the process has a region of the same name.
    let (f, m) = field_err(&two_procs("", "").replace("name = \"own\"", "name = \"buf\""));
    assert_eq!(f, "process[0].shared[0]");
    assert!(m.contains("could not tell them apart"), "{m}");
    // Declared twice.
    let twice = format!(
        "[[shared]]\nname = \"buf\"\nsize = 4096\n{}",
        two_procs("", "")
    );
    let (f, m) = field_err(&twice);
    assert_eq!(f, "shared[1].name");
    assert!(m.contains("used twice"), "{m}");
    // Mapped by nobody.
    let (f, m) = field_err(
        &two_procs("", "")
            .replace(r#"shared = ["buf"]"#, "")
            .replace(r#"{ stream = "buf", slice = ["p", 2] }, "#, ""),
    );
    assert_eq!(f, "shared[0].name");
    assert!(m.contains("mapped by no process"), "{m}");
    // A process that does not map it cannot name it in a phase.
    let (f, m) = field_err(
        &(two_procs("", "").replace(r#"shared = ["buf"]"#, "")
            + "[[process]]\nname = \"x\"\nshared = [\"buf\"]\n"),
    );
    assert_eq!(f, "process[0].thread[0].phases[0].stream");
    assert!(m.contains("buf"), "{m}");
}

#[test]
fn shared_sizes_see_no_process_variables() {
    let (f, m) =
        field_err(&two_procs("", "").replace("size = \"64MiB\"", "size = \"64MiB * (p + 1)\""));
    assert_eq!(f, "shared[0].size");
    assert!(m.contains("p"), "{m}");
    let (f, _) = field_err(&two_procs("", "").replace("size = \"64MiB\"", "size = 0"));
    assert_eq!(f, "shared[0].size");
}
