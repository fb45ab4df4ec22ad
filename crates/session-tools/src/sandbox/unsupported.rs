//! Systems other than Linux: no sandbox. The probe answers "unsupported", so a confining mode
//! runs commands unconfined (best effort, after the warning) or refuses them (required).

use super::{Confined, KernelSupport};
use crate::error::ToolError;

pub(super) fn probe() -> KernelSupport {
    KernelSupport::unsupported()
}

pub(super) fn install(
    _command: &mut std::process::Command,
    _confined: &Confined,
    _support: KernelSupport,
) -> Result<(), ToolError> {
    Err(ToolError::Sandbox { reason: "there is no sandbox on this operating system".to_owned() })
}
