//! Workload presets. (To be written.)
