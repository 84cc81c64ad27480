//! Physics: what memory access costs where, and how contending streams share.
//!
//! The fluid model. Every task that touches memory presents a *demand*: a
//! rate cap (bytes/ns, which is GB/s) set by how many cache misses its core
//! keeps in flight over the latency it sees (Little's law), and what each of
//! its bytes loads: the memory controller of the node that holds it and
//! every directional link resource on the route between memory and CPU
//! ([`links`]: the machine's link bundles, fewest-hop routes), with the
//! reads for ownership, writebacks and coherence messages that writes and
//! remote lines cost ([`coherence`]). [`max_min_fair`] shares the resources
//! by progressive filling, as network and grid simulators do. Latency rises
//! with a memory controller's utilisation ([`loaded_latency`]). A line
//! another core still holds Modified costs a cache-to-cache transfer on top
//! of that latency ([`sharing`]), priced by the one contended-line model
//! ([`line`]) that kernel locks and the `sched_balance_running` flag use too.
//!
//! Lab switches: `numalab.link_routes`, `numalab.coherence_traffic`,
//! `numalab.dram_write_cost` and `numalab.memory_directory` ([`Switches`]), `numalab.shared_line_transfers`, `numalab.line_queueing`.
//!
//! Left out: caches (every access of a stream is a miss; a working set that
//! fits in the LLC is not faster), prefetchers beyond what the per-core
//! streaming bandwidth already contains, latency that rises with link load
//! (only memory-controller load raises it).

pub mod coherence;
pub mod costs;
mod fair;
pub use fair::FairScratch;
pub mod line;
pub mod links;
pub mod sharing;

use crate::kernel::NodeId;
use coherence::Coherence;
use links::Interconnect;
use numalab_knobs::{knob, Knobs};
use numalab_topology::Machine;

/// Bytes in a cache line.
pub const CACHE_LINE: f64 = 64.0;

/// Gain of the loaded-latency curve: latency = idle * (1 + G*u^2/(1-u)).
/// Source: the shape of Intel MLC loaded-latency curves (flat to ~60 %
/// utilisation, about 3x idle near 90 %); G = 1/4 gives 1.1x at 50 %, 3.0x at
/// 90 % and 5.5x at 95 %.
pub const LOADED_LATENCY_GAIN: f64 = 0.25;

/// Utilisation at which the loaded-latency curve stops rising (keeps it
/// finite at saturation).
pub const MAX_UTILISATION: f64 = 0.95;

/// The state of the fluid model between ticks: the resources, what each
/// could serve in the last tick and the latencies that follow. The engine
/// owns it and solves it at each tick; the kernel never reads it.
#[derive(Clone, Debug)]
pub struct Fluid {
    /// Shared resources.
    pub res: Resources,
    /// Loaded latency seen by a CPU on node `c` reading node `m`, ns.
    pub latency: Vec<Vec<f64>>,
    /// Memory-controller utilisation of each node in the last tick.
    pub mem_util: Vec<f64>,
    /// Share of demand each resource could serve in the last tick (<= 1).
    pub res_share: Vec<f64>,
    /// Bytes served by each node's memory over the run.
    pub node_traffic: Vec<f64>,
}

impl Fluid {
    /// An idle machine: idle latencies, nothing served yet.
    pub fn new(m: &Machine, sw: Switches) -> Fluid {
        let res = Resources::new(m, sw);
        let nn = m.nr_nodes();
        Fluid {
            latency: m.latency_ns.clone(),
            mem_util: vec![0.0; nn],
            res_share: vec![1.0; res.len()],
            node_traffic: vec![0.0; nn],
            res,
        }
    }
}

/// Index of a shared resource (memory controller or link).
pub type ResId = usize;

/// Which physics mechanisms a run has on (lab switches, `numalab.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switches {
    /// `numalab.link_routes`: links and routes as the machine has them.
    pub link_routes: bool,
    /// `numalab.coherence_traffic`: RFO, writeback and coherence messages.
    pub coherence_traffic: bool,
    /// `numalab.dram_write_cost`: a line written to DRAM costs its
    /// controller [`coherence::DRAM_WRITE_COST`] reads.
    pub dram_write_cost: bool,
    /// `numalab.memory_directory`: a line another package takes for
    /// writing costs its home a directory write.
    pub memory_directory: bool,
}

impl Default for Switches {
    /// As the knobs' defaults.
    fn default() -> Switches {
        Switches {
            link_routes: true,
            coherence_traffic: true,
            dram_write_cost: false,
            memory_directory: false,
        }
    }
}

impl Switches {
    /// The switches as the run's knobs set them.
    pub fn from_knobs(k: &Knobs) -> Switches {
        Switches {
            link_routes: k.get(knob::LINK_ROUTES),
            coherence_traffic: k.get(knob::COHERENCE_TRAFFIC),
            dram_write_cost: k.get(knob::DRAM_WRITE_COST),
            memory_directory: k.get(knob::MEMORY_DIRECTORY),
        }
    }
}

/// The resources of a machine, by index: one memory controller per node
/// (index = node id), then the directional link resources
/// ([`links::Interconnect`]).
#[derive(Clone, Debug)]
pub struct Resources {
    /// Capacity of each resource in bytes/ns.
    pub capacity: Vec<f64>,
    /// Human-readable name of each resource.
    pub name: Vec<String>,
    net: Interconnect,
    coherence: Coherence,
}

impl Resources {
    /// Builds the resource table of `m` under `sw`.
    pub fn new(m: &Machine, sw: Switches) -> Resources {
        let mut capacity = Vec::new();
        let mut name = Vec::new();
        for n in 0..m.nr_nodes() {
            capacity.push(m.bandwidth.node_gbps[n]);
            name.push(format!("mem{n}"));
        }
        let net = Interconnect::new(m, sw.link_routes, &mut capacity, &mut name);
        Resources {
            capacity,
            name,
            net,
            coherence: Coherence::new(m, sw.coherence_traffic)
                .with_dram(sw.dram_write_cost, sw.memory_directory),
        }
    }

    /// Resource index of node `n`'s memory controller.
    pub fn mem(&self, n: NodeId) -> ResId {
        n.index()
    }

    /// The link resources bytes cross from `mem_node`'s memory to a CPU on
    /// `cpu_node`, in order (empty on the same node).
    pub fn route(&self, mem_node: NodeId, cpu_node: NodeId) -> &[ResId] {
        self.net.route(mem_node.index(), cpu_node.index())
    }

    /// The first link bytes cross from `mem_node` to `cpu_node` (the one
    /// next to the memory), if any; [`Resources::route`] has them all.
    pub fn link(&self, mem_node: NodeId, cpu_node: NodeId) -> Option<ResId> {
        self.route(mem_node, cpu_node).first().copied()
    }

    /// Adds to `uses` the load of share `f` of an op's bytes living on
    /// `mem_node` and touched from `cpu_node`, `write` (0..=1) of them
    /// written by `stores`: memory, links and coherence messages
    /// ([`Coherence::line_traffic`]).
    pub fn traffic(
        &self,
        mem_node: NodeId,
        cpu_node: NodeId,
        f: f64,
        write: f64,
        stores: coherence::Stores,
        uses: &mut Vec<(ResId, f64)>,
    ) {
        self.coherence.line_traffic(
            &self.net,
            mem_node.index(),
            cpu_node.index(),
            self.mem(mem_node),
            f,
            write,
            stores,
            uses,
        );
    }

    /// Number of resources.
    pub fn len(&self) -> usize {
        self.capacity.len()
    }

    /// True when there are no resources.
    pub fn is_empty(&self) -> bool {
        self.capacity.is_empty()
    }
}

/// One flow's demand on the shared resources.
#[derive(Clone, Debug, Default)]
pub struct Demand {
    /// Largest rate the flow can reach alone, bytes/ns.
    pub cap: f64,
    /// `(resource, share)`: each byte of the flow loads `resource` by `share`
    /// bytes (the fraction of the flow's bytes that cross it). Shared, not
    /// copied: a task's demand at every tick is often the list it built at
    /// an earlier one (engine/exec.rs `TrafficMemo`).
    pub uses: std::rc::Rc<[(ResId, f64)]>,
}

/// Max-min fair rates by progressive filling: all unfrozen flows rise
/// together; a flow freezes when it reaches its cap or when a resource it
/// uses saturates. Returns one rate per demand, in bytes/ns.
///
/// Each round passes over the unfrozen flows only (in index order, so every
/// sum is formed as a pass over all of them would form it), and looks for
/// flows blocked by a saturated resource only in a round where one
/// saturates: residuals never grow, and every flow using a resource
/// freezes in the round it saturates, so no later round can find another.
///
/// When no resource can saturate (every resource's summed demand at the
/// flows' caps is below its capacity) the rounds only freeze flows at
/// their caps, and [`fair::uncapped_fill`] gives the same rates bit for
/// bit without a pass over the resources per round.
pub fn max_min_fair(capacity: &[f64], demands: &[Demand]) -> Vec<f64> {
    max_min_fair_with(capacity, demands, &mut FairScratch::default())
}

/// [`max_min_fair`] with a [`FairScratch`] kept from the last solve (the
/// engine's, once per tick): the same rates, found sooner when the flows'
/// caps keep their order.
pub fn max_min_fair_with(
    capacity: &[f64],
    demands: &[Demand],
    scratch: &mut FairScratch,
) -> Vec<f64> {
    if let Some(rate) = fair::uncapped_fill(capacity, demands, scratch) {
        return rate;
    }
    progressive_filling(capacity, demands)
}

/// [`max_min_fair`]'s general rounds, whatever saturates.
pub(crate) fn progressive_filling(capacity: &[f64], demands: &[Demand]) -> Vec<f64> {
    let mut rate = vec![0.0; demands.len()];
    let mut active: Vec<usize> = (0..demands.len())
        .filter(|&i| demands[i].cap > 0.0 || demands[i].cap.is_nan())
        .collect();
    let mut residual = capacity.to_vec();
    let mut weight = vec![0.0; capacity.len()];
    let mut saturated = vec![false; capacity.len()];
    let mut level = 0.0_f64;
    // Each round freezes at least one flow, so this ends.
    for _ in 0..=demands.len() {
        if active.is_empty() {
            break;
        }
        weight.iter_mut().for_each(|w| *w = 0.0);
        for &i in &active {
            for &(r, s) in demands[i].uses.iter() {
                weight[r] += s;
            }
        }
        // How far the common level can rise before something binds.
        let mut step = f64::INFINITY;
        for r in 0..residual.len() {
            if weight[r] > 0.0 {
                step = step.min(residual[r].max(0.0) / weight[r]);
            }
        }
        for &i in &active {
            step = step.min(demands[i].cap - level);
        }
        let step = step.max(0.0);
        level += step;
        let mut newly = false;
        for r in 0..residual.len() {
            residual[r] -= step * weight[r];
            let sat = residual[r] <= capacity[r] * 1e-9;
            newly |= sat && !saturated[r];
            saturated[r] = sat;
        }
        let mut kept = 0;
        for k in 0..active.len() {
            let i = active[k];
            let d = &demands[i];
            let capped = d.cap - level <= d.cap * 1e-9;
            if capped || (newly && d.uses.iter().any(|&(r, s)| s > 0.0 && saturated[r])) {
                rate[i] = level.min(d.cap);
            } else {
                active[kept] = i;
                kept += 1;
            }
        }
        active.truncate(kept);
    }
    rate
}

/// Latency at utilisation `u` of the memory controller, from idle latency.
pub fn loaded_latency(idle_ns: f64, u: f64) -> f64 {
    let u = u.clamp(0.0, MAX_UTILISATION);
    idle_ns * (1.0 + LOADED_LATENCY_GAIN * u * u / (1.0 - u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_flow_gets_its_cap_when_resources_are_ample() {
        let r = max_min_fair(
            &[100.0],
            &[Demand {
                cap: 10.0,
                uses: vec![(0, 1.0)].into(),
            }],
        );
        assert!((r[0] - 10.0).abs() < 1e-9);
    }

    #[test]
    fn saturated_controller_is_shared_equally() {
        let d = Demand {
            cap: 10.0,
            uses: vec![(0, 1.0)].into(),
        };
        let r = max_min_fair(&[12.0], &[d.clone(), d.clone(), d]);
        for x in &r {
            assert!((x - 4.0).abs() < 1e-9, "{r:?}");
        }
    }

    #[test]
    fn capped_flow_leaves_the_rest_to_others() {
        // Flow 0 can only do 2; flows 1 and 2 split the remaining 10.
        let r = max_min_fair(
            &[12.0],
            &[
                Demand {
                    cap: 2.0,
                    uses: vec![(0, 1.0)].into(),
                },
                Demand {
                    cap: 10.0,
                    uses: vec![(0, 1.0)].into(),
                },
                Demand {
                    cap: 10.0,
                    uses: vec![(0, 1.0)].into(),
                },
            ],
        );
        assert!((r[0] - 2.0).abs() < 1e-9);
        assert!((r[1] - 5.0).abs() < 1e-9 && (r[2] - 5.0).abs() < 1e-9);
    }

    #[test]
    fn flow_blocked_on_a_link_frees_the_controller_for_local_flows() {
        // Resource 0 = controller (20), resource 1 = link (4).
        // Remote flow crosses both; local flows only the controller.
        let remote = Demand {
            cap: 10.0,
            uses: vec![(0, 1.0), (1, 1.0)].into(),
        };
        let local = Demand {
            cap: 10.0,
            uses: vec![(0, 1.0)].into(),
        };
        let r = max_min_fair(&[20.0, 4.0], &[remote, local.clone(), local]);
        assert!((r[0] - 4.0).abs() < 1e-9, "{r:?}");
        assert!(
            (r[1] - 8.0).abs() < 1e-9 && (r[2] - 8.0).abs() < 1e-9,
            "{r:?}"
        );
    }

    #[test]
    fn no_resource_is_ever_oversubscribed() {
        let demands: Vec<Demand> = (0..17)
            .map(|i| Demand {
                cap: 1.0 + (i % 5) as f64,
                uses: vec![(i % 3, 0.5), ((i + 1) % 3, 0.5)].into(),
            })
            .collect();
        let cap = [7.0, 5.0, 11.0];
        let r = max_min_fair(&cap, &demands);
        for (res, &c) in cap.iter().enumerate() {
            let used: f64 = demands
                .iter()
                .zip(&r)
                .map(|(d, x)| {
                    d.uses
                        .iter()
                        .filter(|u| u.0 == res)
                        .map(|u| u.1 * x)
                        .sum::<f64>()
                })
                .sum();
            assert!(used <= c * (1.0 + 1e-6), "resource {res}: {used}");
        }
    }

    #[test]
    fn latency_rises_with_load_and_stays_finite() {
        assert_eq!(loaded_latency(100.0, 0.0), 100.0);
        assert!(loaded_latency(100.0, 0.5) > 100.0);
        assert!(loaded_latency(100.0, 0.9) > 2.5 * 100.0);
        assert!(loaded_latency(100.0, 2.0).is_finite());
    }
}
