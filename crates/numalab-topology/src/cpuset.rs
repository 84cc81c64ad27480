//! CPU sets and node masks, with the kernel's cpulist syntax ("0-3,8,10-11").
//!
//! Models `struct cpumask` / `nodemask_t` as plain bitsets. Leaves out the
//! kernel's fixed NR_CPUS sizing: a set grows to whatever CPU id it holds.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A set of CPU ids (a `cpumask`).
#[derive(Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuSet {
    words: Vec<u64>,
}

impl Clone for CpuSet {
    fn clone(&self) -> Self {
        CpuSet {
            words: self.words.clone(),
        }
    }

    /// Into the room `self` already has: the balancer copies a domain's
    /// span into a reused set at every pass (`env->cpus`).
    fn clone_from(&mut self, source: &Self) {
        self.words.clone_from(&source.words);
    }
}

impl CpuSet {
    /// The empty set.
    #[inline]
    pub fn new() -> Self {
        Self::default()
    }

    /// A set holding `0..n`.
    pub fn first_n(n: usize) -> Self {
        let mut s = Self::new();
        for c in 0..n {
            s.insert(c);
        }
        s
    }

    /// Adds `cpu`.
    #[inline]
    pub fn insert(&mut self, cpu: usize) {
        let w = cpu / 64;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (cpu % 64);
    }

    /// Removes `cpu`.
    pub fn remove(&mut self, cpu: usize) {
        if let Some(w) = self.words.get_mut(cpu / 64) {
            *w &= !(1u64 << (cpu % 64));
        }
        self.trim();
    }

    /// True when `cpu` is in the set.
    #[inline]
    pub fn contains(&self, cpu: usize) -> bool {
        self.words
            .get(cpu / 64)
            .is_some_and(|w| w & (1u64 << (cpu % 64)) != 0)
    }

    /// Number of CPUs in the set (`cpumask_weight`).
    #[inline]
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// True when no CPU is in the set.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Lowest CPU in the set (`cpumask_first`).
    #[inline]
    pub fn first(&self) -> Option<usize> {
        // The lowest set bit of the first non-zero word: `iter().next()`
        // without the iterator (a hot call of the balancer).
        self.words
            .iter()
            .position(|&w| w != 0)
            .map(|i| i * 64 + self.words[i].trailing_zeros() as usize)
    }

    /// Highest CPU in the set.
    pub fn last(&self) -> Option<usize> {
        for (i, &w) in self.words.iter().enumerate().rev() {
            if w != 0 {
                return Some(i * 64 + 63 - w.leading_zeros() as usize);
            }
        }
        None
    }

    /// The set's 64-CPU words, lowest CPUs first (CPU `64 i + b` is bit `b`
    /// of word `i`; words past the last are empty): for hot loops that
    /// intersect sets a word at a time.
    #[inline]
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// CPUs in ascending order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(i * 64 + b)
            })
        })
    }

    /// Set intersection (`cpumask_and`).
    pub fn and(&self, other: &CpuSet) -> CpuSet {
        let mut s = CpuSet {
            words: self
                .words
                .iter()
                .zip(other.words.iter())
                .map(|(a, b)| a & b)
                .collect(),
        };
        s.trim();
        s
    }

    /// Set union (`cpumask_or`).
    pub fn or(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().max(other.words.len());
        let mut words = vec![0u64; n];
        for (i, w) in words.iter_mut().enumerate() {
            *w = self.words.get(i).copied().unwrap_or(0) | other.words.get(i).copied().unwrap_or(0);
        }
        CpuSet { words }
    }

    /// True when every CPU of `self` is in `other` (`cpumask_subset`).
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        // Word by word: no CPU of a word of `self` outside `other`'s word
        // (a word `other` lacks holds none of its CPUs).
        self.words
            .iter()
            .enumerate()
            .all(|(i, &w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// True when the two sets share a CPU (`cpumask_intersects`).
    #[inline]
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .zip(other.words.iter())
            .any(|(a, b)| a & b != 0)
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// Parses the kernel's cpulist format: comma-separated ids and ranges,
    /// e.g. `0-3,8,10-11`. An empty string is the empty set.
    pub fn parse_list(s: &str) -> Result<CpuSet, String> {
        parse_id_list(s, "CPU")
    }
}

/// The kernel's list format (`0-3,8`) of `what` ids (CPU or node ids: the
/// error names which).
fn parse_id_list(s: &str, what: &str) -> Result<CpuSet, String> {
    let mut set = CpuSet::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (parse_id(a, part, what)?, parse_id(b, part, what)?),
            None => {
                let v = parse_id(part, part, what)?;
                (v, v)
            }
        };
        if hi < lo {
            return Err(format!("range '{part}' runs backwards"));
        }
        if hi >= 1 << 20 {
            return Err(format!("{what} id in '{part}' is implausibly large"));
        }
        for c in lo..=hi {
            set.insert(c);
        }
    }
    Ok(set)
}

fn parse_id(s: &str, part: &str, what: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| format!("'{part}' is not a {what} id or range"))
}

impl fmt::Display for CpuSet {
    /// Prints the cpulist format, with ranges collapsed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut it = self.iter().peekable();
        while let Some(lo) = it.next() {
            let mut hi = lo;
            while it.peek() == Some(&(hi + 1)) {
                hi = it.next().unwrap_or(hi);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if hi == lo {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

impl From<CpuSet> for String {
    fn from(s: CpuSet) -> String {
        s.to_string()
    }
}

impl TryFrom<String> for CpuSet {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        CpuSet::parse_list(&s)
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut s = CpuSet::new();
        for c in iter {
            s.insert(c);
        }
        s
    }
}

/// A set of NUMA node ids (a `nodemask_t`), up to 64 nodes.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct NodeMask(pub u64);

/// Largest number of nodes a model may have (one `NodeMask` word).
pub const MAX_NUMNODES: usize = 64;

impl NodeMask {
    /// The empty mask.
    pub const NONE: NodeMask = NodeMask(0);

    /// A mask holding only `node`.
    #[inline]
    pub fn single(node: usize) -> Self {
        NodeMask(1u64 << node)
    }

    /// A mask holding `0..n`.
    pub fn first_n(n: usize) -> Self {
        if n >= 64 {
            NodeMask(u64::MAX)
        } else {
            NodeMask((1u64 << n) - 1)
        }
    }

    /// True when `node` is in the mask (`node_isset`).
    #[inline]
    pub fn contains(self, node: usize) -> bool {
        node < 64 && self.0 & (1u64 << node) != 0
    }

    /// Adds `node` (`node_set`).
    #[inline]
    pub fn insert(&mut self, node: usize) {
        self.0 |= 1u64 << node;
    }

    /// Number of nodes in the mask (`nodes_weight`).
    #[inline]
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// True when the mask is empty.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Lowest node in the mask (`first_node`).
    #[inline]
    pub fn first(self) -> Option<usize> {
        (self.0 != 0).then(|| self.0.trailing_zeros() as usize)
    }

    /// Nodes in ascending order.
    #[inline]
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut w = self.0;
        std::iter::from_fn(move || {
            if w == 0 {
                return None;
            }
            let b = w.trailing_zeros() as usize;
            w &= w - 1;
            Some(b)
        })
    }

    /// Intersection.
    #[inline]
    pub fn and(self, other: NodeMask) -> NodeMask {
        NodeMask(self.0 & other.0)
    }

    /// Parses the nodelist format, e.g. `0-1,3`.
    pub fn parse_list(s: &str) -> Result<NodeMask, String> {
        let set = parse_id_list(s, "node")?;
        let mut m = NodeMask::NONE;
        for n in set.iter() {
            if n >= MAX_NUMNODES {
                return Err(format!(
                    "node {n} is beyond the model's limit of {MAX_NUMNODES} nodes"
                ));
            }
            m.insert(n);
        }
        Ok(m)
    }
}

impl fmt::Display for NodeMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s: CpuSet = self.iter().collect();
        write!(f, "{s}")
    }
}

impl fmt::Debug for NodeMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeMask({self})")
    }
}

impl From<NodeMask> for String {
    fn from(s: NodeMask) -> String {
        s.to_string()
    }
}

impl TryFrom<String> for NodeMask {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        NodeMask::parse_list(&s)
    }
}

impl FromIterator<usize> for NodeMask {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut m = NodeMask::NONE;
        for n in iter {
            m.insert(n);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_are_found_word_by_word_across_set_sizes() {
        let p = |s: &str| CpuSet::parse_list(s).expect("cpulist");
        assert!(p("1,3").is_subset(&p("0-3")));
        assert!(!p("1,4").is_subset(&p("0-3")));
        // Sets of different word counts, and the empty set.
        assert!(p("2,70").is_subset(&p("0-127")));
        assert!(!p("2,130").is_subset(&p("0-127")));
        assert!(!p("0-127").is_subset(&p("0-3")));
        assert!(CpuSet::new().is_subset(&p("5")));
        assert!(CpuSet::new().is_subset(&CpuSet::new()));
        let mut emptied = p("200");
        emptied.remove(200);
        assert!(emptied.is_subset(&p("1")), "a set emptied of a high CPU");
    }

    #[test]
    fn cpulist_round_trips_with_ranges_collapsed() {
        let s = CpuSet::parse_list("0-3, 8,10-11,9").unwrap();
        assert_eq!(s.to_string(), "0-3,8-11");
        assert_eq!(s.len(), 8);
        assert!(s.contains(9) && !s.contains(4));
        assert_eq!(s.last(), Some(11));
    }

    #[test]
    fn cpulist_rejects_garbage_and_backwards_ranges() {
        assert!(CpuSet::parse_list("3-1").is_err());
        assert!(CpuSet::parse_list("a").is_err());
        assert!(CpuSet::parse_list("").unwrap().is_empty());
    }

    #[test]
    fn first_is_the_lowest_cpu_past_empty_words() {
        assert_eq!(CpuSet::new().first(), None);
        let mut s = CpuSet::parse_list("130,200").unwrap();
        assert_eq!(s.first(), Some(130));
        assert_eq!(s.first(), s.iter().next());
        s.insert(70);
        assert_eq!(s.first(), Some(70));
        // A word emptied in place (not trimmed, it is not the last).
        s.remove(70);
        assert_eq!(s.first(), Some(130));
    }

    #[test]
    fn nodemask_iterates_in_order() {
        let m = NodeMask::parse_list("3,0-1").unwrap();
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![0, 1, 3]);
        assert_eq!(m.to_string(), "0-1,3");
        assert!(NodeMask::parse_list("64").is_err());
        let e = NodeMask::parse_list("x").unwrap_err();
        assert!(e.contains("not a node id"), "{e}");
        let e = CpuSet::parse_list("0-y").unwrap_err();
        assert!(e.contains("not a CPU id"), "{e}");
    }
}
