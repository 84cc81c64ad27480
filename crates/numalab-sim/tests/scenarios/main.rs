//! The model crate's scenario tests, one test binary (one link) for all of them:
//! each file below was a test binary of its own, and linking the whole
//! stack once per file cost more than compiling the tests (issue 32, item 3).

mod async_scan;
mod common;
mod fast_forward;
mod foundation;
mod interleave;
mod load_tracking;
mod numa_scenarios;
mod per_cgroup;
mod serial_clone;
mod serialize;
mod shared_memory;
mod sleep_slices;
