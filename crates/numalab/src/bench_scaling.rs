//! `numalab bench --scaling`: how the model's cost grows with the machine
//! and with the memory a workload touches.
//!
//! Workflow:
//! 1. CPUs: NUMA01_THREADLOCAL with balancing on, at full scale, on the
//!    16-node `xl-8s-1024` preset and on copies of it with fewer cores per
//!    node (80, 160, 320, 640 and 1024 CPUs; 80 is 5 cores per node without
//!    SMT, the others keep 2 threads per core). The copies are written as
//!    machine spec files into a temporary directory.
//! 2. Memory: the same workload on `spr-4n` with 3, 12 and 48 GiB per
//!    process (6, 24 and 96 GiB touched), through its `size` parameter.
//! 3. Each point is a child process (bench.rs), so peak RSS is its own.
//!    The cost of a point is CPU seconds per modeled second (the model is
//!    single-threaded; CPU time does not grow when other work shares the
//!    machine); the exponent
//!    is the least-squares slope of log cost over log size (1 = linear),
//!    and the same for peak RSS.
//!
//! Left out: separating the cost per page touched from the cost per pass
//! (NUMA01_THREADLOCAL's passes are fixed, so more memory is also more
//! bytes streamed per pass).

use crate::bench::{self, Job, Options, Row};

/// CPUs of the scaling machines: (CPUs, cores per node, threads per core)
/// on 16 nodes.
const CPU_POINTS: &[(usize, u32, u32)] = &[
    (80, 5, 1),
    (160, 5, 2),
    (320, 10, 2),
    (640, 20, 2),
    (1024, 32, 2),
];

/// GiB per process of NUMA01_THREADLOCAL (two processes) on spr-4n.
const MEM_POINTS_GIB: &[u64] = &[3, 12, 48];

/// The scaling machine with `cores` cores per node and `threads` per core,
/// as spec text.
fn machine_variant(cores: u32, threads: u32) -> Result<String, String> {
    let base = numalab_topology::presets::preset_toml("xl-8s-1024")
        .ok_or("the xl-8s-1024 preset is missing")?;
    let mut t: toml::Table = base
        .parse()
        .map_err(|e| format!("xl-8s-1024 preset: {e}"))?;
    let cpus = 16 * cores * threads;
    t.insert("name".into(), format!("xl-16n-{cpus}").into());
    t.insert(
        "description".into(),
        format!("xl-8s-1024 with {cores} cores x {threads} threads per node ({cpus} CPUs), for numalab bench --scaling").into(),
    );
    let topo = t
        .get_mut("topology")
        .and_then(|v| v.as_table_mut())
        .ok_or("xl-8s-1024 preset: no [topology]")?;
    topo.insert("cores_per_node".into(), i64::from(cores).into());
    topo.insert("threads_per_core".into(), i64::from(threads).into());
    toml::to_string(&t).map_err(|e| format!("writing the machine variant: {e}"))
}

/// Least-squares slope of `ln y` over `ln x`.
pub fn exponent(points: &[(f64, f64)]) -> f64 {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return f64::NAN;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    sxy / sxx
}

/// CPU seconds per modeled second (CPU, not wall: robust to other load
/// on the machine; the model is single-threaded).
fn cost(r: &Row) -> f64 {
    r.best.cpu_s / r.best.modeled_s.max(1e-9)
}

fn rss_mib(r: &Row) -> f64 {
    r.best.peak_rss_bytes as f64 / (1u64 << 20) as f64
}

fn table(title: &str, unit: &str, xs: &[f64], rows: &[Row]) -> String {
    let mut s = format!(
        "== {title}\n{:>10} {:>10} {:>9} {:>9} {:>13} {:>9}\n",
        unit, "modeled s", "wall s", "cpu s", "cpu/modeled", "peak MiB"
    );
    for (x, r) in xs.iter().zip(rows) {
        s += &format!(
            "{:>10} {:>10.2} {:>9.2} {:>9.2} {:>13.4} {:>9.1}\n",
            x,
            r.best.modeled_s,
            r.best.wall_s,
            r.best.cpu_s,
            cost(r),
            rss_mib(r)
        );
    }
    let c: Vec<(f64, f64)> = xs.iter().zip(rows).map(|(x, r)| (*x, cost(r))).collect();
    let m: Vec<(f64, f64)> = xs.iter().zip(rows).map(|(x, r)| (*x, rss_mib(r))).collect();
    s += &format!(
        "fitted exponent: CPU per modeled second ~ {unit}^{:.2}, peak RSS ~ {unit}^{:.2}\n",
        exponent(&c),
        exponent(&m)
    );
    s
}

/// `numalab bench --scaling`.
pub fn scaling(o: &Options) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("numalab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let on = vec!["kernel.numa_balancing=1".to_string()];
    let mut cpu_jobs = Vec::new();
    for &(cpus, cores, threads) in CPU_POINTS {
        let machine = if (cores, threads) == (32, 2) {
            "xl-8s-1024".to_string()
        } else {
            let path = dir.join(format!("xl-16n-{cpus}.toml"));
            crate::out::write_file("bench machine", &path, &machine_variant(cores, threads)?)?;
            path.display().to_string()
        };
        cpu_jobs.push(Job {
            name: format!("{cpus} CPUs"),
            machine,
            workload: "numa01-threadlocal".into(),
            sets: on.clone(),
        });
    }
    let mem_jobs: Vec<Job> = MEM_POINTS_GIB
        .iter()
        .map(|g| Job {
            name: format!("{} GiB", 2 * g),
            machine: "spr-4n".into(),
            workload: format!("numa01-threadlocal:size={g}GiB"),
            sets: on.clone(),
        })
        .collect();
    // The temporary machine files go whether the runs succeed or not.
    let rows =
        bench::run_rows(&cpu_jobs, o).and_then(|cpu| Ok((cpu, bench::run_rows(&mem_jobs, o)?)));
    let _ = std::fs::remove_dir_all(&dir);
    let (cpu_rows, mem_rows) = rows?;
    let cpus: Vec<f64> = CPU_POINTS.iter().map(|p| p.0 as f64).collect();
    let gib: Vec<f64> = MEM_POINTS_GIB.iter().map(|g| (2 * g) as f64).collect();
    let mut s = format!(
        "numalab bench --scaling: NUMA01_THREADLOCAL, kernel.numa_balancing=1, --scale {}, seed {}, -j {}\n",
        o.scale, o.seed, o.jobs
    );
    s += &table(
        "CPUs (16 nodes; xl-8s-1024 and copies with fewer cores)",
        "CPUs",
        &cpus,
        &cpu_rows,
    );
    s += &table("memory touched (spr-4n)", "GiB", &gib, &mem_rows);
    crate::out::print(&s)?;
    if let Some(path) = &o.json {
        let all: Vec<&Row> = cpu_rows.iter().chain(&mem_rows).collect();
        let text = serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?;
        crate::out::write_file("--json", std::path::Path::new(path), &(text + "\n"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponent_recovers_a_power_law() {
        let pts: Vec<(f64, f64)> = [80.0, 160.0, 320.0, 640.0]
            .iter()
            .map(|&x: &f64| (x, 3.0 * x.powf(1.3)))
            .collect();
        assert!((exponent(&pts) - 1.3).abs() < 1e-9);
        assert!(exponent(&pts[..1]).is_nan());
    }

    #[test]
    fn machine_variants_have_the_asked_cpus_on_16_nodes() {
        for &(cpus, cores, threads) in CPU_POINTS {
            let text = machine_variant(cores, threads).expect("variant");
            let m = numalab_topology::spec::parse_machine(&text, "variant").expect("parses");
            assert_eq!(m.nr_cpus(), cpus);
            assert_eq!(m.nr_nodes(), 16);
        }
    }
}
