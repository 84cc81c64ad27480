//! The topology crate's tests, one test binary (one link) for all of them:
//! each file below was a test binary of its own, and linking the whole
//! stack once per file cost more than compiling the tests (issue 32, item 3).

mod import;
mod no_panic;
mod ranges;
mod spec;
