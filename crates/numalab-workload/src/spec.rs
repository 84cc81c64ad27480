//! Workload spec TOML. (To be written.)
