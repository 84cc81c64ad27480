//! Reports: mmtests-style compare tables. (To be written.)
