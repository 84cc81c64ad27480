//! The time-series figures of one run: each process's memory per node (a
//! panel per process) and counters per sampling interval (a panel per
//! counter).
//!
//! Left out: more than [`MAX_MEMORY_PANELS`] processes (the figure says
//! which it drew; the caller reports the rest as skipped).

use crate::data::ProcessMemory;
use crate::draw::{draw_lines, titled, Res};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Processes drawn in the memory figure, one panel each.
pub(crate) const MAX_MEMORY_PANELS: usize = 4;

/// Bytes in a GiB.
const GIB: f64 = (1u64 << 30) as f64;

/// Each process's resident GiB per node over time `t`, one panel per
/// process (the first [`MAX_MEMORY_PANELS`]).
pub(crate) fn draw_memory<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    title: &str,
    t: &[f64],
    mem: &[ProcessMemory],
) -> Res {
    let rest = titled(a, title)?;
    let n = mem.len().min(MAX_MEMORY_PANELS);
    let panels = rest.split_evenly((n.max(1), 1));
    for (p, m) in panels.iter().zip(mem) {
        let lines: Vec<(String, Vec<(f64, f64)>)> = m
            .by_node
            .iter()
            .enumerate()
            .map(|(node, v)| {
                (
                    format!("node {node}"),
                    t.iter().copied().zip(v.iter().map(|b| b / GIB)).collect(),
                )
            })
            .collect();
        draw_lines(p, &m.process, "GiB", &lines, None)?;
    }
    Ok(())
}

/// One panel per series `(name, points)`, stacked, under `title`.
pub(crate) fn draw_panels<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    title: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Res {
    let rest = titled(a, title)?;
    let panels = rest.split_evenly((series.len().max(1), 1));
    for (p, (name, pts)) in panels.iter().zip(series) {
        draw_lines(
            p,
            name,
            "per interval",
            &[(name.clone(), pts.clone())],
            None,
        )?;
    }
    Ok(())
}
