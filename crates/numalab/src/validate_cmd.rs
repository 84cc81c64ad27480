//! `numalab validate`: chooses the guest and scenarios (validate.rs), then
//! runs them on the stock kernel (validate.rs), on the kernel of the
//! project's patch series (`--series`: built or taken from the cache
//! first, when a guest boots), or, with `--kernel-patch`, on stock and
//! patched kernels (validate_ab.rs). Its own file so that neither of the
//! two imports the other. Left out: everything else.

use crate::failure::Failure;
use crate::validate::{self, Options};

/// `numalab validate`.
pub fn validate(o: &Options) -> Result<(), Failure> {
    let (m, scenarios) = validate::choose(o)?;
    if o.series && !o.model_only && o.boots.is_none() && o.guest_json.is_none() {
        // The whole series, as `numalab vm kernel build --series all`.
        let k = crate::vm_kernel::ensure(&crate::vm_kernel::KernelBuildArgs {
            series: Some("all".into()),
            seeds: o.seeds.clone(),
            ..Default::default()
        })?;
        let mut o = o.clone();
        o.vm.boot(&crate::vm_kernel::Stock::Image(k.bzimage));
        return validate::validate_stock(&o, &m, &scenarios);
    }
    if o.kernel_patch.is_empty() {
        validate::validate_stock(o, &m, &scenarios)
    } else {
        // --check there means agreement of model and kernel.
        crate::validate_ab::validate_ab(o, &m, &scenarios)
    }
}
