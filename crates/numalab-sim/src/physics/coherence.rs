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
//! within some 15% of its all-read figure, which a pure write stream does
//! not (below, `numalab.dram_write_cost`).
//!
//! With the lab switch `numalab.coherence_traffic=0` a byte loads its memory
//! once and the route `m -> c` once, read or written (the model before).
//!
//! Two memory-side costs of writes, each a lab switch (default off):
//! - `numalab.dram_write_cost`: a line written to DRAM takes
//!   [`DRAM_WRITE_COST`] times a read's share of the controller (the bus
//!   turns around between reads and writes, and a write holds its bank for
//!   write recovery), calibrated from Intel MLC's read-write mixes;
//! - `numalab.memory_directory`: under directory coherence, a line a CPU
//!   of another package takes for writing costs its home one more line
//!   write, the memory directory update ([`DIRECTORY_WRITES`]).
//!
//! Left out: the directory writes of remote *reads* (a line read from
//! another socket is handed out Exclusive, which also sets the directory;
//! no measurement with units was found, and read bandwidth is what the
//! presets' link capacities are measured from); the directory cache
//! (HitME) that spares some updates; snoops for local lines under
//! broadcast snooping; ownership moving between caches (lines written by
//! several nodes: another model); link latency under load.

use super::links::Interconnect;
use super::ResId;
use numalab_topology::{Machine, Snoop};

/// Cache-line size the message cost is relative to, bytes.
const LINE: f64 = 64.0;

/// What one line written to DRAM costs its memory controller, in lines
/// read (dimensionless), with `numalab.dram_write_cost`. Source: Intel MLC
/// peak-injection bandwidth of one system by read-write mix
/// (hpcleuven/VscDocumentation `*_mlc.txt`; MLC counts the bytes at
/// memory, a store's read for ownership being one of the reads): if a
/// write costs `w` reads, a mix with read share `r` reaches `all-read /
/// (r + (1 - r) w)`. Ice Lake 8360Y: all reads 351.8 GB/s, 3:1 313.1,
/// 2:1 297.2, 1:1 291.8 give w = 1.49, 1.55, 1.41; the 21 mixes of the
/// seven Intel rows (Ivy Bridge EP to Ice Lake) give 1.26-1.73, median
/// 1.44, which is taken.
pub const DRAM_WRITE_COST: f64 = 1.44;

/// Line writes the home's memory serves for the directory when a CPU of
/// another package takes a line for writing, with
/// `numalab.memory_directory` (lines per line). Intel's memory directory
/// keeps two state bits per line in its ECC bits (J. McCalpin, "Memory
/// directories in Intel processors", 2023; Intel's Xeon Scalable
/// technical overview, "Directory-Based Coherency"), so marking a line
/// owned by another socket rewrites the line. Measured: PCM on a
/// 2-socket Skylake-SP, one core storing 8 B at a time over a 1 GB buffer
/// with NUMA off, so half its lines on each socket (Intel community
/// forum, "SKL - strange memory behavior"): the local socket's memory
/// read 1019 MB/s and wrote 1012 MB/s, the remote one read 1018 and wrote
/// 2016 — one more write per remote line.
pub const DIRECTORY_WRITES: f64 = 1.0;

/// How an op's writes reach memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// Controller cost of a written line, in reads
    /// ([`DRAM_WRITE_COST`] with `numalab.dram_write_cost`, else 1).
    pub write_cost: f64,
    /// Directory writes per line another package takes for writing
    /// ([`DIRECTORY_WRITES`] with `numalab.memory_directory` under
    /// directory coherence, else 0).
    pub directory_writes: f64,
}

impl Coherence {
    /// The machine's coherence, switched on or off.
    pub fn new(m: &Machine, on: bool) -> Coherence {
        Coherence {
            on,
            message: m.coherence.message_bytes / LINE,
            broadcast: m.coherence.snoop == Snoop::Broadcast,
            write_cost: 1.0,
            directory_writes: 0.0,
        }
    }

    /// The same with the memory-side costs of writes: `dram_write_cost`
    /// (`numalab.dram_write_cost`) and `directory`
    /// (`numalab.memory_directory`; only under directory coherence, and
    /// only with the coherence traffic on: without it a write is not an
    /// ownership request).
    pub fn with_dram(mut self, dram_write_cost: bool, directory: bool) -> Coherence {
        if dram_write_cost {
            self.write_cost = DRAM_WRITE_COST;
        }
        if directory && !self.broadcast {
            self.directory_writes = DIRECTORY_WRITES;
        }
        self
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
            // Written lines cost more only with `numalab.dram_write_cost`
            // (without it, the sum as before, bit for bit).
            let w = write.clamp(0.0, 1.0);
            let lines = if self.write_cost == 1.0 {
                1.0
            } else {
                1.0 + w * (self.write_cost - 1.0)
            };
            add(uses, mem_res, f * lines);
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
        // A written line owned by another package: the home rewrites it
        // to set its directory state.
        let directory = if net.package(mem) != net.package(cpu) {
            w * self.directory_writes
        } else {
            0.0
        };
        add(
            uses,
            mem_res,
            f * (read + (w + directory) * self.write_cost),
        );
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
        traffic_with(m, Coherence::new(m, on), mem, cpu, write, stores)
    }

    fn traffic_with(
        m: &Machine,
        coherence: Coherence,
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
        coherence.line_traffic(&net, mem, cpu, mem, 1.0, write, stores, &mut uses);
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

    fn mem_load(t: &[(String, f64)], node: usize) -> f64 {
        let want = format!("mem{node}");
        t.iter().filter(|(n, _)| *n == want).map(|x| x.1).sum()
    }

    #[test]
    fn dram_write_cost_weighs_written_lines_only() {
        let m = machine(2, "");
        let c = || Coherence::new(&m, true).with_dram(true, false);
        // A local whole-line write stream: one line written per line.
        let w = traffic_with(&m, c(), 1, 1, 1.0, Stores::FullLine);
        assert!((mem_load(&w, 1) - DRAM_WRITE_COST).abs() < 1e-12, "{w:?}");
        // Reads are what the capacity was measured with: unchanged.
        let r = traffic_with(&m, c(), 0, 1, 0.0, Stores::WriteAllocate);
        assert_eq!(r, traffic(&m, true, 0, 1, 0.0));
        // An ordinary store: the read for ownership plus the writeback.
        let rfo = traffic_with(&m, c(), 0, 0, 1.0, Stores::WriteAllocate);
        assert!((mem_load(&rfo, 0) - (1.0 + DRAM_WRITE_COST)).abs() < 1e-12);
        // Links carry the same bytes with and without it.
        let plain = traffic_by(&m, true, 0, 1, 1.0, Stores::FullLine);
        let costly = traffic_with(&m, c(), 0, 1, 1.0, Stores::FullLine);
        let links = |t: &[(String, f64)]| -> Vec<(String, f64)> {
            t.iter()
                .filter(|(n, _)| n.starts_with("link"))
                .cloned()
                .collect()
        };
        assert_eq!(links(&plain), links(&costly));
    }

    #[test]
    fn memory_directory_costs_the_home_a_write_per_remote_owned_line() {
        let m = machine(2, "");
        let c = || Coherence::new(&m, true).with_dram(false, true);
        // Remote ordinary stores: read for ownership, directory, writeback
        // (the PCM measurement: 1 read and 2 writes per remote line).
        let rfo = traffic_with(&m, c(), 0, 1, 1.0, Stores::WriteAllocate);
        assert!((mem_load(&rfo, 0) - 3.0).abs() < 1e-12, "{rfo:?}");
        // Remote whole-line stores: directory and writeback.
        let full = traffic_with(&m, c(), 0, 1, 1.0, Stores::FullLine);
        assert!((mem_load(&full, 0) - 2.0).abs() < 1e-12, "{full:?}");
        // Local writes and remote reads: no directory update modeled.
        let local = traffic_with(&m, c(), 1, 1, 1.0, Stores::FullLine);
        assert!((mem_load(&local, 1) - 1.0).abs() < 1e-12);
        let read = traffic_with(&m, c(), 0, 1, 0.0, Stores::WriteAllocate);
        assert!((mem_load(&read, 0) - 1.0).abs() < 1e-12);
        // Both switches: the directory write is a DRAM write too.
        let both = Coherence::new(&m, true).with_dram(true, true);
        let t = traffic_with(&m, both, 0, 1, 1.0, Stores::FullLine);
        assert!((mem_load(&t, 0) - 2.0 * DRAM_WRITE_COST).abs() < 1e-12);
    }

    #[test]
    fn memory_directory_stays_inside_a_package_and_off_under_broadcast() {
        // Two nodes of one package: the package's own caches track the
        // line, no directory write.
        let text = "[topology]\npackages = 1\nnodes_per_package = 2\ncores_per_node = 1\nthreads_per_core = 1\n[memory]\nper_node_gib = 1\n[latency]\nlocal_ns = 80\nremote_ns = 100\n[bandwidth]\nnode_gbps = 100\nlink_gbps = 30\n";
        let snc = parse_machine(text, "snc.toml").unwrap_or_else(|e| panic!("{e}"));
        let c = Coherence::new(&snc, true).with_dram(false, true);
        let t = traffic_with(&snc, c, 0, 1, 1.0, Stores::FullLine);
        assert!((mem_load(&t, 0) - 1.0).abs() < 1e-12, "{t:?}");
        let bc = machine(3, "snoop = \"broadcast\"\n");
        let c = Coherence::new(&bc, true).with_dram(false, true);
        let t = traffic_with(&bc, c, 0, 1, 1.0, Stores::FullLine);
        assert!((mem_load(&t, 0) - 1.0).abs() < 1e-12, "{t:?}");
    }
}
