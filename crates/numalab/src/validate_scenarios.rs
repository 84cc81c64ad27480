//! The catalogue of `numalab validate`: the scenarios (workload specs in
//! `crates/numalab/validate/*.toml`, embedded in the binary), the knob
//! settings each runs with on either side, and the built-in guests they
//! are written for. The scenarios of the project's patch series
//! ([`SERIES_SCENARIOS`]) run only on a kernel built from it
//! (`vm/patches/6.12/series`, `numalab validate --series`), with the
//! proposal's knob set in the guest and the model's switch that stands for
//! it in the model.
//!
//! Left out: scenarios for proposal 5 (its effect is a lock's contention
//! on hundreds of CPUs, which a 4-vCPU TCG guest cannot show) and proposal
//! 2's per-access latency (the real worker does not time its accesses).

/// A validation scenario.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    /// Name (the file stem).
    pub name: &'static str,
    /// The workload spec.
    pub text: &'static str,
    /// `--check` asserts `numalab_real::smoke::check_pinned` on its kernel
    /// record (pinned workers `worker.N` on node N, chunks `pft/chunkN`,
    /// cgroup `/pinned`, 4 KiB pages).
    pub check: bool,
    /// Run only when named (`--scenario`): a proposal's scenario that
    /// mainline refuses (e.g. a memory policy only the patch allows).
    pub on_request: bool,
    /// The built-in guest it is written for ([`GUESTS`]).
    pub guest: &'static str,
    /// Knobs the guest's `real run` sets (`--set` lines, the kernel's
    /// names: sysctls, debugfs files, `CGROUP:FILE`).
    pub kernel_sets: &'static [&'static str],
    /// The same settings in the model's names, set before `--set`.
    pub model_sets: &'static [&'static str],
    /// Runs only on the kernel of the project's patch series
    /// (`numalab validate --series`).
    pub series: bool,
}

/// The fields every scenario shares unless it says otherwise.
const PLAIN: Scenario = Scenario {
    name: "",
    text: "",
    check: false,
    on_request: false,
    guest: "guest-4n",
    kernel_sets: &[],
    model_sets: &[],
    series: false,
};

/// The scenarios, in order.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "pinned-4k",
        text: include_str!("../validate/pinned-4k.toml"),
        check: true,
        on_request: false,
        guest: "guest-4n",
        ..PLAIN
    },
    Scenario {
        name: "pinned-thp",
        text: include_str!("../validate/pinned-thp.toml"),
        check: false,
        on_request: false,
        guest: "guest-4n",
        ..PLAIN
    },
    Scenario {
        name: "unpinned",
        text: include_str!("../validate/unpinned.toml"),
        check: false,
        on_request: false,
        guest: "guest-4n",
        ..PLAIN
    },
    Scenario {
        name: "numa02-like",
        text: include_str!("../validate/numa02-like.toml"),
        check: false,
        on_request: false,
        guest: "guest-4n",
        ..PLAIN
    },
    Scenario {
        name: "shared-procs",
        text: include_str!("../validate/shared-procs.toml"),
        check: false,
        on_request: false,
        guest: "guest-4n",
        ..PLAIN
    },
    Scenario {
        name: "threadlocal-like",
        text: include_str!("../validate/threadlocal-like.toml"),
        check: false,
        on_request: false,
        guest: "guest-4n",
        ..PLAIN
    },
    Scenario {
        name: "p3-interleave-4k",
        text: include_str!("../validate/p3-interleave-4k.toml"),
        check: false,
        on_request: true,
        guest: "guest-4n",
        ..PLAIN
    },
    Scenario {
        name: "p3-interleave-thp",
        text: include_str!("../validate/p3-interleave-thp.toml"),
        check: false,
        on_request: true,
        guest: "guest-4n",
        ..PLAIN
    },
    Scenario {
        name: "fork-under-load",
        text: include_str!("../validate/fork-under-load.toml"),
        check: false,
        on_request: false,
        guest: "guest-2n2c",
        ..PLAIN
    },
    Scenario {
        name: "oversub",
        text: include_str!("../validate/oversub.toml"),
        check: false,
        on_request: false,
        guest: "guest-2n2c",
        ..PLAIN
    },
    Scenario {
        name: "sleepy",
        text: include_str!("../validate/sleepy.toml"),
        check: false,
        on_request: false,
        guest: "guest-2n2c",
        ..PLAIN
    },
    Scenario {
        name: "barrier-steps",
        text: include_str!("../validate/barrier-steps.toml"),
        check: false,
        on_request: false,
        guest: "guest-2n2c",
        ..PLAIN
    },
    Scenario {
        name: "low-memory",
        text: include_str!("../validate/low-memory.toml"),
        check: false,
        on_request: false,
        guest: "guest-2n2c",
        ..PLAIN
    },
    Scenario {
        name: "numa01-like",
        text: include_str!("../validate/numa01-like.toml"),
        check: false,
        on_request: false,
        guest: "guest-2n2c",
        ..PLAIN
    },
    Scenario {
        name: "unpinned-thp",
        text: include_str!("../validate/unpinned-thp.toml"),
        check: false,
        on_request: false,
        guest: "guest-2n2c",
        ..PLAIN
    },
];

/// The guest machine spec (TOML).
pub const GUEST_MACHINE: &str = include_str!("../validate/guest-4n.toml");

/// The built-in guests, by name, with their machine specs: `guest-4n`
/// (4 nodes x 1 vCPU, the default) and `guest-2n2c` (2 nodes x 2 vCPUs,
/// a core/LLC level inside each node).
pub const GUESTS: &[(&str, &str)] = &[
    ("guest-4n", GUEST_MACHINE),
    ("guest-2n2c", include_str!("../validate/guest-2n2c.toml")),
];

/// Proposal 4's settings: mode 4 (`NUMA_BALANCING_CGROUP`), the run's own
/// cgroup and `/on` enabled, `/off` not.
const P4_SETS: &[&str] = &[
    "kernel.numa_balancing=4",
    "/:cpu.numa_load_balance=1",
    "/on:cpu.numa_load_balance=1",
];

/// A scenario of the patch series on `guest`: `kernel` set in the guest,
/// `model` (the same settings in the model's names) in the model.
const fn series(
    name: &'static str,
    text: &'static str,
    guest: &'static str,
    kernel: &'static [&'static str],
    model: &'static [&'static str],
) -> Scenario {
    Scenario {
        name,
        text,
        guest,
        kernel_sets: kernel,
        model_sets: model,
        series: true,
        ..PLAIN
    }
}

/// Proposal 2's asynchronous scan; the knob has the same name on both sides.
const P2_ASYNC: &[&str] = &["kernel.numa_balancing_scan_async=1"];
/// Every random access timed (a real run does it only when asked).
const TIMED: &[&str] = &["numalab.access_latency=1"];
/// Both.
const TIMED_ASYNC: &[&str] = &[
    "numalab.access_latency=1",
    "kernel.numa_balancing_scan_async=1",
];

/// The scenarios of the patch series (`vm/patches/6.12/series`): each runs
/// a stock scenario's workload (or its own) with one proposal's knob set,
/// so its boots compare with the stock scenario's (stock against patched)
/// and with the model under the proposal's switch (kernel against model).
pub const SERIES_SCENARIOS: &[Scenario] = &[
    // Proposal 4: only the enabled cgroup is scanned and migrated.
    series(
        "p4-cgroup-on-off",
        include_str!("../validate/p4-cgroup-on-off.toml"),
        "guest-4n",
        P4_SETS,
        P4_SETS,
    ),
    // Proposal 2: pinned-4k with the scan on a kworker of the task's node.
    series("p2-scan-async", PINNED_4K, "guest-4n", P2_ASYNC, P2_ASYNC),
    // Proposal 2's own experiment, pmbench-like with every access timed,
    // synchronous against asynchronous scanning, on the guest whose nodes
    // keep a CPU free for the kworker (as the posting's 40 idle CPUs).
    series("p2-pmbench-sync", P2_PMBENCH, "guest-2n2c", TIMED, TIMED),
    series(
        "p2-pmbench-async",
        P2_PMBENCH,
        "guest-2n2c",
        TIMED_ASYNC,
        TIMED_ASYNC,
    ),
    // Proposal 1 (the 2013 series, mainline): each of p1-01's debugfs
    // switches off on its own, on a scenario where it matters. Without a
    // preferred node, or without the move to it, unpinned's threads are
    // moved by the load balancer alone.
    series(
        "p1-no-preferred-node",
        UNPINNED,
        "guest-4n",
        &["numa_balancing/numa_preferred_node=0"],
        &["numalab.numa_preferred_node=0"],
    ),
    series(
        "p1-no-migrate-on-select",
        UNPINNED,
        "guest-4n",
        &["numa_balancing/numa_migrate_on_select=0"],
        &["numalab.numa_migrate_on_select=0"],
    ),
    // Without classification no fault is shared, so shared-procs' two
    // processes form no numa group.
    series(
        "p1-no-fault-classify",
        SHARED_PROCS,
        "guest-4n",
        &["numa_balancing/numa_fault_classify=0"],
        &["numalab.numa_fault_classify=0"],
    ),
    // 3.9's scan rate (slower by 10 jiffies per fault that migrated
    // nothing, reset every 60 s) on pinned-4k, whose pages settle early.
    series(
        "p1-no-scan-adapt",
        PINNED_4K,
        "guest-4n",
        &["numa_balancing/numa_scan_adapt=0"],
        &["numalab.numa_scan_adapt=0"],
    ),
];

/// Workloads the series' scenarios share with the stock ones.
const PINNED_4K: &str = include_str!("../validate/pinned-4k.toml");
const UNPINNED: &str = include_str!("../validate/unpinned.toml");
const SHARED_PROCS: &str = include_str!("../validate/shared-procs.toml");
const P2_PMBENCH: &str = include_str!("../validate/p2-pmbench.toml");

/// Every scenario: the stock ones, then the series'.
pub fn all() -> impl Iterator<Item = &'static Scenario> {
    SCENARIOS.iter().chain(SERIES_SCENARIOS)
}
