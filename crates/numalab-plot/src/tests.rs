//! The figures render with content: pixels other than the background, text
//! drawn with the embedded font, one file per figure and format with the
//! run's label, workload and seed in its name, compare charts per test,
//! and a task-nodes SVG whose size stays bounded for a long run of many
//! tasks.

use super::*;
use crate::draw::font;
use numalab_record::{AccessLatency, CgroupFigures, TimeSeries};
use plotters::coord::Shift;

/// A record of workload `workload` on two nodes with `tasks` tasks and
/// `samples` samples: memory moves from node 0 to node 1, task `k` starts
/// on node `k % 2` and changes node every `period` samples, and each task
/// is off CPU at every `off`-th sample.
fn big_record(
    workload: &str,
    tasks: usize,
    samples: usize,
    period: usize,
    off: usize,
) -> RunRecord {
    let mut columns = vec![
        "t_s".to_string(),
        "numa_hint_faults".into(),
        "numa_pages_migrated".into(),
        "local_bytes_share".into(),
        "region:p0/buf:node0_bytes".into(),
        "region:p0/buf:node1_bytes".into(),
    ];
    columns.extend((0..tasks).map(|k| format!("cpu:p0/t{k}")));
    let rows = (1..=samples)
        .map(|i| {
            let f = i as f64 / samples as f64;
            let mut row = vec![
                i as f64,
                (i * 100) as f64,
                (i * 80) as f64,
                0.3 + 0.6 * f,
                (1.0 - f) * 1e9,
                f * 1e9,
            ];
            row.extend((0..tasks).map(|k| {
                if i % off == 0 {
                    -1.0
                } else {
                    // CPUs 0-1 are node 0, 2-3 node 1.
                    (2 * ((k + i / period) % 2)) as f64
                }
            }));
            row
        })
        .collect();
    let mut v: serde_json::Value = serde_json::json!({
        "format": "numalab-run", "version": 1, "kind": "model",
        "numalab_version": "0", "kernel": null,
        "machine": {"name": "t2", "cpus": [
            {"id": 0, "node": 0}, {"id": 1, "node": 0}, {"id": 2, "node": 1}, {"id": 3, "node": 1}]},
        "workload": {"name": workload},
        "settings": {}, "seed": 1, "scale": 1.0,
        "elapsed_s": samples as f64, "user_s": 30.0, "sys_s": 2.0,
        "vmstat": {"numa_hint_faults": 2000, "numa_pages_migrated": 1600},
        "cgroups": {}, "processes": [], "tasks": [], "nodes": [], "lab": {}
    });
    v["timeseries"] = serde_json::to_value(TimeSeries {
        interval_s: 1.0,
        columns,
        rows,
    })
    .unwrap();
    RunRecord::from_json(&v.to_string(), "test").unwrap()
}

/// A small record with a latency histogram.
fn record(workload: &str) -> RunRecord {
    let mut r = big_record(workload, 2, 20, 10, 5);
    let cg = CgroupFigures {
        access_latency: Some(AccessLatency {
            reads: vec![0, 0, 0, 0, 0, 0, 500, 90, 4],
            writes: vec![
                0, 0, 0, 0, 0, 0, 300, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
            ],
            threshold_us: 1000,
            reads_over: 0,
            writes_over: 2,
            max_ns: 1_500_000,
        }),
        ..CgroupFigures::default()
    };
    r.cgroups.insert("/".into(), cg);
    r
}

/// Pixels of an RGB buffer that are not white.
fn inked(buf: &[u8]) -> usize {
    buf.chunks(3).filter(|p| p != &[255, 255, 255]).count()
}

fn buffer(f: impl Fn(&DrawingArea<BitMapBackend, Shift>) -> Result<(), String>) -> Vec<u8> {
    font_ready();
    let mut buf = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, SIZE).into_drawing_area();
        root.fill(&WHITE).unwrap();
        f(&root).unwrap();
        root.present().unwrap();
    }
    buf
}

#[test]
fn the_embedded_font_draws_text() {
    let buf = buffer(|a| {
        a.draw(&Text::new("numalab 0123", (10, 10), font(30)))
            .map_err(err)
    });
    // A 30 px line of 12 glyphs inks hundreds of pixels.
    assert!(inked(&buf) > 300, "{} pixels", inked(&buf));
}

#[test]
fn each_figure_draws_content() {
    let r = record("w");
    let (figs, skipped) = run_figures(&r);
    let names: Vec<&str> = figs.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        ["memory", "local-share", "activity", "task-nodes", "latency"]
    );
    assert!(skipped.is_empty(), "{skipped:?}");
    let s = Series::new(r.timeseries.as_ref().unwrap(), &r.cpu_nodes());
    let act = s.activity();
    assert_eq!(act.len(), 3);
    // Each task changes node once, seen at sample 11 (off CPU at 5, 10,
    // 15 and 20 is not a change).
    let moves: Vec<(f64, f64)> = act[2].1.iter().copied().filter(|p| p.1 > 0.0).collect();
    assert_eq!(moves, [(11.0, 2.0)]);
    let empty = buffer(|_| Ok(()));
    assert_eq!(inked(&empty), 0);
    for (name, fig) in &figs {
        let buf = buffer(|a| fig.draw(a));
        // Axes, curves, bars and labels: well over a few thousand pixels.
        assert!(inked(&buf) > 5000, "{name}: {} pixels", inked(&buf));
    }
}

#[test]
fn files_are_named_by_label_workload_and_seed_and_written_whole() {
    let d = tempfile::tempdir().unwrap();
    let r = record("numa01");
    let stem = run_stem("off on", &r);
    assert_eq!(stem, "off_on-numa01-seed1");
    let p = plot_run(&r, d.path(), &stem, &[Format::Png, Format::Svg]).unwrap();
    assert_eq!(p.files.len(), 10, "{:?}", p.files);
    assert!(p.skipped.is_empty());
    for f in &p.files {
        let name = f.file_name().unwrap().to_string_lossy();
        assert!(name.starts_with("off_on-numa01-seed1-"), "{name}");
        let bytes = std::fs::read(f).unwrap();
        if f.extension().unwrap() == "png" {
            assert_eq!(&bytes[1..4], b"PNG");
        } else {
            let t = String::from_utf8(bytes).unwrap();
            assert!(
                t.contains("<svg") && t.trim_end().ends_with("</svg>"),
                "{name}"
            );
        }
    }
    // Nothing but the figures: no temporary file left behind.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 10);
    // The SVG a report embeds is the file's text.
    let svgs = svg_figures(&r).unwrap();
    let file = std::fs::read_to_string(d.path().join(format!("{stem}-latency.svg"))).unwrap();
    assert_eq!(svgs.iter().find(|s| s.0 == "latency").unwrap().1, file);
}

#[test]
fn compare_charts_are_per_test_never_across_tests() {
    let d = tempfile::tempdir().unwrap();
    let mut slow = record("numa01");
    slow.elapsed_s = 500.0;
    let fast = record("numa02");
    let sets = vec![
        RunSet::new("off", vec![slow.clone(), fast.clone()]),
        RunSet::new("on", vec![slow]),
    ];
    let c = plot_compare(&sets, d.path(), &[Format::Svg]).unwrap();
    let names: Vec<String> = c
        .files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "compare-numa01.svg",
            "compare-numa01-latency.svg",
            "compare-numa02.svg",
            "compare-numa02-latency.svg"
        ]
    );
    let svgs = compare_svgs(&sets).unwrap();
    let numa02 = &svgs.iter().find(|s| s.0 == "compare-numa02").unwrap().1;
    // Column `on` has no numa02 run: n/a.
    assert!(numa02.contains("n/a"), "no n/a");
    // Each chart's elapsed bars are its own test's, not a mean of both.
    let (figs, _) = compare_figures(&sets);
    let elapsed = |name: &str| match &figs.iter().find(|f| f.0 == name).unwrap().1 {
        Figure::Bars { metrics, .. } => metrics[0]
            .1
            .iter()
            .map(|s| s.map(|s| s.mean))
            .collect::<Vec<_>>(),
        _ => panic!("{name} is not a bar chart"),
    };
    assert_eq!(elapsed("compare-numa01"), [Some(500.0), Some(500.0)]);
    assert_eq!(elapsed("compare-numa02"), [Some(20.0), None]);
    let numa01 = &svgs.iter().find(|s| s.0 == "compare-numa01").unwrap().1;
    assert!(!numa01.contains("n/a"));
}

#[test]
fn missing_data_is_skipped_with_its_reason() {
    let mut r = record("w");
    r.timeseries = None;
    r.cgroups.clear();
    r.settings
        .insert("numalab.access_latency".into(), "0".into());
    let d = tempfile::tempdir().unwrap();
    let p = plot_run(&r, d.path(), "x", &[Format::Png]).unwrap();
    assert!(p.files.is_empty());
    let figures: Vec<&str> = p.skipped.iter().map(|s| s.figure.as_str()).collect();
    assert_eq!(figures, ["time series", "latency"]);
    assert_eq!(p.skipped[1].reason, "the run had numalab.access_latency=0");
    // Latency alone still draws without a time series.
    let mut r = record("w");
    r.timeseries = None;
    let names: Vec<String> = svg_figures(&r).unwrap().into_iter().map(|s| s.0).collect();
    assert_eq!(names, ["latency"]);
}

#[test]
fn task_nodes_svg_stays_small_for_a_long_run_of_many_tasks() {
    // 320 tasks (spr-4n's numa01-threadlocal) over 3000 samples, each
    // task changing node every 300 samples and off CPU every 13th: drawn
    // cell by cell that is 960,000 rectangles (about 85 MB of SVG).
    let r = big_record("big", 320, 3000, 300, 13);
    let svgs = svg_figures(&r).unwrap();
    let heat = &svgs.iter().find(|s| s.0 == "task-nodes").unwrap().1;
    // One rectangle per stay on a node: 10 per task.
    let rects = heat.matches("<rect").count();
    assert!(rects < 320 * 12 + 100, "{rects} rectangles");
    assert!(heat.len() < 500_000, "{} bytes", heat.len());
}
