//! `numalab validate`: chooses the guest and scenarios (validate.rs), then
//! runs them on the stock kernel (validate.rs) or, with `--kernel-patch`,
//! on stock and patched kernels (validate_ab.rs). Its own file so that
//! neither of the two imports the other. Left out: everything else.

use crate::failure::Failure;
use crate::validate::{self, Options};

/// `numalab validate`.
pub fn validate(o: &Options) -> Result<(), Failure> {
    let (m, scenarios) = validate::choose(o)?;
    if o.kernel_patch.is_empty() {
        validate::validate_stock(o, &m, &scenarios)
    } else {
        // --check there means agreement of model and kernel.
        crate::validate_ab::validate_ab(o, &m, &scenarios)
    }
}
