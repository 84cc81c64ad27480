//! The error of a failed command: a one-line message, an exit code and
//! optional detail. Every subcommand module returns it (or a `String`,
//! which is bad input), and `main` prints it; it lives apart from `cli`
//! so that the modules `cli` calls need not import `cli`.

/// A failed command: a one-line message (printed after `numalab: error:`),
/// the exit code, and optional detail printed before it (a guest's
/// console tail).
#[derive(Debug)]
pub struct Failure {
    /// One line.
    pub message: String,
    /// Process exit code.
    pub code: u8,
    /// More lines, if any.
    pub detail: Option<String>,
}

impl From<String> for Failure {
    /// Bad input: exit code 2.
    fn from(message: String) -> Failure {
        Failure {
            message,
            code: 2,
            detail: None,
        }
    }
}

impl From<numalab_real::RealError> for Failure {
    /// A real run's refusal (2), interruption (128 + signal) or failure
    /// (1); the first line is the message, the rest detail.
    fn from(e: numalab_real::RealError) -> Failure {
        let text = e.to_string();
        let mut lines = text.lines();
        let message = lines.next().unwrap_or("").to_string();
        let rest: Vec<&str> = lines.collect();
        Failure {
            message,
            code: e.exit_code().clamp(1, 255) as u8,
            detail: (!rest.is_empty()).then(|| rest.join("\n")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_2_and_real_errors_keep_their_codes() {
        let f = Failure::from("bad".to_string());
        assert_eq!((f.message.as_str(), f.code), ("bad", 2));
        let f = Failure::from(numalab_real::RealError::Refused("no\nmore".into()));
        assert_eq!((f.message.as_str(), f.code), ("no", 2));
        assert_eq!(f.detail.as_deref(), Some("more"));
        let f = Failure::from(numalab_real::RealError::Interrupted(2));
        assert_eq!(f.code, 130);
    }
}
