//! Independent runs on several cores: the `-j` option and its thread pool.
//!
//! Runs are independent (each owns its model), so they go through rayon and
//! are gathered in declaration order; output is the same for any `-j`.
//! Left out: limiting memory by running fewer large runs at once.

/// The number of runs at once: `-j N` (N >= 1), else the available cores.
pub fn jobs(requested: Option<usize>) -> Result<usize, String> {
    match requested {
        Some(0) => Err("-j/--jobs must be at least 1".into()),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// Runs `f` with rayon's parallel iterators limited to `jobs` threads.
pub fn install<T: Send>(jobs: usize, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map(|pool| pool.install(f))
        .map_err(|e| format!("starting {jobs} worker threads: {e}"))
}
