//! Knobs by their real names: the registry of numalab-knobs, where every
//! knob the model reads is declared once with its range, default and
//! kernel source. The model reads them through typed handles
//! (`self.knobs.get(knob::SCAN_DELAY_MS)`), so an undeclared knob cannot
//! be read. Cgroup files (`CGROUP:FILE=VALUE`) are applied by the engine
//! once the cgroup exists.
//!
//! Left out: every sysctl numalab does not model (they are refused, not
//! ignored).

pub use numalab_knobs::{knob, CgroupFileSetting, Knobs};

use super::sched::serialize::SerializeVariant;
use numalab_knobs::SchedBalanceSerialize;

impl From<SchedBalanceSerialize> for SerializeVariant {
    fn from(c: SchedBalanceSerialize) -> Self {
        match c {
            SchedBalanceSerialize::Legacy => SerializeVariant::Legacy,
            SchedBalanceSerialize::V3 => SerializeVariant::V3,
            SchedBalanceSerialize::V4 => SerializeVariant::V4,
            SchedBalanceSerialize::Fixed => SerializeVariant::Fixed,
            SchedBalanceSerialize::FixedNewidle => SerializeVariant::FixedNewidle,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_serialize_word_is_the_variant_of_that_name() {
        use numalab_knobs::Choice;
        for &c in SchedBalanceSerialize::VARIANTS {
            assert_eq!(SerializeVariant::from(c).name(), c.word());
        }
    }
}
