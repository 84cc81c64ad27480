//! The model. (To be written.)
