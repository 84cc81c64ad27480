//! TOML values written by hand, for the machine specs `spec.rs`,
//! `kernel_spec.rs` and `import.rs` render: basic strings, floats that read
//! back bit-exactly, lists and matrices. Its own file so the spec writers
//! share it without importing each other. Left out: tables and parsing
//! (serde and the `toml` crate do those).

use std::fmt::Write as _;

/// Formats a TOML basic string.
pub(crate) fn toml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Formats a float so that it reads back bit-exactly as a TOML float.
pub(crate) fn toml_f64(v: f64) -> String {
    format!("{v:?}")
}

/// Formats a TOML array of `v`'s items on one line.
pub(crate) fn toml_list<T>(v: &[T], f: impl Fn(&T) -> String) -> String {
    let items: Vec<String> = v.iter().map(f).collect();
    format!("[{}]", items.join(", "))
}

/// Formats a TOML array of arrays, one row a line.
pub(crate) fn toml_matrix<T>(m: &[Vec<T>], f: impl Fn(&T) -> String + Copy) -> String {
    let mut s = String::from("[\n");
    for row in m {
        let _ = writeln!(s, "  {},", toml_list(row, f));
    }
    s.push(']');
    s
}
