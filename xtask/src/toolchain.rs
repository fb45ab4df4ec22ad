//! The first step of `cargo xtask ci`: the active `rustc` is the toolchain the workspace
//! declares (`[workspace.package] rust-version`), so that the declaration is what CI builds
//! with rather than a promise nothing checks.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Fails unless the active `rustc`'s `major.minor` is the declared `rust-version`.
pub(crate) fn check(root: &Path) -> Result<()> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).context("read Cargo.toml")?;
    let declared = declared_rust_version(&manifest)?;
    // The rustc cargo would use: `RUSTC` when set, else the one on `PATH`.
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(&rustc).arg("--version").output().context("cannot run rustc --version")?;
    if !output.status.success() {
        bail!("rustc --version failed: {}", String::from_utf8_lossy(&output.stderr).trim());
    }
    let active = String::from_utf8_lossy(&output.stdout);
    compare(&declared, active.trim())?;
    eprintln!("{} (rust-version = \"{declared}\")", active.trim());
    Ok(())
}

/// The `rust-version` of the root manifest's `[workspace.package]`.
pub(crate) fn declared_rust_version(manifest: &str) -> Result<String> {
    let mut section = "";
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[workspace.package]"
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "rust-version"
        {
            return Ok(value.trim().trim_matches('"').to_owned());
        }
    }
    bail!("Cargo.toml declares no rust-version in [workspace.package]")
}

/// `major.minor` of a version: `1.95` of `1.95.0`, `1.95.0-beta.2` or `1.95`.
fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Fails, naming both, unless `rustc_version` (a `rustc --version` line) has the `major.minor`
/// of `declared`.
pub(crate) fn compare(declared: &str, rustc_version: &str) -> Result<()> {
    let wanted = major_minor(declared)
        .with_context(|| format!("Cargo.toml's rust-version {declared:?} is not MAJOR.MINOR"))?;
    let active = rustc_version
        .strip_prefix("rustc ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(major_minor)
        .with_context(|| format!("cannot read a version from {rustc_version:?}"))?;
    if active != wanted {
        bail!(
            "the active rustc is {}.{} ({rustc_version}) but Cargo.toml declares rust-version = \
             \"{declared}\": CI must build with the declared toolchain, so install rustc {}.{} \
             or change rust-version to the toolchain CI uses",
            active.0,
            active.1,
            wanted.0,
            wanted.1
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{compare, declared_rust_version};

    #[test]
    fn the_declared_version_is_read_from_the_workspace_package() {
        let manifest = "[package]\nrust-version = \"1.10\"\n\n[workspace.package]\nversion = \"0.1.0\"\n\
                        rust-version = \"1.95\"\nedition = \"2024\"\n";
        assert_eq!(declared_rust_version(manifest).unwrap(), "1.95");
        assert!(declared_rust_version("[workspace.package]\nversion = \"0.1.0\"\n").is_err());
        // The workspace's own manifest declares one.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        assert!(declared_rust_version(&std::fs::read_to_string(root).unwrap()).is_ok());
    }

    #[test]
    fn the_active_rustc_must_have_the_declared_major_and_minor() {
        compare("1.95", "rustc 1.95.0 (59807616e 2026-04-14)").unwrap();
        compare("1.95.0", "rustc 1.95.3").unwrap();
        compare("1.95", "rustc 1.95.0-beta.2 (0123456 2026-03-01)").unwrap();
        let error = compare("1.94", "rustc 1.95.0 (59807616e 2026-04-14)").unwrap_err().to_string();
        assert!(error.contains("1.95.0 (59807616e") && error.contains("rust-version = \"1.94\""), "{error}");
        assert!(compare("1.95", "rustc 1.96.0").is_err());
        assert!(compare("1.95", "cargo 1.95.0").is_err(), "not a rustc line");
        assert!(compare("latest", "rustc 1.95.0").is_err(), "not a version");
    }
}
