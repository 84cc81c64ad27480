//! `vma_size`: a process region that stands for many equal VMAs (thread
//! stacks split by guard pages) carries the size of each to the model;
//! no `vma_size` is one VMA, and a `[[shared]]` region or an empty VMA is
//! refused by name.

use crate::common::small;
use numalab_workload::spec::{parse, resolve, WorkloadError};

const ORIGIN: &str = "v.toml";

/// One process with a region `stacks` of 8 MiB (`extra` added to it) and
/// a thread that writes it.
fn spec(extra: &str) -> String {
    format!(
        r#"
[[process]]
name = "p"

[[process.region]]
name = "stacks"
size = "8MiB"
{extra}

[[process.thread]]
name = "t"
phases = [ {{ stream = "stacks" }} ]
"#
    )
}

fn vma_bytes(extra: &str) -> Option<u64> {
    let w = resolve(&parse(&spec(extra), ORIGIN).unwrap(), &small(), 0, 1.0).unwrap();
    w.processes[0].regions[0].vma_bytes
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
fn a_region_carries_the_size_of_each_vma_in_whole_pages() {
    assert_eq!(vma_bytes(""), None);
    assert_eq!(vma_bytes(r#"vma_size = "1MiB""#), Some(1 << 20));
    assert_eq!(vma_bytes(r#"vma_size = "5000""#), Some(8192));
    // Not more than the region itself.
    assert_eq!(vma_bytes(r#"vma_size = "64MiB""#), Some(8 << 20));
}

#[test]
fn an_empty_vma_or_a_shared_regions_vma_size_is_refused() {
    let (field, msg) = field_err(&spec(r#"vma_size = "0""#));
    assert!(field.ends_with("vma_size"), "{field}");
    assert!(msg.contains("empty"), "{msg}");
    let text = r#"
[[shared]]
name = "buf"
size = "4MiB"
vma_size = "1MiB"

[[process]]
name = "p"
shared = ["buf"]

[[process.thread]]
name = "t"
phases = [ { stream = "buf" } ]
"#;
    let (field, msg) = field_err(text);
    assert_eq!(field, "shared[0].vma_size");
    assert!(msg.contains("one memory object"), "{msg}");
}
