//! End-to-end tests of the session runtime, run through the real `session` binary.
//!
//! The tests live in `suite/`; this library locates the binary for them and holds the crash
//! loop ([`crash`]), which `cargo xtask bench --crash` runs too.

pub mod crash;

use std::path::{Path, PathBuf};
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

/// session-testkit's misbehaving MCP server (`mcp-fault-server`) of this build, built first
/// when `cargo test` did not build it.
pub fn mcp_fault_server() -> std::io::Result<PathBuf> {
    let session = session_binary()?;
    let binary = session.with_file_name(format!("mcp-fault-server{}", std::env::consts::EXE_SUFFIX));
    if !binary.exists() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "session-testkit", "--bin", "mcp-fault-server"])
            .status()?;
        if !status.success() {
            return Err(std::io::Error::other("building mcp-fault-server failed"));
        }
    }
    Ok(binary)
}

/// The provider fixtures vendored in session-llm.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/session-llm/tests/fixtures/providers")
}

/// Writes `dir/session.json` pointing provider `mock` (model `m`, speaking OpenAI Chat, with the
/// given limits) at `base_url`, and trusts `dir` for a `HOME` one level above it, as the tests
/// run the binary.
pub fn mock_project(dir: &Path, base_url: &str, context: u64, output: u64) -> std::io::Result<()> {
    mock_project_with(dir, base_url, context, output, serde_json::Map::new())
}

/// [`mock_project`] with more top-level config keys (`permission`, `mcp`, ...).
pub fn mock_project_with(
    dir: &Path,
    base_url: &str,
    context: u64,
    output: u64,
    extra: serde_json::Map<String, serde_json::Value>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut config = serde_json::json!({
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": base_url, "apiKey": "test-key"},
            "models": {"m": {"limit": {"context": context, "output": output}}}
        }}
    });
    if let Some(object) = config.as_object_mut() {
        object.extend(extra);
    }
    std::fs::write(dir.join("session.json"), serde_json::to_string_pretty(&config)?)?;
    let home = dir.parent().ok_or_else(|| std::io::Error::other("the project has no parent folder"))?;
    session_testkit::trust_folder(home, dir)
}

/// A `session serve` child process, killed when dropped however the test ends.
#[derive(Debug)]
pub struct ServeProcess {
    child: std::process::Child,
    /// The address it listens on, `http://127.0.0.1:<port>`.
    pub url: String,
    /// The second line it printed (where its token is).
    pub token_line: String,
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `session serve --port 0 <args>` in `project` with `HOME` at `home` and its data
/// under `home/data`, and waits for its address.
pub fn start_serve(project: &Path, home: &Path, args: &[&str]) -> std::io::Result<ServeProcess> {
    use std::io::BufRead as _;
    let mut child = Command::new(session_binary()?)
        .args(["serve", "--port", "0"])
        .args(args)
        .current_dir(project)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("SESSION_CONFIG")
        .env_remove("SESSION_SERVER_TOKEN")
        .env_remove("OPENCODE_SERVER_PASSWORD")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?;
    let mut process = ServeProcess { child, url: String::new(), token_line: String::new() };
    let mut reader = std::io::BufReader::new(stdout);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    reader.read_line(&mut process.token_line)?;
    process.url = line
        .trim()
        .rsplit(' ')
        .next()
        .filter(|url| url.starts_with("http://"))
        .ok_or_else(|| std::io::Error::other(format!("session serve did not start: {line:?}")))?
        .to_owned();
    Ok(process)
}
