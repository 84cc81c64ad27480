//! Escaping text for HTML, and element ids made from titles.
//!
//! Every piece of text the page shows (labels, knob values, file names,
//! verdicts) goes through [`text`], which escapes the five characters that
//! can end a text node or an attribute value, so a label such as
//! `<script>` is shown, never run. Left out: URL escaping (the page links
//! only to its own ids).

/// `s` with `&`, `<`, `>`, `"` and `'` replaced by character references,
/// safe both as element content and inside a quoted attribute value.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An element id for the `n`-th section titled `title`: `sN-` and the
/// title's ASCII letters and digits, lower-cased, other runs of characters
/// as one `-` (unique through `n`, readable in the address bar).
pub fn id(n: usize, title: &str) -> String {
    let mut out = format!("s{n}-");
    let mut dash = true;
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_are_escaped() {
        assert_eq!(
            text(r#"<script>alert("x") & 'y'</script>"#),
            "&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;"
        );
        assert_eq!(text("±10% µs"), "±10% µs");
    }

    #[test]
    fn ids_are_unique_and_plain() {
        assert_eq!(id(3, "Knobs: off vs on"), "s3-knobs-off-vs-on");
        assert_eq!(id(1, "<x>"), "s1-x");
        assert_ne!(id(1, "a"), id(2, "a"));
    }
}
