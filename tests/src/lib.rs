//! End-to-end tests of the session runtime, run through the real `session` binary.
//!
//! The tests live in `suite/`; this library locates the binary for them and holds the crash
//! loop ([`crash`]), which `cargo xtask bench --crash` runs too.

pub mod crash;

use std::path::PathBuf;
use std::process::Command;

/// The `session` binary of this build, built first when `cargo test` did not build it.
pub fn session_binary() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // Test binaries live in target/<profile>/deps; the binary one level up.
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .ok_or_else(|| std::io::Error::other("test binary has no target directory"))?;
    let binary = profile_dir.join(format!("session{}", std::env::consts::EXE_SUFFIX));
    if !binary.exists() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "session-cli", "--bin", "session"])
            .status()?;
        if !status.success() {
            return Err(std::io::Error::other("building the session binary failed"));
        }
    }
    Ok(binary)
}

/// The provider fixtures vendored in session-llm.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/session-llm/tests/fixtures/providers")
}
