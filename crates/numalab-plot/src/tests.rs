//! The figures render with content: pixels other than the background, text
//! drawn with the embedded font, and one file per figure and format.

use super::*;
use numalab_record::TimeSeries;

/// A two-node, two-task record: memory moves from node 0 to node 1, the
/// tasks change node once.
fn record() -> RunRecord {
    let columns = vec![
        "t_s",
        "numa_hint_faults",
        "numa_pages_migrated",
        "local_bytes_share",
        "region:p0/buf:node0_bytes",
        "region:p0/buf:node1_bytes",
        "cpu:p0/t0",
        "cpu:p0/t1",
    ];
    let rows = (1..=20)
        .map(|i| {
            let f = i as f64 / 20.0;
            vec![
                i as f64,
                (i * 100) as f64,
                (i * 80) as f64,
                0.3 + 0.6 * f,
                (1.0 - f) * 1e9,
                f * 1e9,
                if i < 10 { 0.0 } else { 2.0 },
                if i % 5 == 0 { -1.0 } else { 3.0 },
            ]
        })
        .collect();
    let mut v: serde_json::Value = serde_json::json!({
        "format": "numalab-run", "version": 1, "kind": "model",
        "numalab_version": "0", "kernel": null,
        "machine": {"name": "t2", "cpus": [
            {"id": 0, "node": 0}, {"id": 1, "node": 0}, {"id": 2, "node": 1}, {"id": 3, "node": 1}]},
        "workload": {"name": "w", "test": "W"},
        "settings": {}, "seed": 1, "scale": 1.0,
        "elapsed_s": 20.0, "user_s": 30.0, "sys_s": 2.0,
        "vmstat": {"numa_hint_faults": 2000, "numa_pages_migrated": 1600},
        "cgroups": {}, "processes": [], "tasks": [], "nodes": [], "lab": {}
    });
    v["timeseries"] = serde_json::to_value(TimeSeries {
        interval_s: 1.0,
        columns: columns.into_iter().map(String::from).collect(),
        rows,
    })
    .unwrap();
    RunRecord::from_json(&v.to_string(), "test").unwrap()
}

/// Pixels of an RGB buffer that are not white.
fn inked(buf: &[u8]) -> usize {
    buf.chunks(3).filter(|p| p != &[255, 255, 255]).count()
}

fn buffer(f: impl Fn(&DrawingArea<BitMapBackend, Shift>) -> Res) -> Vec<u8> {
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
    let r = record();
    let s = Series::new(r.timeseries.as_ref().unwrap(), &node_of_cpus(&r.machine));
    let mem = s.process_memory();
    assert_eq!(mem.len(), 1);
    assert_eq!(mem[0].by_node.len(), 2);
    let act = s.activity();
    assert_eq!(act.len(), 3);
    // The first task changes node once (sample 10), the second never
    // (off CPU is not a change).
    assert_eq!(act[2].1.iter().map(|p| p.1).sum::<f64>(), 1.0);
    let nodes = s.task_nodes();
    assert_eq!(nodes[0].1[0], 0);
    assert_eq!(nodes[0].1[15], 1);
    assert_eq!(nodes[1].1[4], -1);
    let empty = buffer(|_| Ok(()));
    assert_eq!(inked(&empty), 0);
    for (name, buf) in [
        ("memory", buffer(|a| draw_memory(a, "m", &s, &mem))),
        ("panels", buffer(|a| draw_panels(a, "a", &act))),
        ("heat", buffer(|a| draw_heat(a, "h", &s.t, &nodes))),
    ] {
        // Axes, lines and labels: well over a few thousand pixels.
        assert!(inked(&buf) > 5000, "{name}: {} pixels", inked(&buf));
    }
}

#[test]
fn plot_run_and_compare_write_png_and_svg() {
    let d = tempfile::tempdir().unwrap();
    let r = record();
    let p = plot_run(&r, d.path(), "w-", &[Format::Png, Format::Svg]).unwrap();
    assert_eq!(p.files.len(), 8, "{:?}", p.files);
    assert!(p.skipped.iter().any(|s| s.contains("latency")));
    for f in &p.files {
        let bytes = std::fs::read(f).unwrap();
        if f.extension().unwrap() == "png" {
            assert_eq!(&bytes[1..4], b"PNG");
        } else {
            let t = String::from_utf8(bytes).unwrap();
            assert!(t.contains("<svg") && t.contains("<text"), "{}", f.display());
        }
    }
    let sets = vec![
        RunSet::new("on", vec![r.clone()]),
        RunSet::new("off", vec![r]),
    ];
    let c = plot_compare(&sets, d.path(), &[Format::Png]).unwrap();
    assert_eq!(c.files, vec![d.path().join("compare.png")]);
}

#[test]
fn a_record_without_time_series_is_skipped_not_an_error() {
    let mut r = record();
    r.timeseries = None;
    let d = tempfile::tempdir().unwrap();
    let p = plot_run(&r, d.path(), "", &[Format::Png]).unwrap();
    assert!(p.files.is_empty());
    assert_eq!(p.skipped.len(), 1);
}
