//! Rules over more than one value: pairs of knobs that must be ordered,
//! and values the model refuses because it does not model what they turn
//! on. Declared here once, checked by [`crate::Knobs::validate`] for model
//! runs and by the real runner for the values it is given.
//!
//! Bits of a bitmask knob that exclude each other ([`EXCLUSIVE_BITS`]) are
//! checked before the range, so the error names the rule rather than only
//! the range: `kernel.numa_balancing`'s NUMA_BALANCING_CGROUP (4) of
//! proposal 4 cannot be combined with modes 1 or 2.
//!
//! Left out: rules the kernel itself does not enforce beyond these (the
//! kernel accepts `scan_period_min_ms > scan_period_max_ms` and lets
//! `task_scan_max()` clamp to the minimum; numalab refuses it as a mistake).

use crate::def::{Def, UintKnob};
use crate::knob::{NUMA_BALANCING, SCAN_PERIOD_MAX_MS, SCAN_PERIOD_MIN_MS};

/// Two knobs whose values must satisfy `lo <= hi`.
#[derive(Clone, Copy, Debug)]
pub struct Ordered {
    /// The knob that must not be larger.
    pub lo: UintKnob,
    /// The knob that must not be smaller.
    pub hi: UintKnob,
}

/// Every ordering rule.
pub const ORDERED: &[Ordered] = &[Ordered {
    lo: SCAN_PERIOD_MIN_MS,
    hi: SCAN_PERIOD_MAX_MS,
}];

/// Values of a knob the model refuses: the kernel has them, the model does
/// not model what they turn on. A real run accepts them.
#[derive(Clone, Copy, Debug)]
pub struct NotModeled {
    /// The knob.
    pub knob: UintKnob,
    /// Refused values.
    pub values: &'static [u64],
    /// What those values turn on.
    pub what: &'static str,
}

/// Every value the model refuses.
pub const NOT_MODELED: &[NotModeled] = &[NotModeled {
    knob: NUMA_BALANCING,
    values: &[2, 3],
    what: "memory tiering (NUMA_BALANCING_MEMORY_TIERING)",
}];

/// A bit of a bitmask knob that excludes other bits.
#[derive(Clone, Copy, Debug)]
pub struct ExclusiveBits {
    /// The knob.
    pub knob: UintKnob,
    /// The bit.
    pub bit: u64,
    /// The bits it cannot be combined with.
    pub others: u64,
    /// The rule, as the error states it.
    pub rule: &'static str,
}

/// Every exclusive-bit rule.
pub const EXCLUSIVE_BITS: &[ExclusiveBits] = &[ExclusiveBits {
    knob: NUMA_BALANCING,
    bit: 4,
    others: 1 | 2,
    rule: "NUMA_BALANCING_CGROUP (4) cannot be combined with NUMA_BALANCING_NORMAL (1) or NUMA_BALANCING_MEMORY_TIERING (2): proposal 4 keeps the sysctl's range at [0, 4] (SYSCTL_FOUR), so 5, 6 and 7 are refused",
}];

/// The refusal of value text `value` of knob `def` by an exclusive-bit
/// rule, if one refuses it (checked before the range, see the module doc).
pub fn exclusive_bits(def: &'static Def, value: &str) -> Option<String> {
    let v: u64 = value.trim().parse().ok()?;
    EXCLUSIVE_BITS
        .iter()
        .find(|r| r.knob.def().idx == def.idx && v & r.bit != 0 && v & r.others != 0)
        .map(|r| format!("--set {}={v}: {}", def.name, r.rule))
}

/// Checks the ordering rules over the values `value` knows (a rule with a
/// value missing is not checked: a real run knows only what `--set` gives).
/// The error names both knobs and their values.
pub fn check_ordered(value: impl Fn(&'static Def) -> Option<u64>) -> Result<(), String> {
    for r in ORDERED {
        let (lo, hi) = (r.lo.def(), r.hi.def());
        if let (Some(a), Some(b)) = (value(lo), value(hi)) {
            if a > b {
                return Err(format!(
                    "--set {}={a} is greater than {}={b}: the minimum must not exceed the maximum",
                    lo.name, hi.name
                ));
            }
        }
    }
    Ok(())
}

/// The model's refusal of raw value `raw` of knob `def`, if it refuses it.
pub fn not_modeled(def: &'static Def, raw: u64) -> Option<String> {
    NOT_MODELED
        .iter()
        .find(|n| n.knob.def().idx == def.idx && n.values.contains(&raw))
        .map(|n| format!("--set {}={raw}: {} is not modeled", def.name, n.what))
}
