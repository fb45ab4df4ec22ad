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

pub(super) fn make_undumpable() -> std::io::Result<()> {
    Ok(())
}

pub(super) fn withhold_ptrace(_command: &mut std::process::Command) {}

pub(super) fn move_environment_off_the_block() -> std::io::Result<()> {
    Ok(())
}
