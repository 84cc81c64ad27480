//! What the load balancer knows of a sched group and of the CPU doing the
//! balance: `struct sg_lb_stats` and `enum group_type` (kernel/sched/fair.c)
//! and `enum cpu_idle_type` (include/linux/sched/idle.h). Plain data and
//! the predicates fair.c computes from it, in a file of its own so that
//! the balancer (balance.rs), fork and wakeup placement (fair.rs) and the
//! serialize flag (serialize.rs) share it without importing each other.
//! Left out: `group_misfit_task`'s and asymmetric capacity's fields.

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuIdleType {
    /// `__CPU_NOT_IDLE`.
    NotIdle,
    /// `CPU_IDLE`.
    Idle,
    /// `CPU_NEWLY_IDLE`.
    NewlyIdle,
}

/// `enum group_type`, the subset modeled, in increasing order of how
/// much a group needs its load pulled away.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    /// `group_has_spare`: capacity to run more.
    HasSpare,
    /// `group_fully_busy`: no spare capacity, no waiting that hurts.
    FullyBusy,
    /// `group_misfit_task`: a task too big for its CPU (asymmetric
    /// capacity only: never on the modeled machines, whose CPUs all have
    /// capacity 1024).
    MisfitTask,
    /// `group_imbalanced`: a balance below failed for affinity
    /// (`sgc->imbalance`, set on LBF_SOME_PINNED).
    Imbalanced,
    /// `group_overloaded`: more tasks than CPUs and too little capacity.
    Overloaded,
}

/// `struct sg_lb_stats`, the parts modeled (`update_sg_lb_stats`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SgStats {
    /// `sum_nr_running` (= `sum_h_nr_running`: every task is CFS).
    pub nr_running: i64,
    /// `idle_cpus`.
    pub idle_cpus: i64,
    /// `group_weight`.
    pub weight: i64,
    /// Cores in the group (`sg->cores`); the balancer counts them for the
    /// local and the busiest group only (0 elsewhere: nothing reads them).
    pub cores: i64,
    /// `group_load`: sum of `cpu_load`.
    pub load: i64,
    /// `group_util`: sum of `cpu_util_cfs`.
    pub util: i64,
    /// `group_runnable`: sum of `cpu_runnable`.
    pub runnable: i64,
    /// `group_capacity`.
    pub capacity: i64,
    /// `avg_load`: load per 1024 of capacity, computed for overloaded
    /// groups only (as the kernel does; 0 otherwise).
    pub avg_load: i64,
    /// `group_type`.
    pub group_type: GroupType,
}

impl Default for SgStats {
    fn default() -> Self {
        SgStats {
            nr_running: 0,
            idle_cpus: 0,
            weight: 0,
            cores: 0,
            load: 0,
            util: 0,
            runnable: 0,
            capacity: 0,
            avg_load: 0,
            group_type: GroupType::HasSpare,
        }
    }
}

impl SgStats {
    /// `group_has_capacity`.
    pub fn has_capacity(&self, imbalance_pct: i64) -> bool {
        if self.nr_running < self.weight {
            return true;
        }
        if self.capacity * imbalance_pct < self.runnable * 100 {
            return false;
        }
        self.capacity * 100 > self.util * imbalance_pct
    }

    /// `group_is_overloaded`.
    pub fn is_overloaded(&self, imbalance_pct: i64) -> bool {
        if self.nr_running <= self.weight {
            return false;
        }
        self.capacity * 100 < self.util * imbalance_pct
            || self.capacity * imbalance_pct < self.runnable * 100
    }

    /// Load per 1024 of capacity.
    pub fn load_per_capacity(&self) -> i64 {
        self.load * 1024 / self.capacity.max(1)
    }
}
