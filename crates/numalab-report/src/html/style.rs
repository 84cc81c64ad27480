//! The page's style sheet, inline in its `<head>`: system fonts only (no
//! font is fetched), tables laid out like the terminal's columns, verdict
//! colours, figures two to a row (floated; text and tables clear them).
//! Left out: print and dark-mode styles.

/// The CSS.
pub const CSS: &str = r#"body { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; margin: 0 auto; max-width: 1280px; padding: 0 16px 32px; color: #1b1b1b; background: #ffffff; line-height: 1.4; }
h1 { font-size: 1.6em; margin: 0.8em 0 0.3em; }
h2 { font-size: 1.3em; margin-top: 1.6em; padding-bottom: 0.2em; border-bottom: 2px solid #3465a4; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.4em; }
nav ul { columns: 2; padding-left: 1.2em; margin: 0.4em 0; }
pre, table.compare, table.verdicts td.num { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; font-size: 0.85em; }
div.scroll { overflow-x: auto; margin: 0.6em 0 1em; }
table { border-collapse: collapse; font-size: 0.85em; }
caption { text-align: left; font-weight: bold; padding: 4px 0; }
th, td { padding: 2px 8px; border-bottom: 1px solid #e1e4e8; vertical-align: top; }
thead th { background: #eef2f7; text-align: right; border-bottom: 2px solid #c8d1dc; }
tbody th { text-align: left; font-weight: normal; white-space: nowrap; }
table.compare tbody th:first-child { color: #555555; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.delta { text-align: right; white-space: pre; color: #555555; }
td.sig { color: #a40000; font-weight: bold; }
td.text { text-align: left; }
table.fields thead th, table.verdicts thead th { text-align: left; }
td.good { background: #e6f4e6; }
td.bad { background: #fbe3e3; font-weight: bold; }
td.known { background: #fdf3dc; }
td.muted { color: #777777; }
td.differs { background: #fff4c2; font-weight: bold; }
tbody tr:hover { background: #f4f8ff; }
figure { float: left; width: 50%; box-sizing: border-box; margin: 0.6em 0; padding-right: 10px; }
h2, h3, p, ul, pre, div.scroll, section::after { clear: both; }
section::after { content: ""; display: block; }
figure svg { display: block; max-width: 100%; height: auto; border: 1px solid #e1e4e8; }
figure svg text { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; }
figcaption { font-size: 0.85em; color: #555555; margin-top: 4px; }
"#;
