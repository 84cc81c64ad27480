//! Knobs by their real names: the registry of numalab-knobs, where every
//! knob the model reads is declared once with its range, default and
//! kernel source. The model reads them through typed handles
//! (`self.knobs.get(knob::SCAN_DELAY_MS)`), so an undeclared knob cannot
//! be read. Cgroup files (`CGROUP:FILE=VALUE`) are applied by the engine
//! once the cgroup exists.
//!
//! Left out: every sysctl numalab does not model (they are refused, not
//! ignored). A knob's value type becomes the model's own type where the
//! model uses it (`SerializeVariant::from` in sched/serialize.rs).

pub use numalab_knobs::{knob, CgroupFileSetting, Knobs};
