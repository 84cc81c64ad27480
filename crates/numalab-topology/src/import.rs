//! Import of a real host's topology. (To be written.)
