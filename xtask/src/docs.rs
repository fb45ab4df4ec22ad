//! `cargo xtask docs`: every code block in `docs/` that claims to run, runs.
//!
//! The convention (stated in `docs/README.md`), by the fence's info string:
//!
//! - `sh`: a shell script run with `sh -e` from the repository root, with the `session` binary
//!   first on `PATH` and `HOME`, `XDG_CONFIG_HOME`, `XDG_DATA_HOME` and `TMPDIR` in a fresh
//!   temporary folder (no other variable is passed, so no key reaches a provider);
//! - `sh no-run`: a command shown, not run (it needs a key, a server, the network or installs
//!   something);
//! - `jsonc config`: a configuration file, loaded by the real binary, which must read it
//!   without a warning or an error;
//! - `rust`: an excerpt whose first line is `// PATH` naming a file of the repository (an
//!   example built in CI); the other lines must appear in that file, in order and together;
//! - anything else (`text`, `json`, `jsonc`, ...) makes no claim.
//!
//! The route table of `docs/http-api.md` is generated from the OpenAPI document that
//! `session serve` answers at `GET /doc` (`cargo xtask docs --write`); the check fails when the
//! two differ.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

/// One fenced code block of a Markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The file it is in.
    pub file: PathBuf,
    /// The line of its opening fence (1-based).
    pub line: usize,
    /// The info string after the fence.
    pub info: String,
    /// Its text, lines joined with `\n`.
    pub text: String,
}

/// What a block claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A shell script to run.
    Shell,
    /// A configuration file to load.
    Config,
    /// An excerpt of a repository file.
    Excerpt,
    /// Nothing.
    Shown,
}

impl Block {
    /// What the block claims, from its info string.
    pub fn kind(&self) -> Kind {
        let mut words = self.info.split_whitespace();
        let language = words.next().unwrap_or("");
        let flags: Vec<&str> = words.collect();
        match language {
            "sh" if !flags.contains(&"no-run") => Kind::Shell,
            "jsonc" | "json" if flags.contains(&"config") => Kind::Config,
            "rust" => Kind::Excerpt,
            _ => Kind::Shown,
        }
    }

    fn place(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }
}

/// The fenced blocks of a Markdown text.
pub fn blocks(file: &Path, text: &str) -> Result<Vec<Block>> {
    let mut found = Vec::new();
    let mut open: Option<(usize, String, Vec<&str>)> = None;
    for (index, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((index + 1, info.trim().to_owned(), Vec::new())),
            (Some(_), Some(rest)) if rest.trim().is_empty() => {
                if let Some((line, info, lines)) = open.take() {
                    found.push(Block { file: file.to_path_buf(), line, info, text: lines.join("\n") });
                }
            }
            (Some((_, _, lines)), _) => lines.push(line),
            (None, None) => {}
        }
    }
    if let Some((line, _, _)) = open {
        bail!("{}:{line}: a code block is never closed", file.display());
    }
    Ok(found)
}

/// Counts of the blocks checked.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Shell blocks run.
    pub scripts: usize,
    /// Configuration blocks loaded.
    pub configs: usize,
    /// Excerpts compared.
    pub excerpts: usize,
    /// Blocks that claim nothing.
    pub shown: usize,
    /// Routes of the served OpenAPI document, all listed in `docs/http-api.md`.
    pub api_paths: usize,
}

/// Checks every Markdown file of `root/docs` with the `session` binary at `session`.
pub fn check(root: &Path, session: &Path, write: bool) -> Result<Summary> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .context("read docs/")?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    files.sort();
    let scratch = tempfile::tempdir().context("create a temporary folder")?;
    let mut summary = Summary::default();
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).with_context(|| format!("read {}", file.display()))?;
        let relative = file.strip_prefix(root).unwrap_or(file);
        for (index, block) in blocks(relative, &text)?.into_iter().enumerate() {
            let dir = scratch.path().join(format!("{}-{index}", relative.display()).replace('/', "_"));
            let result = match block.kind() {
                Kind::Shell => run_script(root, session, &dir, &block).map(|()| summary.scripts += 1),
                Kind::Config => load_config(session, &dir, &block).map(|()| summary.configs += 1),
                Kind::Excerpt => check_excerpt(root, &block).map(|()| summary.excerpts += 1),
                Kind::Shown => {
                    summary.shown += 1;
                    Ok(())
                }
            };
            if let Err(error) = result {
                failures.push(format!("{}: {error:#}", block.place()));
            }
        }
    }
    match check_http_api(root, session, &scratch.path().join("serve"), write) {
        Ok(count) => summary.api_paths = count,
        Err(error) => failures.push(format!("docs/http-api.md: {error:#}")),
    }
    if !failures.is_empty() {
        bail!("{} code block check(s) failed:\n{}", failures.len(), failures.join("\n\n"));
    }
    Ok(summary)
}

/// The environment of a block: nothing of the caller's but `PATH`, with `session` first.
fn sandboxed(command: &mut Command, session: &Path, dir: &Path) -> Result<()> {
    for sub in ["home", "config", "data", "tmp"] {
        std::fs::create_dir_all(dir.join(sub)).with_context(|| format!("create {}", dir.display()))?;
    }
    let bin = session.parent().context("the session binary has no folder")?;
    let mut path = std::ffi::OsString::from(bin);
    if let Some(outer) = std::env::var_os("PATH") {
        path.push(":");
        path.push(outer);
    }
    command
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("TMPDIR", dir.join("tmp"))
        .env("LC_ALL", "C");
    Ok(())
}

fn run_script(root: &Path, session: &Path, dir: &Path, block: &Block) -> Result<()> {
    let mut command = Command::new("sh");
    command.args(["-e", "-c", &block.text]).current_dir(root);
    sandboxed(&mut command, session, dir)?;
    let output = command.output().context("cannot run sh")?;
    ensure!(
        output.status.success(),
        "the script failed ({}):\n{}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        block.text,
        tail(&output.stdout),
        tail(&output.stderr)
    );
    Ok(())
}

/// The provider id no configuration names, so loading succeeds and the run stops right after.
const NO_PROVIDER: &str = "zz-docs-check";

fn load_config(session: &Path, dir: &Path, block: &Block) -> Result<()> {
    let project = dir.join("project");
    std::fs::create_dir_all(&project).with_context(|| format!("create {}", project.display()))?;
    std::fs::write(project.join("session.jsonc"), &block.text).context("write session.jsonc")?;
    // The examples are what a user puts in a folder they trust: trust it as they would.
    let mut trust = Command::new(session);
    trust.arg("trust").current_dir(&project);
    sandboxed(&mut trust, session, dir)?;
    let trusted = trust.output().context("cannot run session trust")?;
    ensure!(trusted.status.success(), "session trust failed: {}", String::from_utf8_lossy(&trusted.stderr));
    let mut command = Command::new(session);
    command.args(["run", "--model", &format!("{NO_PROVIDER}/none"), "hello"]).current_dir(&project);
    sandboxed(&mut command, session, dir)?;
    let output = command.output().context("cannot run session")?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    // `session run` reads the configuration first: reaching the unknown provider means the file
    // loaded; any warning is an unknown key.
    ensure!(
        stderr.contains(&format!("unknown provider \"{NO_PROVIDER}\"")) && !stderr.contains("warning"),
        "the configuration does not load cleanly:\n{}\n--- stderr\n{stderr}",
        block.text
    );
    Ok(())
}

fn check_excerpt(root: &Path, block: &Block) -> Result<()> {
    let mut lines = block.text.lines();
    let source = lines
        .next()
        .and_then(|first| first.strip_prefix("// "))
        .filter(|path| !path.contains(' '))
        .context("a rust block must start with `// PATH` naming the file it is taken from")?;
    let text = std::fs::read_to_string(root.join(source)).with_context(|| format!("read {source}"))?;
    let excerpt: Vec<&str> = lines.map(str::trim_end).collect();
    let file: Vec<&str> = text.lines().map(str::trim_end).collect();
    ensure!(!excerpt.is_empty(), "the excerpt is empty");
    ensure!(
        file.windows(excerpt.len()).any(|window| window == excerpt.as_slice()),
        "these lines are not in {source} as they are shown:\n{}",
        excerpt.join("\n")
    );
    Ok(())
}

/// The marks around the part of `docs/http-api.md` generated from the OpenAPI document.
const GENERATED_BEGIN: &str =
    "<!-- BEGIN routes: generated from GET /doc by `cargo xtask docs --write`; do not edit -->";
const GENERATED_END: &str = "<!-- END routes -->";

/// The route table of `docs/http-api.md`, from an OpenAPI document.
pub fn route_table(document: &serde_json::Value) -> Result<String> {
    let mut table = String::from("| route | operation | what it does |\n|---|---|---|\n");
    for (path, item) in document["paths"].as_object().context("the OpenAPI document has no paths")? {
        for method in ["get", "post", "put", "patch", "delete"] {
            let Some(operation) = item.get(method) else { continue };
            let id = operation["operationId"].as_str().unwrap_or("");
            let summary = operation["summary"].as_str().unwrap_or("").replace('|', "\\|");
            table.push_str(&format!("| `{} {path}` | `{id}` | {summary} |\n", method.to_uppercase()));
        }
    }
    Ok(table)
}

/// `text` with the generated section replaced by `table`.
fn with_routes(text: &str, table: &str) -> Result<String> {
    let begin = text.find(GENERATED_BEGIN).context("docs/http-api.md has no generated routes section")?;
    let end =
        text[begin..].find(GENERATED_END).context("the generated routes section is not closed")? + begin;
    Ok(format!("{}{GENERATED_BEGIN}\n{table}{}", &text[..begin], &text[end..]))
}

/// The OpenAPI document of `session serve`, from `GET /doc` of a server started for it.
fn served_document(session: &Path, dir: &Path) -> Result<serde_json::Value> {
    use std::io::{Read as _, Write as _};
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let project = dir.join("project");
    std::fs::create_dir_all(&project).with_context(|| format!("create {}", project.display()))?;
    let mut command = Command::new(session);
    command
        // A local model: the server needs a default model, and a local one needs no key.
        .args(["serve", "--port", &port.to_string(), "--model", "ollama/docs-check"])
        .current_dir(&project)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    sandboxed(&mut command, session, dir)?;
    let mut child = command.spawn().context("cannot start session serve")?;
    let started = std::time::Instant::now();
    let response = loop {
        if let Some(status) = child.try_wait()? {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            bail!("session serve exited ({status}) before answering:\n{stderr}");
        }
        if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            // The Host names the port: without a token the server answers no other name.
            let request = format!("GET /doc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
            stream.write_all(request.as_bytes())?;
            let mut response = String::new();
            stream.read_to_string(&mut response)?;
            break response;
        }
        if started.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            bail!("session serve did not accept a connection within 20 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    let (head, body) = response.split_once("\r\n\r\n").context("an HTTP response without a body")?;
    ensure!(head.starts_with("HTTP/1.1 200"), "GET /doc answered {}", head.lines().next().unwrap_or(""));
    ensure!(!head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "GET /doc answered chunked");
    serde_json::from_str(body).context("GET /doc is not JSON")
}

/// The routes section of `docs/http-api.md` must be what the served OpenAPI document gives;
/// returns the number of routes.
fn check_http_api(root: &Path, session: &Path, dir: &Path, write: bool) -> Result<usize> {
    let document = served_document(session, dir)?;
    let table = route_table(&document)?;
    let path = root.join("docs/http-api.md");
    let text = std::fs::read_to_string(&path).context("read docs/http-api.md")?;
    let expected = with_routes(&text, &table)?;
    if write {
        std::fs::write(&path, &expected).context("write docs/http-api.md")?;
    } else {
        ensure!(
            expected == text,
            "the routes section differs from the served OpenAPI document; run `cargo xtask docs --write`. It should be:\n{table}"
        );
    }
    Ok(table.lines().count().saturating_sub(2))
}

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let start = text.len().saturating_sub(2_000);
    let start = (start..text.len()).find(|at| text.is_char_boundary(*at)).unwrap_or(text.len());
    text[start..].to_owned()
}

/// Builds the `session` binary in `target_dir` (or cargo's default) and returns its path.
pub fn build_session(root: &Path, target_dir: Option<&Path>) -> Result<PathBuf> {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.args(["build", "--quiet", "-p", "session-cli", "--bin", "session"]).current_dir(root);
    if let Some(dir) = target_dir {
        command.env("CARGO_TARGET_DIR", dir);
    }
    let status = command.status().context("cannot run cargo build")?;
    ensure!(status.success(), "cargo build -p session-cli failed ({status})");
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.args(["metadata", "--no-deps", "--format-version", "1"]).current_dir(root);
    if let Some(dir) = target_dir {
        command.env("CARGO_TARGET_DIR", dir);
    }
    let output = command.output().context("cannot run cargo metadata")?;
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).context("cargo metadata")?;
    let target = metadata["target_directory"].as_str().context("no target_directory")?;
    Ok(Path::new(target).join("debug").join(format!("session{}", std::env::consts::EXE_SUFFIX)))
}

/// `cargo xtask docs`.
pub fn main(root: &Path, args: &[String]) -> Result<()> {
    let write = match args {
        [] => false,
        [flag] if flag == "--write" => true,
        _ => bail!("usage: cargo xtask docs [--write]"),
    };
    let session = build_session(root, None)?;
    let summary = check(root, &session, write)?;
    println!(
        "docs: {} scripts ran, {} configurations loaded, {} excerpts match, {} routes of the OpenAPI document listed; \
         {} blocks claim nothing",
        summary.scripts, summary.configs, summary.excerpts, summary.api_paths, summary.shown
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn fences_give_blocks_and_their_claims() {
        let text = "# T\n\n```sh\nsession demo\n```\n\n```sh no-run\nsession run hi\n```\n\
                    ```jsonc config\n{}\n```\n```rust\n// a.rs\nfn a() {}\n```\n```text\nx\n```\n";
        let found = blocks(Path::new("d.md"), text).unwrap();
        let kinds: Vec<Kind> = found.iter().map(Block::kind).collect();
        assert_eq!(kinds, [Kind::Shell, Kind::Shown, Kind::Config, Kind::Excerpt, Kind::Shown]);
        assert_eq!(found[0].line, 3);
        assert_eq!(found[0].text, "session demo");
        assert!(blocks(Path::new("d.md"), "```sh\nopen\n").is_err());
    }

    #[test]
    fn an_excerpt_must_be_in_its_file_as_shown() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let block =
            |text: &str| Block { file: "d.md".into(), line: 1, info: "rust".into(), text: text.into() };
        check_excerpt(root, &block("// xtask/src/docs.rs\nfn tail(bytes: &[u8]) -> String {")).unwrap();
        assert!(check_excerpt(root, &block("// xtask/src/docs.rs\nfn nothing_like_this() {}")).is_err());
        assert!(check_excerpt(root, &block("fn tail(bytes: &[u8]) -> String {")).is_err());
    }

    /// Every block of `docs/` that claims to run: shell blocks run against the real binary,
    /// configuration blocks load, Rust excerpts match their examples.
    #[test]
    fn every_block_in_docs_that_claims_to_run_runs() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        // This test binary is `<target>/debug/deps/xtask-*`: build `session` in the same place.
        let exe = std::env::current_exe().unwrap();
        let target = exe.ancestors().nth(3).unwrap();
        let session = build_session(root, Some(target)).unwrap();
        let summary = check(root, &session, false).unwrap();
        eprintln!("{summary:?}");
        assert!(summary.scripts > 0, "no runnable block in docs/");
    }
}
