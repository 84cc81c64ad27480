//! Tests of the page generator (no browser: `.ci/browser-test` loads a
//! real page in Chromium).

use super::*;
use crate::testutil::{record, set};
use crate::{compare_cgroups, compare_table};
use numalab_record::{AccessLatency, CgroupFigures, RunRecord, Score};

/// Two columns with NUMA counters, a score and several seeds, so every
/// kind of compare row (deltas, significance, Hmean, Duration, Ops) shows.
fn columns(label_a: &str, label_b: &str) -> Vec<RunSet> {
    let mk = |seed: u64, elapsed: f64, faults: u64| {
        let mut r = record("oltp", seed, elapsed, elapsed * 3.0, elapsed / 10.0);
        r.vmstat.insert("numa_hint_faults".into(), faults);
        r.vmstat.insert("numa_pte_updates".into(), faults * 3);
        r.vmstat.insert("numa_pages_migrated".into(), faults / 2);
        r.score = Some(Score {
            name: "throughput".into(),
            unit: "tx/s".into(),
            value: 1000.0 / elapsed,
            higher_is_better: true,
        });
        let mut cg = CgroupFigures::default();
        cg.memory_stat.insert("numa_hint_faults".into(), faults);
        r.cgroups.insert("/db".into(), cg);
        r
    };
    vec![
        set(
            label_a,
            (1..=4).map(|s| mk(s, 100.0 + s as f64, 10)).collect(),
        ),
        set(
            label_b,
            (1..=4).map(|s| mk(s, 80.0 + s as f64, 5000)).collect(),
        ),
    ]
}

fn labels(sets: &[RunSet]) -> Vec<String> {
    sets.iter().map(|s| s.name.clone()).collect()
}

/// The tokens of each body row of the tables, cells in order.
fn table_rows(blocks: &[Block]) -> Vec<Vec<String>> {
    blocks
        .iter()
        .flat_map(|b| match b {
            Block::Table(t) => t.rows.clone(),
            other => panic!("not a table: {other:?}"),
        })
        .map(|r| {
            r.iter()
                .flat_map(|c| c.text.split_whitespace().map(str::to_string))
                .collect()
        })
        .collect()
}

/// The tokens of each row line of the text (header lines left out).
fn text_rows(text: &str, header_lines: usize) -> Vec<Vec<String>> {
    text.split("\n\n")
        .flat_map(|b| b.lines().skip(header_lines))
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn compare_tables_hold_the_texts_figures() {
    for (a, b, header_lines) in [("base", "new", 1), ("balancing-off", "balancing-on", 2)] {
        let sets = columns(a, b);
        let text = compare_table(&sets);
        let blocks = compare_blocks(&text, &labels(&sets));
        // Summary, Hmean, Duration and Ops: four tables, no text left over.
        assert_eq!(blocks.len(), 4, "{text}");
        assert_eq!(table_rows(&blocks), text_rows(&text, header_lines));
        assert!(text.contains('*'), "no significant delta to check:\n{text}");
        let sig = blocks.iter().any(|b| match b {
            Block::Table(t) => t
                .rows
                .iter()
                .flatten()
                .any(|c| c.kind == Kind::Significant && c.text.ends_with("%*")),
            _ => false,
        });
        assert!(sig, "the significant delta lost its mark");
        let cg = compare_cgroups(&sets, "/db");
        let cg_blocks = compare_blocks(&cg, &labels(&sets));
        assert_eq!(table_rows(&cg_blocks), text_rows(&cg, header_lines));
    }
}

#[test]
fn a_block_that_does_not_read_as_a_table_stays_text() {
    let blocks = compare_blocks("cgroup /x: not in any run\n", &["a".to_string()]);
    assert_eq!(
        blocks,
        vec![Block::Text("cgroup /x: not in any run".into())]
    );
    let two = "            a\nsome text\n";
    assert_eq!(
        compare_blocks(two, &["a".to_string()]),
        vec![Block::Pre(two.into())]
    );
}

#[test]
fn headers_carry_whole_labels_over_value_and_delta() {
    let sets = columns("6.8.0-rc3-vanilla", "patched");
    let blocks = compare_blocks(&compare_table(&sets), &labels(&sets));
    let Block::Table(t) = &blocks[0] else {
        panic!("{blocks:?}")
    };
    let head: Vec<(&str, usize)> = t.head[0]
        .iter()
        .map(|c| (c.text.as_str(), c.span))
        .collect();
    assert_eq!(head, [("", 2), ("6.8.0-rc3-vanilla", 2), ("patched", 2)]);
}

/// A page with every kind of block, labels full of markup.
fn page_with_everything() -> Page {
    let sets = columns("<b>off</b>", "on & \"more\"");
    let text = compare_table(&sets);
    let mut blocks = compare_blocks(&text, &labels(&sets));
    blocks.push(Block::Table(settings_table(&sets)));
    blocks.push(Block::Figure {
        caption: "fig <1>".into(),
        svg: Svg::new("<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"10\" xmlns=\"http://www.w3.org/2000/svg\"><text x=\"1\" y=\"1\">a &lt;b&gt;</text></svg>\n").unwrap(),
    });
    let h = AccessLatency {
        reads: vec![0, 0, 5, 0, 7],
        writes: vec![0, 0, 1],
        threshold_us: 1000,
        reads_over: 0,
        writes_over: 0,
        max_ns: 20,
    };
    blocks.extend(latency::latency_blocks(&h, "<cg>").unwrap());
    blocks.extend(json::json_blocks(
        &serde_json::json!({"name": "<m>", "distance": [[10, 21], [21, 10]]}),
        "machine <m>",
    ));
    blocks.push(Block::List(vec!["[1] <why>".into()]));
    blocks.push(Block::Pre("a <pre>".into()));
    Page {
        title: "report <x>".into(),
        intro: vec!["made by 'me'".into()],
        sections: vec![Section {
            title: "compare <y>".into(),
            blocks,
        }],
    }
}

#[test]
fn all_text_is_escaped() {
    let html = render(&page_with_everything());
    for raw in [
        "<b>", "<x>", "<y>", "<1>", "<cg>", "<m>", "<why>", "a <pre>", "'me'", "& \"",
    ] {
        assert!(!html.contains(raw), "unescaped {raw:?}");
    }
    for escaped in [
        "&lt;b&gt;off&lt;/b&gt;",
        "on &amp; &quot;more&quot;",
        "&lt;why&gt;",
    ] {
        assert!(html.contains(escaped), "missing {escaped:?}");
    }
}

#[test]
fn the_page_loads_nothing_from_outside() {
    let html = render(&page_with_everything());
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none';"));
    assert!(!html.contains("<script"));
    assert!(!html.contains("src="));
    assert!(!html.contains("url("));
    assert!(!html.contains("@import"));
    // Links only to the page's own sections.
    for (i, _) in html.match_indices("href=\"") {
        assert_eq!(&html[i + 6..i + 7], "#", "{}", &html[i..i + 40]);
    }
    // The one address is the SVG namespace, which nothing fetches.
    let addresses: Vec<&str> = html
        .split(['"', ' ', '>', '<'])
        .filter(|w| w.contains("://"))
        .collect();
    assert!(
        addresses.iter().all(|a| *a == "http://www.w3.org/2000/svg"),
        "{addresses:?}"
    );
}

#[test]
fn the_page_is_well_nested() {
    let html = render(&page_with_everything());
    for (open, close) in [
        ("<table", "</table>"),
        ("<tr>", "</tr>"),
        ("<section", "</section>"),
        ("<figure>", "</figure>"),
        ("<svg", "</svg>"),
        ("<ul>", "</ul>"),
    ] {
        assert_eq!(
            html.matches(open).count(),
            html.matches(close).count(),
            "{open}"
        );
    }
    assert!(html.starts_with("<!DOCTYPE html>\n"));
    assert!(html.ends_with("</html>\n"));
    assert!(html.contains("<li><a href=\"#s1-compare-y\">compare &lt;y&gt;</a></li>"));
    assert!(html.contains("<section id=\"s1-compare-y\">"));
}

#[test]
fn svg_that_could_run_or_load_is_refused() {
    let ok = "<svg xmlns=\"http://www.w3.org/2000/svg\"><text>on=1 href url(x)</text></svg>";
    assert!(Svg::new(ok).is_ok(), "text content is not markup");
    for bad in [
        "<svg><script>alert(1)</script></svg>",
        "<svg onload=\"alert(1)\"></svg>",
        "<svg><image href=\"http://x/a.png\"/></svg>",
        "<svg><rect fill=\"url(http://x/#p)\"/></svg>",
        "<svg><foreignObject></foreignObject></svg>",
        "<svg><style>@import url(x)</style></svg>",
        "<svg>",
        "no figure",
    ] {
        assert!(Svg::new(bad).is_err(), "{bad}");
    }
}

#[test]
fn knobs_that_differ_come_first_and_are_marked() {
    let knob = |r: &mut RunRecord, k: &str, v: &str| {
        r.settings.insert(k.into(), v.into());
    };
    let mut a = record("numa02", 1, 1.0, 1.0, 1.0);
    knob(&mut a, "a.same", "1");
    knob(&mut a, "kernel.numa_balancing", "0");
    let mut b = a.clone();
    knob(&mut b, "kernel.numa_balancing", "1");
    let mut b2 = b.clone();
    knob(&mut b2, "kernel.numa_balancing", "2");
    let t = settings_table(&[set("off", vec![a]), set("on", vec![b, b2])]);
    let rows: Vec<Vec<(&str, Kind)>> = t
        .rows
        .iter()
        .map(|r| r.iter().map(|c| (c.text.as_str(), c.kind)).collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec![
                ("kernel.numa_balancing", Kind::Head),
                ("0", Kind::Differs),
                ("1, 2", Kind::Differs)
            ],
            vec![("a.same", Kind::Head), ("1", Kind::Text), ("1", Kind::Text)],
        ]
    );
}

#[test]
fn json_lists_become_tables_and_long_ones_are_cut() {
    let cpus: Vec<serde_json::Value> = (0..100)
        .map(|i| serde_json::json!({"id": i, "node": i / 50}))
        .collect();
    let v = serde_json::json!({
        "name": "m",
        "bandwidth": {"link_gbps": 34.0},
        "node_gbps": [113.0, 113.0],
        "distance": [[10, 21], [21, 10]],
        "cpus": cpus,
    });
    let blocks = json::json_blocks(&v, "machine m");
    let tables: Vec<&Table> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Table(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(tables.len(), 3);
    let fields: Vec<(&str, &str)> = tables[0]
        .rows
        .iter()
        .map(|r| (r[0].text.as_str(), r[1].text.as_str()))
        .collect();
    assert!(
        fields.contains(&("bandwidth.link_gbps", "34.0")),
        "{fields:?}"
    );
    assert!(
        fields.contains(&("node_gbps", "113.0, 113.0")),
        "{fields:?}"
    );
    let cpus = tables
        .iter()
        .find(|t| t.caption.as_deref() == Some("cpus"))
        .unwrap();
    assert_eq!(cpus.rows.len(), json::MAX_ROWS + 1);
    assert_eq!(
        cpus.rows.last().unwrap()[0].text,
        "... 36 more (100 in all)"
    );
    let dist = tables
        .iter()
        .find(|t| t.caption.as_deref() == Some("distance"))
        .unwrap();
    assert_eq!(
        dist.rows[1]
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>(),
        ["1", "21", "10"]
    );
}

#[test]
fn latency_rows_are_the_texts_and_bars_one_per_band_and_kind() {
    let h = AccessLatency {
        reads: vec![0, 0, 0, 0, 0, 0, 10, 0, 3],
        writes: vec![0, 0, 0, 0, 0, 0, 7],
        threshold_us: 1000,
        reads_over: 2,
        writes_over: 0,
        max_ns: 1_500_000,
    };
    let blocks = latency::latency_blocks(&h, "/").unwrap();
    let [Block::Figure { svg, .. }, Block::Table(t), Block::Text(outliers)] = blocks.as_slice()
    else {
        panic!("{blocks:?}")
    };
    let rows: Vec<Vec<&str>> = t
        .rows
        .iter()
        .map(|r| r.iter().map(|c| c.text.as_str()).collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["2^(6,7) ns >=64 ns", "10", "7"],
            vec!["2^(8,9) ns >=256 ns", "3", "0"]
        ]
    );
    assert!(outliers.starts_with(">= 1000 us: 2 reads"), "{outliers}");
    // A bar per non-zero count (10, 7, 3), the background, the legend.
    assert_eq!(svg.as_str().matches("<rect").count(), 3 + 1 + 2);
}
