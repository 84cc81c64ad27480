//! Built-in machine presets. (To be written.)
