//! TOML machine specs: parsing and validation into a [`crate::Machine`].
//! (To be written: see the helper brief.)
