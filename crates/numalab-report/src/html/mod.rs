//! A report as one self-contained static HTML page, as kernel developers
//! share mmtests results (its compare-kernels tables with graphs).
//!
//! The caller builds a [`Page`] out of [`Section`]s of [`Block`]s (text,
//! tables, inline SVG figures) and [`render`] turns it into the page:
//! CSS inline, figures as inline `<svg>`, no script, no font, no image
//! and no address outside the page, with a Content-Security-Policy that
//! lets the browser load nothing else, so the page opens the same offline
//! and any load it tried would show as a console error. The helpers build
//! blocks from what the other modules print or records carry:
//!
//! * [`tables::compare_blocks`]: the text of [`crate::compare_table`] (or
//!   [`crate::compare_cgroups`]) as HTML tables, cell for cell the same
//!   figures the text shows (a block it cannot read stays as text);
//! * [`latency::latency_blocks`]: an access-latency histogram (proposal 2)
//!   as a bar figure and a table;
//! * [`json::json_blocks`]: a resolved spec (the record's machine) as
//!   tables;
//! * [`settings_table`]: the runs' knobs, one column per set.
//!
//! Text is escaped ([`escape::text`]); the same page gives the same bytes.
//! Left out: interactivity (sorting, zoom), dark mode, and drawing the
//! figures (the caller passes SVG, e.g. from `numalab-plot`).

pub mod escape;
pub mod json;
pub mod latency;
mod style;
pub mod tables;

pub use json::json_blocks;
pub use latency::latency_blocks;
pub use tables::compare_blocks;

#[cfg(test)]
mod tests;

use numalab_record::RunSet;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The whole page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Page {
    /// The `<title>` and the `<h1>`.
    pub title: String,
    /// Paragraphs under the title.
    pub intro: Vec<String>,
    /// The sections, each listed in the page's contents.
    pub sections: Vec<Section>,
}

/// A section: an `<h2>` and its blocks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    /// The heading.
    pub title: String,
    /// The content, in order.
    pub blocks: Vec<Block>,
}

/// One piece of a section's content.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A sub-heading (`<h3>`).
    Heading(String),
    /// A paragraph.
    Text(String),
    /// A bulleted list.
    List(Vec<String>),
    /// Preformatted text (kept as printed).
    Pre(String),
    /// A table.
    Table(Table),
    /// A figure: an inline SVG element and its caption.
    Figure {
        /// The caption under the figure.
        caption: String,
        /// The figure.
        svg: Svg,
    },
}

/// One `<svg>` element, checked to hold nothing that runs or loads:
/// made only by [`Svg::new`].
#[derive(Clone, Debug, PartialEq)]
pub struct Svg(String);

impl Svg {
    /// Checks SVG markup for inlining: an XML declaration or doctype
    /// before the element is dropped; what remains must be one
    /// `<svg ...>...</svg>` element with no script, style sheet, event
    /// handler, foreign object, link or reference to another document
    /// (plotters' SVG has none; a figure with one is refused, not
    /// cleaned).
    pub fn new(markup: &str) -> Result<Svg, String> {
        let start = markup
            .find("<svg")
            .ok_or("figure: no <svg> element in the markup")?;
        let svg = markup[start..].trim_end();
        if !svg.ends_with("</svg>") {
            return Err("figure: the markup does not end with </svg>".into());
        }
        // Text in SVG escapes `<`, so every `<` opens a tag: check each.
        for tag in svg.split('<').skip(1) {
            let inside = tag.split('>').next().unwrap_or("").to_ascii_lowercase();
            let mut words = inside.split_ascii_whitespace();
            let name = words.next().unwrap_or("").trim_start_matches('/');
            if [
                "script",
                "foreignobject",
                "iframe",
                "image",
                "use",
                "a",
                "style",
            ]
            .contains(&name)
            {
                return Err(format!(
                    "figure: SVG with a <{name}> element is not inlined"
                ));
            }
            for attr in words {
                let key = attr.split('=').next().unwrap_or("");
                if key.starts_with("on") || key.contains("href") || attr.contains("url(") {
                    return Err(format!(
                        "figure: SVG with attribute {key:?} on <{name}> is not inlined"
                    ));
                }
            }
        }
        Ok(Svg(svg.to_string()))
    }

    /// The markup.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A table: header rows and body rows of cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// CSS class of the `<table>` (`compare`, `verdicts`, `fields`, ...).
    pub class: String,
    /// Caption above the table, if any.
    pub caption: Option<String>,
    /// Header rows (`<thead>`).
    pub head: Vec<Vec<Cell>>,
    /// Body rows (`<tbody>`).
    pub rows: Vec<Vec<Cell>>,
}

/// One table cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// The text shown (escaped when rendered).
    pub text: String,
    /// What the cell holds: its element and CSS class.
    pub kind: Kind,
    /// Columns it spans (1 for most).
    pub span: usize,
}

/// What a cell holds, which decides its element (`th` or `td`) and class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A row or column heading (`<th>`).
    Head,
    /// A number, right-aligned.
    Num,
    /// An mmtests delta, `(  1.23%)`.
    Delta,
    /// An mmtests delta marked significant, `*  1.23%*`.
    Significant,
    /// Plain text, left-aligned.
    Text,
    /// A verdict within tolerance.
    Good,
    /// A miss not declared known.
    Bad,
    /// A miss declared known.
    Known,
    /// A figure not judged (model only, or not at this scale).
    Muted,
    /// A value that differs between columns (knobs).
    Differs,
}

impl Kind {
    fn class(self) -> &'static str {
        match self {
            Kind::Head => "",
            Kind::Num => "num",
            Kind::Delta => "delta",
            Kind::Significant => "delta sig",
            Kind::Text => "text",
            Kind::Good => "text good",
            Kind::Bad => "text bad",
            Kind::Known => "text known",
            Kind::Muted => "text muted",
            Kind::Differs => "text differs",
        }
    }
}

impl Cell {
    /// A cell of one column.
    pub fn new(text: impl Into<String>, kind: Kind) -> Cell {
        Cell {
            text: text.into(),
            kind,
            span: 1,
        }
    }

    /// A heading cell.
    pub fn head(text: impl Into<String>) -> Cell {
        Cell::new(text, Kind::Head)
    }

    /// The same cell spanning `n` columns.
    pub fn spanning(mut self, n: usize) -> Cell {
        self.span = n.max(1);
        self
    }
}

/// The runs' knobs (`settings`), one row per knob and one column per set;
/// a set whose runs differ shows each value once, in order. Rows whose
/// value is not the same in every column are marked [`Kind::Differs`]
/// and listed first, since they are what the comparison is about.
pub fn settings_table(sets: &[RunSet]) -> Table {
    let keys: BTreeSet<&str> = sets
        .iter()
        .flat_map(|s| &s.runs)
        .flat_map(|r| r.settings.keys())
        .map(String::as_str)
        .collect();
    let value = |s: &RunSet, k: &str| {
        let mut seen: Vec<&str> = Vec::new();
        for r in &s.runs {
            let v = r.settings.get(k).map_or("-", String::as_str);
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        seen.join(", ")
    };
    let mut differ: Vec<Vec<Cell>> = Vec::new();
    let mut same: Vec<Vec<Cell>> = Vec::new();
    for k in keys {
        let values: Vec<String> = sets.iter().map(|s| value(s, k)).collect();
        let differs = values.iter().any(|v| v != &values[0]);
        let kind = if differs { Kind::Differs } else { Kind::Text };
        let mut row = vec![Cell::head(k)];
        row.extend(values.into_iter().map(|v| Cell::new(v, kind)));
        if differs {
            differ.push(row);
        } else {
            same.push(row);
        }
    }
    let mut head = vec![Cell::head("knob")];
    head.extend(sets.iter().map(|s| Cell::head(s.name.clone())));
    differ.extend(same);
    Table {
        class: "fields".into(),
        caption: None,
        head: vec![head],
        rows: differ,
    }
}

/// The page as HTML: same page, same bytes.
pub fn render(page: &Page) -> String {
    let mut out = String::new();
    let title = escape::text(&page.title);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    // Nothing outside the page may load: a stray address would show as a
    // console error (the browser test fails on any) instead of a fetch.
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n",
    );
    let _ = writeln!(out, "<title>{title}</title>");
    let _ = writeln!(out, "<style>\n{}</style>", style::CSS);
    out.push_str("</head>\n<body>\n<header>\n");
    let _ = writeln!(out, "<h1>{title}</h1>");
    for p in &page.intro {
        let _ = writeln!(out, "<p>{}</p>", escape::text(p));
    }
    let ids: Vec<String> = page
        .sections
        .iter()
        .enumerate()
        .map(|(i, s)| escape::id(i + 1, &s.title))
        .collect();
    if !page.sections.is_empty() {
        out.push_str("<nav>\n<ul>\n");
        for (s, id) in page.sections.iter().zip(&ids) {
            let _ = writeln!(
                out,
                "<li><a href=\"#{id}\">{}</a></li>",
                escape::text(&s.title)
            );
        }
        out.push_str("</ul>\n</nav>\n");
    }
    out.push_str("</header>\n<main>\n");
    for (s, id) in page.sections.iter().zip(&ids) {
        let _ = writeln!(out, "<section id=\"{id}\">");
        let _ = writeln!(out, "<h2>{}</h2>", escape::text(&s.title));
        for b in &s.blocks {
            block(&mut out, b);
        }
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// Appends one block's HTML.
fn block(out: &mut String, b: &Block) {
    match b {
        Block::Heading(h) => {
            let _ = writeln!(out, "<h3>{}</h3>", escape::text(h));
        }
        Block::Text(t) => {
            let _ = writeln!(out, "<p>{}</p>", escape::text(t));
        }
        Block::List(items) => {
            out.push_str("<ul>\n");
            for i in items {
                let _ = writeln!(out, "<li>{}</li>", escape::text(i));
            }
            out.push_str("</ul>\n");
        }
        Block::Pre(t) => {
            let _ = writeln!(out, "<pre>{}</pre>", escape::text(t));
        }
        Block::Table(t) => table(out, t),
        Block::Figure { caption, svg } => {
            out.push_str("<figure>\n");
            out.push_str(&svg.0);
            out.push('\n');
            let _ = writeln!(out, "<figcaption>{}</figcaption>", escape::text(caption));
            out.push_str("</figure>\n");
        }
    }
}

/// Appends a table's HTML.
fn table(out: &mut String, t: &Table) {
    let _ = writeln!(
        out,
        "<div class=\"scroll\"><table class=\"{}\">",
        escape::text(&t.class)
    );
    if let Some(c) = &t.caption {
        let _ = writeln!(out, "<caption>{}</caption>", escape::text(c));
    }
    let rows = |out: &mut String, rows: &[Vec<Cell>]| {
        for r in rows {
            out.push_str("<tr>");
            for c in r {
                cell(out, c);
            }
            out.push_str("</tr>\n");
        }
    };
    if !t.head.is_empty() {
        out.push_str("<thead>\n");
        rows(out, &t.head);
        out.push_str("</thead>\n");
    }
    out.push_str("<tbody>\n");
    rows(out, &t.rows);
    out.push_str("</tbody>\n</table></div>\n");
}

/// Appends one cell's HTML.
fn cell(out: &mut String, c: &Cell) {
    let tag = if c.kind == Kind::Head { "th" } else { "td" };
    out.push('<');
    out.push_str(tag);
    let class = c.kind.class();
    if !class.is_empty() {
        let _ = write!(out, " class=\"{class}\"");
    }
    if c.span > 1 {
        let _ = write!(out, " colspan=\"{}\"", c.span);
    }
    let _ = write!(out, ">{}</{tag}>", escape::text(&c.text));
}
