//! `session sandbox check`: what the kernel offers the command sandbox, and what the current
//! configuration would do with the commands of this folder.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use session_runtime::config::{FsResolver, TrustList, discover_from, load};
use session_runtime::setup::user_dir;
use session_tools::sandbox::{Confinement, Namespaces, REQUIRED_LANDLOCK_ABI, SandboxTarget};
use session_tools::{KernelSupport, Sandbox, SandboxMode, SandboxSettings};

use crate::terminal::clean;

/// What `session sandbox` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Subcommand)]
pub enum SandboxAction {
    /// Prints what the kernel supports and what the current config would do with commands.
    Check,
}

/// Loads the configuration of `cwd` as `session run` would, probes the kernel and prints the
/// report to `out` (configuration warnings go to stderr).
pub fn check(
    cwd: &Path,
    env: &HashMap<String, String>,
    home: Option<&Path>,
    out: &mut impl Write,
) -> Result<()> {
    let user_dir = user_dir(env, home);
    let mut sources =
        discover_from(cwd, home, user_dir.as_deref(), env.get("SESSION_CONFIG").map(PathBuf::from));
    sources.trusted = user_dir.as_deref().map(TrustList::load).unwrap_or_default().trusted;
    let loaded = load(&sources, &FsResolver::new(env.clone(), home.map(Path::to_path_buf)))?;
    for warning in &loaded.warnings {
        eprintln!("session: warning: {warning}");
    }
    let settings = loaded.config.sandbox.settings(cwd, home);
    let support = KernelSupport::probe();
    let target = SandboxTarget { workspace: cwd.to_path_buf(), tmpdir: env.get("TMPDIR").map(PathBuf::from) };
    out.write_all(report(&settings, support, &target).as_bytes())?;
    Ok(())
}

/// The report for `settings` on a kernel offering `support`, for commands in `target`.
pub fn report(settings: &SandboxSettings, support: KernelSupport, target: &SandboxTarget) -> String {
    let mut text = String::from("Kernel\n");
    let landlock = match support.landlock_abi {
        0 => "not available".to_owned(),
        abi if abi < REQUIRED_LANDLOCK_ABI => {
            format!("ABI {abi} (too old: the sandbox needs {REQUIRED_LANDLOCK_ABI})")
        }
        6 => "ABI 6 or later".to_owned(),
        abi => format!("ABI {abi}"),
    };
    text.push_str(&format!("  landlock:   {landlock}\n"));
    text.push_str(&format!(
        "  seccomp:    {}\n",
        if support.seccomp { "available" } else { "not available" }
    ));
    let namespaces = match support.namespaces {
        Namespaces::Mount => "mount namespace",
        Namespaces::UserAndMount => "user and mount namespaces",
        Namespaces::Unavailable => "not available (no read-only .git)",
    };
    text.push_str(&format!("  namespaces: {namespaces}\n"));
    text.push_str("\nConfiguration (sandbox)\n");
    text.push_str(&format!("  mode:         {}\n", settings.mode));
    text.push_str(&format!("  enforcement:  {}\n", settings.enforcement.as_str()));
    text.push_str(&format!(
        "  network:      {}\n",
        if settings.network { "allowed" } else { "off (Unix sockets allowed)" }
    ));
    text.push_str(&format!("  git_writable: {}\n", settings.git_writable));
    if !settings.exclude.is_empty() {
        text.push_str(&format!("  exclude:      {}\n", clean(&settings.exclude.join(", "))));
    }
    let sandbox = Sandbox::with_support(settings.clone(), support);
    text.push_str(&format!("\nCommands in {}\n", clean(&target.workspace.display().to_string())));
    text.push_str(&format!("  build agent: {}\n", outcome(&sandbox, target)));
    text.push_str(&format!("  plan agent:  {}\n", outcome(&sandbox.at_least(SandboxMode::ReadOnly), target)));
    if let Some(warning) = sandbox.warning() {
        text.push_str(&format!("\nwarning: {}\n", clean(&warning)));
    }
    text
}

fn outcome(sandbox: &Sandbox, target: &SandboxTarget) -> String {
    match sandbox.decide(target, false) {
        Err(error) => format!("refused ({error})"),
        Ok(Confinement::Unconfined(reason)) => format!("unconfined ({reason})"),
        Ok(Confinement::Confined(confined)) => {
            let mut line = format!("confined, {}", confined.mode);
            if !confined.writable.is_empty() {
                let folders: Vec<String> =
                    confined.writable.iter().map(|p| p.display().to_string()).collect();
                line.push_str(&format!("; writes in {}", folders.join(", ")));
            }
            if let Some(git) = &confined.git_read_only {
                line.push_str(&format!("; {} read-only", git.display()));
            }
            line.push_str(if confined.network { "; network allowed" } else { "; no network" });
            clean(&line).into_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use session_tools::Enforcement;

    use super::*;

    fn target() -> (tempfile::TempDir, SandboxTarget) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let workspace = dir.path().to_path_buf();
        std::fs::create_dir_all(workspace.join(".git")).unwrap_or_else(|e| panic!("{e}"));
        (dir, SandboxTarget { workspace, tmpdir: None })
    }

    #[test]
    fn a_capable_kernel_confines_build_and_plan() {
        let (_dir, target) = target();
        let support = KernelSupport { landlock_abi: 6, seccomp: true, namespaces: Namespaces::UserAndMount };
        let text = report(&SandboxSettings::default(), support, &target);
        assert!(text.contains("landlock:   ABI 6 or later"), "{text}");
        assert!(text.contains("namespaces: user and mount namespaces"), "{text}");
        let git = target.workspace.join(".git");
        assert!(
            text.contains(&format!(
                "build agent: confined, workspace-write; writes in {}",
                target.workspace.display()
            )),
            "{text}"
        );
        assert!(text.contains(&format!("; {} read-only; no network", git.display())), "{text}");
        assert!(text.contains("plan agent:  confined, read-only; no network"), "{text}");
        assert!(!text.contains("warning"), "{text}");
    }

    #[test]
    fn a_kernel_without_landlock_refuses_under_required() {
        let (_dir, target) = target();
        let settings = SandboxSettings { enforcement: Enforcement::Required, ..SandboxSettings::default() };
        let text = report(&settings, KernelSupport::unsupported(), &target);
        assert!(text.contains("landlock:   not available"), "{text}");
        assert!(text.contains("build agent: refused (Sandbox: the kernel has no Landlock"), "{text}");
        assert!(text.contains("warning: sandbox workspace-write: the kernel has no Landlock"), "{text}");
        let text = report(&SandboxSettings::default(), KernelSupport::unsupported(), &target);
        assert!(text.contains("build agent: unconfined (the kernel has no Landlock"), "{text}");
    }
}
