//! The engine boundary for memory policies: a resolved workload's policy
//! ([`PolicySpec`], in the workload language's terms) into the arguments
//! of the kernel model's `set_mempolicy(2)`/`mbind(2)` ([`MpolRequest`]).
//! The kernel validates them ([`crate::kernel::mm::mempolicy::mpol_new`]).
//! Left out: any check; a request the kernel refuses is refused there.

use crate::kernel::mm::mempolicy::{MpolMode, MpolRequest};
use numalab_workload::{PolicyMode, PolicySpec};

impl From<PolicyMode> for MpolMode {
    fn from(m: PolicyMode) -> Self {
        match m {
            PolicyMode::Default => MpolMode::Default,
            PolicyMode::Bind => MpolMode::Bind,
            PolicyMode::Preferred => MpolMode::Preferred,
            PolicyMode::PreferredMany => MpolMode::PreferredMany,
            PolicyMode::Interleave => MpolMode::Interleave,
            PolicyMode::Local => MpolMode::Local,
        }
    }
}

impl From<&PolicySpec> for MpolRequest {
    fn from(s: &PolicySpec) -> Self {
        MpolRequest {
            mode: s.mode.into(),
            nodes: s.nodes.clone(),
            numa_balancing: s.numa_balancing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each language mode becomes the kernel mode of the same name, so the
    /// kernel's EINVAL messages (which print the mode) read as before.
    #[test]
    fn every_language_mode_maps_to_the_kernel_mode_of_its_name() {
        let mut seen = Vec::new();
        for m in PolicyMode::ALL {
            let k = MpolMode::from(m);
            assert_eq!(format!("{m:?}"), format!("{k:?}"));
            assert!(!seen.contains(&k), "{k:?} twice");
            seen.push(k);
        }
        let r = MpolRequest::from(&PolicySpec {
            mode: PolicyMode::Bind,
            nodes: vec![1, 0],
            numa_balancing: true,
        });
        assert_eq!(
            r,
            MpolRequest {
                mode: MpolMode::Bind,
                nodes: vec![1, 0],
                numa_balancing: true
            }
        );
    }
}
