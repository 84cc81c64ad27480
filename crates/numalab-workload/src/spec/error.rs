//! The one error type of the workload language, for every stage: the TOML
//! that did not parse (with line and column), a field with an impossible
//! value (with its dotted path), a bad `--scale`, an unknown workload name
//! or an unreadable file. Left out: recovery; the first error ends the stage.

/// An error in a workload spec, its resolution, or the choice of workload.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The TOML did not parse, or a key or value type is wrong.
    #[error("workload {origin}: malformed TOML: {message}")]
    Toml {
        /// File name or preset name.
        origin: String,
        /// Parser message, with line and column.
        message: String,
    },
    /// A field has an impossible value.
    #[error("workload {origin}: field `{field}`: {message}")]
    Field {
        /// File name or preset name.
        origin: String,
        /// Dotted path of the field, e.g. `process[0].thread[1].phases[2].passes`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The `--scale` factor is outside (0, 1].
    #[error("--scale {0}: must be a number F with 0 < F <= 1")]
    Scale(f64),
    /// Not a preset and not an existing file.
    #[error("unknown workload '{0}': not a preset (see `numalab list workloads`) and not a file")]
    Unknown(String),
    /// A workload file exists but could not be read.
    #[error("workload {path}: cannot read the file: {message}")]
    Io {
        /// Path given.
        path: String,
        /// OS error.
        message: String,
    },
}

/// A result of the workload language.
pub(crate) type Result<T> = std::result::Result<T, WorkloadError>;
