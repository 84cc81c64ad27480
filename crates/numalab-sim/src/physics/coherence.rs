//! Traffic as coherence makes it: what one byte a task reads or writes
//! loads, on the memory controller and on each direction of the links.
//!
//! Per cache line of memory node `m` touched from a CPU on node `c`:
//! - a read moves the line from `m`'s memory along the route `m -> c`, and
//!   when `m != c` a request message goes the other way (`c -> m`);
//! - a write by an ordinary, write-allocate store ([`Stores::WriteAllocate`]:
//!   the writes of random phases) is a read for ownership (as a read:
//!   request toward `m`, data toward `c`) and, when the dirty line is
//!   evicted, a writeback: the line back along `c -> m` into `m`'s memory
//!   and a completion message toward `c`. Memory serves the line twice
//!   (read, then write).
//! - a write by whole-line stores ([`Stores::FullLine`]: the workload's
//!   `write` streams, `bzero`/`memset` of large buffers, which glibc does
//!   with `rep stosb` fast-string stores or non-temporal stores; both write
//!   whole lines without reading them first: Intel SDM vol. 3A §8.2.4,
//!   "Out-of-Order Stores For String Operations": in fast-string mode the
//!   processor issues an invalidation for each destination line, not a
//!   read) is an invalidation (a request toward `m`, an acknowledgement
//!   back) and the writeback: the line along `c -> m` into `m`'s memory and
//!   a completion message back. Memory serves it once.
//! - under broadcast snooping (`[coherence] snoop = "broadcast"`) the home
//!   node snoops every package other than its own and the requester's, for
//!   each remote line: a snoop message out and a response back.
//!
//! A message costs `coherence.message_bytes` of link bandwidth (machine
//! spec, default one QPI header flit, 64/9 B). Link capacities are derived
//! from measured remote-read bandwidth, which already contains the read
//! path's own overhead, so a pure remote read stream reaches the measured
//! figure. Memory serves reads and writebacks from one capacity
//! (`node_gbps`, measured all-read): Intel MLC's 1:1 read-write mix comes
//! within some 15% of its all-read figure.
//!
//! With the lab switch `numalab.coherence_traffic=0` a byte loads its memory
//! once and the route `m -> c` once, read or written (the model before).
//!
//! Left out: the directory's own memory writes (Intel keeps it in ECC bits); snoops for
//! local lines under broadcast snooping; ownership moving between caches
//! (lines written by several nodes: another model); link latency under load.

use super::links::Interconnect;
use super::ResId;
use numalab_topology::{Machine, Snoop};

/// Cache-line size the message cost is relative to, bytes.
const LINE: f64 = 64.0;

/// How an op's writes reach memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stores {
    /// Ordinary stores: the line is read for ownership, then written back.
    WriteAllocate,
    /// Whole-line stores (fast-string `rep stosb`, non-temporal): no read
    /// for ownership, the line is written once.
    FullLine,
}

/// The coherence parameters of a run.
#[derive(Clone, Debug)]
pub struct Coherence {
    /// RFO, writeback and messages on (`numalab.coherence_traffic=1`).
    pub on: bool,
    /// Link cost of one message as a fraction of a line.
    pub message: f64,
    /// Broadcast snooping of the other packages.
    pub broadcast: bool,
}

impl Coherence {
    /// The machine's coherence, switched on or off.
    pub fn new(m: &Machine, on: bool) -> Coherence {
        Coherence {
            on,
            message: m.coherence.message_bytes / LINE,
            broadcast: m.coherence.snoop == Snoop::Broadcast,
        }
    }

    /// Adds to `uses` what share `f` of an op's bytes loads when they live
    /// on node `mem` (memory controller `mem_res`) and are touched from a
    /// CPU on node `cpu`, `write` of them (0..=1) written by `stores`:
    /// resource -> bytes per byte of the op.
    #[allow(clippy::too_many_arguments)]
    pub fn line_traffic(
        &self,
        net: &Interconnect,
        mem: usize,
        cpu: usize,
        mem_res: ResId,
        f: f64,
        write: f64,
        stores: Stores,
        uses: &mut Vec<(ResId, f64)>,
    ) {
        if !self.on {
            add(uses, mem_res, f);
            for &r in net.route(mem, cpu) {
                add(uses, r, f);
            }
            return;
        }
        let w = write.clamp(0.0, 1.0);
        // Lines read from memory: every line, except those whole-line
        // stores write without reading; those send an invalidation
        // (request and acknowledgement) in place of the read.
        let (read, inval) = match stores {
            Stores::WriteAllocate => (1.0, 0.0),
            Stores::FullLine => (1.0 - w, w),
        };
        add(uses, mem_res, f * (read + w));
        if mem == cpu {
            return;
        }
        let msg = self.message;
        // Toward the CPU: the lines read (reads, RFOs), invalidation
        // acknowledgements, a writeback's completion.
        for &r in net.route(mem, cpu) {
            add(uses, r, f * (read + (inval + w) * msg));
        }
        // Toward the home: read and invalidation requests, a writeback's
        // line.
        for &r in net.route(cpu, mem) {
            add(uses, r, f * ((read + inval) * msg + w));
        }
        if self.broadcast {
            let (pm, pc) = (net.package(mem), net.package(cpu));
            for p in (0..net.nr_packages()).filter(|&p| p != pm && p != pc) {
                let other = net.package_node(p);
                for &r in net.route(mem, other) {
                    add(uses, r, f * msg);
                }
                for &r in net.route(other, mem) {
                    add(uses, r, f * msg);
                }
            }
        }
    }
}

/// Adds `s` to resource `r`'s share in `uses`, one entry per resource (in
/// order of first use, so the result is deterministic).
pub fn add(uses: &mut Vec<(ResId, f64)>, r: ResId, s: f64) {
    match uses.iter_mut().find(|u| u.0 == r) {
        Some(u) => u.1 += s,
        None => uses.push((r, s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topology::spec::parse_machine;

    fn machine(packages: usize, extra: &str) -> Machine {
        let text = format!(
            "[topology]\npackages = {packages}\nnodes_per_package = 1\ncores_per_node = 1\nthreads_per_core = 1\n[memory]\nper_node_gib = 1\n[latency]\nlocal_ns = 80\nremote_ns = 140\n[bandwidth]\nnode_gbps = 100\nlink_gbps = 30\n[coherence]\nmessage_bytes = 8\n{extra}"
        );
        parse_machine(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn traffic(m: &Machine, on: bool, mem: usize, cpu: usize, write: f64) -> Vec<(String, f64)> {
        traffic_by(m, on, mem, cpu, write, Stores::WriteAllocate)
    }

    fn traffic_by(
        m: &Machine,
        on: bool,
        mem: usize,
        cpu: usize,
        write: f64,
        stores: Stores,
    ) -> Vec<(String, f64)> {
        let (mut cap, mut name) = (
            vec![100.0; m.nr_nodes()],
            (0..m.nr_nodes())
                .map(|n| format!("mem{n}"))
                .collect::<Vec<_>>(),
        );
        let net = Interconnect::new(m, true, &mut cap, &mut name);
        let mut uses = Vec::new();
        Coherence::new(m, on).line_traffic(&net, mem, cpu, mem, 1.0, write, stores, &mut uses);
        uses.into_iter()
            .map(|(r, s)| (name[r].clone(), s))
            .collect()
    }

    #[test]
    fn remote_read_loads_data_toward_the_reader_and_a_request_back() {
        let m = machine(2, "");
        let t = traffic(&m, true, 0, 1, 0.0);
        assert_eq!(
            t,
            [
                ("mem0".to_string(), 1.0),
                ("link-pkg0->pkg1".to_string(), 1.0),
                ("link-pkg1->pkg0".to_string(), 0.125),
            ]
        );
    }

    #[test]
    fn remote_write_loads_both_directions_and_memory_twice() {
        let m = machine(2, "");
        let t = traffic(&m, true, 0, 1, 1.0);
        assert_eq!(
            t,
            [
                ("mem0".to_string(), 2.0),
                ("link-pkg0->pkg1".to_string(), 1.125),
                ("link-pkg1->pkg0".to_string(), 1.125),
            ]
        );
        // Switched off: one direction, memory once, as before.
        let off = traffic(&m, false, 0, 1, 1.0);
        assert_eq!(
            off,
            [
                ("mem0".to_string(), 1.0),
                ("link-pkg0->pkg1".to_string(), 1.0)
            ]
        );
    }

    #[test]
    fn whole_line_stores_write_memory_once_toward_the_home() {
        let m = machine(2, "");
        let t = traffic_by(&m, true, 0, 1, 1.0, Stores::FullLine);
        assert_eq!(
            t,
            [
                ("mem0".to_string(), 1.0),
                ("link-pkg0->pkg1".to_string(), 0.25),
                ("link-pkg1->pkg0".to_string(), 1.125),
            ]
        );
        // Half written: the read half is read as usual.
        let half = traffic_by(&m, true, 1, 1, 0.5, Stores::FullLine);
        assert_eq!(half, [("mem1".to_string(), 1.0)]);
    }

    #[test]
    fn local_lines_load_no_link_and_writes_are_written_back() {
        let m = machine(2, "");
        assert_eq!(traffic(&m, true, 1, 1, 0.5), [("mem1".to_string(), 1.5)]);
    }

    #[test]
    fn broadcast_snoops_the_third_package_and_directory_does_not() {
        let dir = machine(3, "snoop = \"directory\"\n");
        assert!(!traffic(&dir, true, 0, 1, 0.0)
            .iter()
            .any(|(n, _)| n.contains("pkg2")));
        let bc = machine(3, "snoop = \"broadcast\"\n");
        let t = traffic(&bc, true, 0, 1, 0.0);
        let get = |want: &str| t.iter().find(|(n, _)| n == want).map(|x| x.1);
        assert_eq!(get("link-pkg0->pkg2"), Some(0.125));
        assert_eq!(get("link-pkg2->pkg0"), Some(0.125));
    }
}
