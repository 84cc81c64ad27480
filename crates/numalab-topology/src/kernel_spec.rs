//! The `[kernel]` table of a machine spec: how fast the machine does kernel
//! work (`cost_scale`) and what background activity its kernel runs beside
//! any workload (`background`).
//!
//! ```toml
//! [kernel]
//! cost_scale = 1.0            # every kernel cost of physics/costs.rs, x this
//! fault_cost_scale = 1.0      # first-touch faults only (absent: cost_scale)
//! hint_fault_cost_scale = 1.0 # NUMA hinting faults and their migrations (absent: cost_scale)
//! scan_cost_scale = 1.0       # task_numa_work's PTE scan (absent: cost_scale)
//! vcpu_preemption = { run_ms = 4.0, delay_ms = [1.0, 3.8, 4.8, 12.0, 44.0] } # a guest only
//! background = [              # absent: the defaults below; [] = a quiet machine
//!   { name = "kworker", per = "cpu", period_ms = 1000.0, runtime_us = 5.0 },
//! ]
//! ```
//!
//! `cost_scale` multiplies what the model charges for kernel work (page
//! faults, hinting faults, page-migration overheads, PTE scanning, task
//! migrations, balancing): 1 on native hardware, where the costs were
//! measured; larger on a machine whose kernel runs slower (an emulator).
//! Byte copies at the machine's own bandwidth are not scaled again.
//! `fault_cost_scale`, when given, replaces it for the first-touch fault
//! path (`do_anonymous_page`'s allocation, lock and map work), which an
//! emulator may slow far less than the rest: the 6.12 guest under TCG
//! spends about 39 us of system time per 4 KiB first touch, 30 of them
//! zeroing at the guest's own copy speed, where `task_numa_work` runs
//! about 180 times its native cost (docs/real.md M1).
//! `hint_fault_cost_scale`, when given, replaces it for the NUMA hinting
//! fault path (`do_numa_page` with the migration it does): the same guest
//! spends ~250 us on a hinting fault that copies a 4 KiB page, about 60
//! times the model's native charge (docs/real.md M1).
//! `scan_cost_scale`, when given, replaces it for `task_numa_work`'s pass
//! (its fixed cost and `change_prot_numa`'s per-PTE walk): the guest's
//! scan of a 256 MB window takes ~120 ms, about 40 times the model's
//! native 3 ms, where its balancing passes take about 180 times theirs.
//!
//! `vcpu_preemption` describes a virtual machine whose vCPUs time-share the
//! host's cores: a stretch of guest kernel work of c ns is cut by the
//! host with probability c / `run_ms`, and then lasts longer by a delay
//! drawn from `delay_ms`, the quantiles (0, 25, 50, 75 and 100 %) of how
//! long the host kept the vCPU off. The model applies it where the guest
//! kernel decides by a duration it measured itself: the newly idle
//! balance's cost (kernel/sched/balance.rs `update_newidle_cost`). Absent
//! on bare metal.
//!
//! Background tasks are kernel threads that wake every `period_ms`, run
//! `runtime_us` of CPU work (times `cost_scale`: it is kernel work) and
//! sleep again, one per CPU (`per = "cpu"`, bound to it), per node (bound
//! to the node's CPUs) or one for the machine (unbound). Their first wakeup
//! is at a seeded random point of their period, so runs stay deterministic.
//!
//! Left out: activity that depends on the workload's own behaviour
//! (ksoftirqd under softirq overload, kswapd under reclaim, writeback
//! flushers), interrupts, and the sizes of any of these on a specific
//! machine: the defaults are one set of figures for every machine.

use crate::TopologyError;
use serde::{Deserialize, Serialize};

/// Where a background task runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackgroundPer {
    /// One per CPU, bound to it (`kworker/N`, `migration/N`).
    Cpu,
    /// One per node with CPUs, bound to its CPUs (`kcompactdN`).
    Node,
    /// One for the machine, unbound (`rcu_preempt`, `khugepaged`).
    Machine,
}

/// One kind of periodic background work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Background {
    /// Task name (`comm`).
    pub name: String,
    /// One per CPU, per node or for the machine.
    pub per: BackgroundPer,
    /// Time between wakeups, ms.
    pub period_ms: f64,
    /// CPU work per wakeup on native hardware, us (scaled by `cost_scale`).
    pub runtime_us: f64,
    /// Its work holds a reference on every workload process's mm while it
    /// runs (a `/proc/PID/numa_maps` reader: `mmget_not_zero` in
    /// fs/proc/task_mmu.c `m_start`, `mmput` in `m_stop`), so
    /// `mm_users` counts it (lab switch `numalab.proc_mm_refs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mm_refs: bool,
}

/// How a virtual machine's vCPUs time-share the host's cores, as the
/// guest's own clock sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VcpuPreemption {
    /// Guest time a vCPU runs, on average, between the host taking it
    /// off, ms.
    pub run_ms: f64,
    /// Quantiles (0, 25, 50, 75, 100 %) of how long the host keeps it off
    /// once it does, ms.
    pub delay_ms: [f64; 5],
}

/// The kernel parameters of a machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelParams {
    /// Speed of kernel work relative to the native hardware the costs in
    /// physics/costs.rs come from (1.0 = native; 100 = 100x slower).
    pub cost_scale: f64,
    /// The same for the first-touch fault path alone; `None`: `cost_scale`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault_cost_scale: Option<f64>,
    /// The same for the NUMA hinting fault path (the fault and the
    /// migration it does); `None`: `cost_scale`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint_fault_cost_scale: Option<f64>,
    /// The same for `task_numa_work`'s scan pass; `None`: `cost_scale`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_cost_scale: Option<f64>,
    /// A guest's vCPUs taken off by the host; `None`: bare metal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vcpu_preemption: Option<VcpuPreemption>,
    /// Periodic background work.
    pub background: Vec<Background>,
}

impl Default for KernelParams {
    fn default() -> Self {
        KernelParams {
            cost_scale: 1.0,
            fault_cost_scale: None,
            hint_fault_cost_scale: None,
            scan_cost_scale: None,
            vcpu_preemption: None,
            background: default_background(),
        }
    }
}

/// The background work every machine has unless its spec says otherwise.
/// Periods are kernel defaults (sources per entry); runtimes are a
/// modeling choice (no per-machine measurement): a few microseconds for
/// bookkeeping work, half a millisecond for a khugepaged scan pass.
pub fn default_background() -> Vec<Background> {
    let b = |name: &str, per, period_ms, runtime_us| Background {
        name: name.to_string(),
        per,
        period_ms,
        runtime_us,
        mm_refs: false,
    };
    vec![
        // mm/vmstat.c: vmstat_update re-queues itself on every CPU each
        // sysctl_stat_interval (HZ: 1 s); refresh_cpu_vm_stats folds the
        // per-CPU counters (runtime: modeling choice).
        b("kworker/vmstat", BackgroundPer::Cpu, 1000.0, 5.0),
        // kernel/watchdog.c: the softlockup timer queues softlockup_fn on
        // the CPU's stopper (migration/N) every sample_period =
        // watchdog_thresh (10 s) x 2 / 5 = 4 s.
        b("migration/watchdog", BackgroundPer::Cpu, 4000.0, 2.0),
        // kernel/rcu/tree.c: the grace-period kthread waits
        // jiffies_till_first_fqs (3 jiffies at HZ=250: 12 ms) between
        // force-quiescent-state scans while a grace period is in flight.
        b("rcu_preempt", BackgroundPer::Machine, 12.0, 3.0),
        // mm/compaction.c: kcompactd wakes every
        // HPAGE_FRAG_CHECK_INTERVAL_MSEC (500 ms) to check proactive
        // compaction.
        b("kcompactd", BackgroundPer::Node, 500.0, 2.0),
        // mm/khugepaged.c: khugepaged_scan_sleep_millisecs = 10000, up to
        // khugepaged_pages_to_scan (4096 pages) per pass.
        b("khugepaged", BackgroundPer::Machine, 10_000.0, 500.0),
    ]
}

/// The `[kernel]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KernelSpec {
    cost_scale: Option<f64>,
    fault_cost_scale: Option<f64>,
    hint_fault_cost_scale: Option<f64>,
    scan_cost_scale: Option<f64>,
    vcpu_preemption: Option<VcpuPreemption>,
    background: Option<Vec<Background>>,
}

/// Checks and resolves the `[kernel]` table (absent: the defaults).
pub(crate) fn resolve_kernel(
    spec: Option<KernelSpec>,
    origin: &str,
) -> Result<KernelParams, TopologyError> {
    let err = |field: String, message: String| TopologyError::Field {
        origin: origin.to_string(),
        field,
        message,
    };
    let Some(spec) = spec else {
        return Ok(KernelParams::default());
    };
    let cost_scale = spec.cost_scale.unwrap_or(1.0);
    if !cost_scale.is_finite() || !(1e-3..=1e6).contains(&cost_scale) {
        return Err(err(
            "kernel.cost_scale".into(),
            format!("must be in [0.001, 1000000], got {cost_scale}"),
        ));
    }
    for (name, v) in [
        ("fault_cost_scale", spec.fault_cost_scale),
        ("hint_fault_cost_scale", spec.hint_fault_cost_scale),
        ("scan_cost_scale", spec.scan_cost_scale),
    ] {
        if let Some(f) = v {
            if !f.is_finite() || !(1e-3..=1e6).contains(&f) {
                return Err(err(
                    format!("kernel.{name}"),
                    format!("must be in [0.001, 1000000], got {f}"),
                ));
            }
        }
    }
    if let Some(v) = &spec.vcpu_preemption {
        if !v.run_ms.is_finite() || v.run_ms <= 0.0 {
            return Err(err(
                "kernel.vcpu_preemption.run_ms".into(),
                format!("must be a positive number of ms, got {}", v.run_ms),
            ));
        }
        let d = v.delay_ms;
        if d.iter().any(|x| !x.is_finite() || *x < 0.0) || d.windows(2).any(|w| w[0] > w[1]) {
            return Err(err(
                "kernel.vcpu_preemption.delay_ms".into(),
                format!("must be five non-decreasing quantiles >= 0 ms, got {d:?}"),
            ));
        }
    }
    let background = spec.background.unwrap_or_else(default_background);
    for (i, b) in background.iter().enumerate() {
        if !b.period_ms.is_finite() || b.period_ms < 1.0 {
            return Err(err(
                format!("kernel.background[{i}].period_ms"),
                format!("must be at least 1 ms, got {}", b.period_ms),
            ));
        }
        if !b.runtime_us.is_finite()
            || b.runtime_us < 0.0
            || b.runtime_us * 1e-3 * cost_scale >= b.period_ms
        {
            return Err(err(
                format!("kernel.background[{i}].runtime_us"),
                format!(
                    "must be >= 0 and, times cost_scale, shorter than the period, got {}",
                    b.runtime_us
                ),
            ));
        }
        if b.name.is_empty() {
            return Err(err(
                format!("kernel.background[{i}].name"),
                "must not be empty".into(),
            ));
        }
    }
    Ok(KernelParams {
        cost_scale,
        fault_cost_scale: spec.fault_cost_scale,
        hint_fault_cost_scale: spec.hint_fault_cost_scale,
        scan_cost_scale: spec.scan_cost_scale,
        vcpu_preemption: spec.vcpu_preemption,
        background,
    })
}

/// The `[kernel]` table of `k`, or nothing when it is the default.
pub(crate) fn render_kernel(k: &KernelParams) -> String {
    if *k == KernelParams::default() {
        return String::new();
    }
    let mut out = format!(
        "\n[kernel]\ncost_scale = {}\n",
        crate::toml_out::toml_f64(k.cost_scale)
    );
    if let Some(f) = k.fault_cost_scale {
        out.push_str(&format!(
            "fault_cost_scale = {}\n",
            crate::toml_out::toml_f64(f)
        ));
    }
    if let Some(f) = k.hint_fault_cost_scale {
        out.push_str(&format!(
            "hint_fault_cost_scale = {}\n",
            crate::toml_out::toml_f64(f)
        ));
    }
    if let Some(f) = k.scan_cost_scale {
        out.push_str(&format!(
            "scan_cost_scale = {}\n",
            crate::toml_out::toml_f64(f)
        ));
    }
    if let Some(v) = &k.vcpu_preemption {
        let d: Vec<String> = v
            .delay_ms
            .iter()
            .map(|&x| crate::toml_out::toml_f64(x))
            .collect();
        out.push_str(&format!(
            "vcpu_preemption = {{ run_ms = {}, delay_ms = [{}] }}\n",
            crate::toml_out::toml_f64(v.run_ms),
            d.join(", ")
        ));
    }
    out.push_str("background = [\n");
    for b in &k.background {
        let per = match b.per {
            BackgroundPer::Cpu => "cpu",
            BackgroundPer::Node => "node",
            BackgroundPer::Machine => "machine",
        };
        let mut extra = String::new();
        if b.mm_refs {
            extra.push_str(", mm_refs = true");
        }
        out.push_str(&format!(
            "  {{ name = {}, per = \"{per}\", period_ms = {}, runtime_us = {}{extra} }},\n",
            crate::toml_out::toml_str(&b.name),
            crate::toml_out::toml_f64(b.period_ms),
            crate::toml_out::toml_f64(b.runtime_us)
        ));
    }
    out.push_str("]\n");
    out
}

#[cfg(test)]
mod tests {
    use crate::spec::{parse_machine, to_toml};

    const BASE: &str = "[topology]\npackages = 1\nnodes_per_package = 2\ncores_per_node = 2\nthreads_per_core = 1\n[memory]\nper_node_gib = 1\n[latency]\nlocal_ns = 80\nremote_ns = 130\n[bandwidth]\nnode_gbps = 50\n";

    #[test]
    fn the_path_scales_are_optional_checked_and_written_back() {
        let m = parse_machine(&format!("{BASE}[kernel]\ncost_scale = 180\n"), "t").unwrap();
        let k = &m.kernel;
        assert_eq!(
            (
                k.fault_cost_scale,
                k.hint_fault_cost_scale,
                k.scan_cost_scale
            ),
            (None, None, None)
        );
        // Each path's own scale: read, written back, and refused out of range.
        type Get = fn(&super::KernelParams) -> Option<f64>;
        let paths: [(&str, f64, &str, Get); 3] = [
            ("fault_cost_scale", 8.0, "-1", |k| k.fault_cost_scale),
            ("hint_fault_cost_scale", 60.0, "0", |k| {
                k.hint_fault_cost_scale
            }),
            ("scan_cost_scale", 40.0, "1e9", |k| k.scan_cost_scale),
        ];
        for (name, v, bad, get) in paths {
            let spec = format!("{BASE}[kernel]\ncost_scale = 180\n{name} = {v}\n");
            let m = parse_machine(&spec, "t").unwrap();
            assert_eq!(get(&m.kernel), Some(v), "{name}");
            assert_eq!(parse_machine(&to_toml(&m), "t").unwrap().kernel, m.kernel);
            let e = parse_machine(&format!("{BASE}[kernel]\n{name} = {bad}\n"), "t")
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("kernel.{name}")), "{e}");
        }
    }

    #[test]
    fn vcpu_preemption_is_optional_checked_and_written_back() {
        assert_eq!(
            parse_machine(BASE, "t").unwrap().kernel.vcpu_preemption,
            None
        );
        let spec = format!(
            "{BASE}[kernel]\ncost_scale = 180\nvcpu_preemption = {{ run_ms = 4, delay_ms = [1, 3.8, 4.8, 12, 44] }}\n"
        );
        let m = parse_machine(&spec, "t").unwrap();
        let v = m.kernel.vcpu_preemption.clone().expect("given");
        assert_eq!(v.run_ms, 4.0);
        assert_eq!(v.delay_ms, [1.0, 3.8, 4.8, 12.0, 44.0]);
        assert_eq!(parse_machine(&to_toml(&m), "t").unwrap().kernel, m.kernel);
        for (bad, field) in [
            ("run_ms = 0, delay_ms = [1, 2, 3, 4, 5]", "run_ms"),
            ("run_ms = 4, delay_ms = [1, 3, 2, 4, 5]", "delay_ms"),
            ("run_ms = 4, delay_ms = [-1, 2, 3, 4, 5]", "delay_ms"),
        ] {
            let e = parse_machine(
                &format!("{BASE}[kernel]\nvcpu_preemption = {{ {bad} }}\n"),
                "t",
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains(&format!("kernel.vcpu_preemption.{field}")),
                "{e}"
            );
        }
        let e = parse_machine(
            &format!("{BASE}[kernel]\nvcpu_preemption = {{ run_ms = 4 }}\n"),
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("delay_ms"), "{e}");
    }

    #[test]
    fn absent_kernel_table_gives_native_speed_and_the_default_background() {
        let m = parse_machine(BASE, "t").unwrap();
        assert_eq!(m.kernel.cost_scale, 1.0);
        assert_eq!(m.kernel.background, super::default_background());
        assert!(m
            .kernel
            .background
            .iter()
            .all(|b| b.runtime_us * 1e-3 < b.period_ms));
    }

    #[test]
    fn kernel_table_is_read_checked_and_written_back() {
        let text = format!(
            "{BASE}[kernel]\ncost_scale = 50.0\nbackground = [ {{ name = \"kw\", per = \"node\", period_ms = 100.0, runtime_us = 20.0 }} ]\n"
        );
        let m = parse_machine(&text, "t").unwrap();
        assert_eq!(m.kernel.cost_scale, 50.0);
        assert_eq!(m.kernel.background.len(), 1);
        assert_eq!(m.kernel.background[0].per, super::BackgroundPer::Node);
        let back = parse_machine(&to_toml(&m), "t").unwrap();
        assert_eq!(back.kernel, m.kernel);
        // A quiet machine.
        let q = parse_machine(&format!("{BASE}[kernel]\nbackground = []\n"), "t").unwrap();
        assert!(q.kernel.background.is_empty());
        // Bad values name their field.
        for (bad, field) in [
            ("cost_scale = 0.0", "kernel.cost_scale"),
            ("cost_scale = -3.0", "kernel.cost_scale"),
            (
                "background = [ { name = \"x\", per = \"cpu\", period_ms = 1.0, runtime_us = 2000.0 } ]",
                "kernel.background[0].runtime_us",
            ),
            (
                "background = [ { name = \"x\", per = \"cpu\", period_ms = 0.5, runtime_us = 1.0 } ]",
                "kernel.background[0].period_ms",
            ),
        ] {
            let e = parse_machine(&format!("{BASE}[kernel]\n{bad}\n"), "t").unwrap_err();
            assert!(e.to_string().contains(field), "{bad}: {e}");
        }
        let e = parse_machine(&format!("{BASE}[kernel]\nspeed = 2.0\n"), "t").unwrap_err();
        assert!(e.to_string().contains("speed"), "{e}");
    }
}
