//! The workload language's tests, one test binary (one link) for all of them:
//! each file below was a test binary of its own, and linking the whole
//! stack once per file cost more than compiling the tests (issue 32, item 3).

mod common;
mod errors;
mod fuzz;
mod language;
mod presets;
mod ranges;
mod scale;
mod shared;
mod vma_size;
