//! Names of the time-series columns ([`crate::TimeSeries::columns`]) and
//! of the tasks, built and parsed in one place.
//!
//! The model (`numalab-sim`), a real run (`numalab-real`), the smoke checks
//! and `numalab validate` all name columns through [`Column`], so a column
//! a real run writes is found under the same name in a model record. Which
//! columns a record has, and in which order, is each writer's business (a
//! model record has `local_bytes_share`, a real one `memory.stat:*` and
//! `trace:*`; see [`crate::counters`] for the counter lists); readers look
//! columns up by name.
//!
//! A task is named `PROCESS/THREAD` ([`task_name`]), the workload's process
//! and thread names; the `cpu:` column of a thread carries the same name.
//!
//! Left out: escaping. Names are joined with `/` and `:` as they are;
//! [`Column::parse`] splits `PROCESS/...` at the first `/`, so it inverts
//! [`Column::name`] exactly when process names contain no `/` (workload
//! presets never do).

use std::fmt;

/// Column name of [`Column::Time`].
pub const T_S: &str = "t_s";
/// Column name of [`Column::LocalBytesShare`].
pub const LOCAL_BYTES_SHARE: &str = "local_bytes_share";
/// Column name of [`Column::RunningTasks`].
pub const RUNNING_TASKS: &str = "running_tasks";

/// One time-series column. [`Column::name`] (or `Display`) gives the name
/// written into a record; [`Column::parse`] reads it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column<'a> {
    /// `t_s`: seconds since the start of the run (always the first).
    Time,
    /// A /proc/vmstat counter by its kernel name (the model: the value; a
    /// real run: the delta since the start).
    Vmstat(&'a str),
    /// `local_bytes_share`: share of the bytes accessed in the interval
    /// that went to the accessing CPU's node (model only: the kernel does
    /// not tell without a PMU).
    LocalBytesShare,
    /// `running_tasks`: tasks on a CPU at the sample.
    RunningTasks,
    /// `nodeN_used_gib`: GiB in use on node N (the model: the whole node;
    /// a real run: the workload's regions).
    NodeUsedGib(usize),
    /// `memory.stat:CGROUP:NAME`: a memory.stat counter of a cgroup, delta
    /// since the start.
    MemoryStat {
        /// Cgroup path ("/" is the root).
        cgroup: &'a str,
        /// memory.stat counter name.
        name: &'a str,
    },
    /// `region:PROCESS/REGION:nodeN_bytes`: bytes of a region resident on
    /// node N (-1 when the process does not exist).
    RegionBytes {
        /// Process name.
        process: &'a str,
        /// Region name.
        region: &'a str,
        /// Node id.
        node: usize,
    },
    /// `cpu:PROCESS/THREAD`: the CPU a thread is on (-1 while it does not
    /// run); the part after `cpu:` is the [`task_name`].
    Cpu {
        /// Process name.
        process: &'a str,
        /// Thread name.
        thread: &'a str,
    },
    /// `trace:EVENT`: count of a scheduler tracepoint since the start.
    Trace(&'a str),
}

impl Column<'_> {
    /// The column's name as written in a record.
    pub fn name(&self) -> String {
        self.to_string()
    }
}

impl<'a> Column<'a> {
    /// Reads a column name back; `None` for a name no writer produces.
    /// Plain lower-case identifiers that are none of the fixed names are
    /// vmstat counters.
    pub fn parse(name: &'a str) -> Option<Column<'a>> {
        match name {
            T_S => return Some(Column::Time),
            LOCAL_BYTES_SHARE => return Some(Column::LocalBytesShare),
            RUNNING_TASKS => return Some(Column::RunningTasks),
            _ => {}
        }
        if let Some(n) = name
            .strip_prefix("node")
            .and_then(|r| r.strip_suffix("_used_gib"))
        {
            return parse_node(n).map(Column::NodeUsedGib);
        }
        if let Some(rest) = name.strip_prefix("memory.stat:") {
            let (cgroup, name) = rest.rsplit_once(':')?;
            return (!cgroup.is_empty() && !name.is_empty())
                .then_some(Column::MemoryStat { cgroup, name });
        }
        if let Some(rest) = name.strip_prefix("region:") {
            let (pr, node) = rest.strip_suffix("_bytes")?.rsplit_once(":node")?;
            let (process, region) = split_task_name(pr)?;
            return Some(Column::RegionBytes {
                process,
                region,
                node: parse_node(node)?,
            });
        }
        if let Some(rest) = name.strip_prefix("cpu:") {
            let (process, thread) = split_task_name(rest)?;
            return Some(Column::Cpu { process, thread });
        }
        if let Some(ev) = name.strip_prefix("trace:") {
            return (!ev.is_empty()).then_some(Column::Trace(ev));
        }
        let ident = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        ident.then_some(Column::Vmstat(name))
    }
}

fn parse_node(s: &str) -> Option<usize> {
    // Only the canonical decimal form, so that parse inverts name.
    if s.is_empty() || (s.len() > 1 && s.starts_with('0')) {
        return None;
    }
    s.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| s.parse().ok())
        .flatten()
}

impl fmt::Display for Column<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Column::Time => f.write_str(T_S),
            Column::Vmstat(name) => f.write_str(name),
            Column::LocalBytesShare => f.write_str(LOCAL_BYTES_SHARE),
            Column::RunningTasks => f.write_str(RUNNING_TASKS),
            Column::NodeUsedGib(n) => write!(f, "node{n}_used_gib"),
            Column::MemoryStat { cgroup, name } => write!(f, "memory.stat:{cgroup}:{name}"),
            Column::RegionBytes {
                process,
                region,
                node,
            } => write!(f, "region:{process}/{region}:node{node}_bytes"),
            Column::Cpu { process, thread } => write!(f, "cpu:{}", task_name(process, thread)),
            Column::Trace(ev) => write!(f, "trace:{ev}"),
        }
    }
}

/// The name of a task ([`crate::TaskFigures::name`]): `PROCESS/THREAD`,
/// the workload's process and thread names. Model and real runs both
/// write it, so tasks of the two are found by the same name.
pub fn task_name(process: &str, thread: &str) -> String {
    format!("{process}/{thread}")
}

/// Splits a [`task_name`] into process and thread at the first `/`;
/// `None` when there is none or either side is empty.
pub fn split_task_name(name: &str) -> Option<(&str, &str)> {
    let (p, t) = name.split_once('/')?;
    (!p.is_empty() && !t.is_empty()).then_some((p, t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_kind_round_trips() {
        let cols = [
            Column::Time,
            Column::Vmstat("numa_hint_faults_local"),
            Column::LocalBytesShare,
            Column::RunningTasks,
            Column::NodeUsedGib(12),
            Column::MemoryStat {
                cgroup: "/a/b",
                name: "numa_pages_migrated",
            },
            Column::MemoryStat {
                cgroup: "/",
                name: "pgfault",
            },
            Column::RegionBytes {
                process: "pft",
                region: "chunk3",
                node: 3,
            },
            Column::Cpu {
                process: "db",
                thread: "worker.0",
            },
            Column::Trace("sched_swap_numa"),
        ];
        for c in cols {
            let name = c.name();
            assert_eq!(Column::parse(&name), Some(c), "{name}");
        }
    }

    #[test]
    fn names_are_the_documented_ones() {
        assert_eq!(Column::NodeUsedGib(1).name(), "node1_used_gib");
        assert_eq!(
            Column::RegionBytes {
                process: "p",
                region: "r",
                node: 0
            }
            .name(),
            "region:p/r:node0_bytes"
        );
        assert_eq!(
            Column::Cpu {
                process: "p",
                thread: "t"
            }
            .name(),
            "cpu:p/t"
        );
        assert_eq!(
            Column::MemoryStat {
                cgroup: "/db",
                name: "numa_hint_faults"
            }
            .name(),
            "memory.stat:/db:numa_hint_faults"
        );
        assert_eq!(
            Column::Trace("sched_move_numa").name(),
            "trace:sched_move_numa"
        );
        assert_eq!(task_name("p", "t.1"), "p/t.1");
        assert_eq!(split_task_name("p/t/x"), Some(("p", "t/x")));
    }

    #[test]
    fn malformed_names_parse_to_none() {
        for bad in [
            "",
            "region:p/r:nodeX_bytes",
            "region:pr:node0_bytes",
            "region:p/r:node01_bytes",
            "region:p/r:node0",
            "cpu:p",
            "cpu:/t",
            "memory.stat:numa_hint_faults",
            "trace:",
            "node_used_gib",
            "Numa_Hint",
            "numa hint",
        ] {
            assert_eq!(Column::parse(bad), None, "{bad:?}");
        }
    }
}
