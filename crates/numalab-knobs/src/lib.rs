//! The knob registry: every knob numalab knows is declared once, in
//! [`knob`], with its name, aliases, type and range, default, unit, where
//! it lives in a real kernel, the kernel source it stands for, and a
//! description. The model reads knobs through typed handles
//! (`knobs.get(knob::SCAN_DELAY_MS)`), the real runner resolves `--set`
//! names and checks values through the same declarations, and
//! `numalab list knobs` prints them.
//!
//! Only declared handles can be read, so an undeclared read does not
//! compile:
//!
//! ```compile_fail,E0308
//! let knobs = numalab_knobs::Knobs::default();
//! let mode = knobs.get("kernel.numa_balancing");
//! ```
//!
//! ```compile_fail,E0425
//! let knobs = numalab_knobs::Knobs::default();
//! let delay = knobs.get(numalab_knobs::knob::SCAN_DELAY_TYPO_MS);
//! ```
//!
//! and a read has the declared type:
//!
//! ```
//! use numalab_knobs::{knob, Knobs};
//! let knobs = Knobs::from_sets(&["numa_balancing/scan_delay_ms=500"]).unwrap();
//! let delay: u64 = knobs.get(knob::SCAN_DELAY_MS);
//! assert_eq!(delay, 500);
//! ```
//!
//! A knob may be named by its name, an alias, where it lives in a real
//! kernel (`/proc/sys/kernel/numa_balancing`,
//! `/sys/kernel/debug/sched/numa_balancing/scan_delay_ms`) or an
//! unambiguous bare name (`scan_delay_ms`); a near miss gets a "did you
//! mean" ([`spelling`]).
//!
//! Left out: knobs the model does not have (see [`knob`]); cgroup files
//! beyond those in [`cgroup`].

pub mod cgroup;
mod def;
pub mod knob;
pub mod rules;
mod settings;
pub mod spelling;

pub use def::{
    is_name, BoolKnob, Choice, ChoiceKnob, Def, Knob, Location, Name, NameKnob, Type, UintKnob,
    Unit, Value,
};
pub use knob::{ProfileCycles, SchedBalanceSerialize};
pub use settings::{CgroupFileSetting, Knobs};

#[cfg(test)]
mod tests;
