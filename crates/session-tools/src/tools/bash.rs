//! `bash`: runs a shell command in its own process group, with a timeout, cancellation that
//! kills the whole group (SIGTERM, then SIGKILL), output capped with a notice, and the exit
//! code and the output so far in the metadata.
//!
//! It is governed by the `bash` permission, with one pattern per command the
//! [`shell`](crate::shell) analysis finds, and by `external_directory` and `edit` for the
//! paths it names and the files its redirections write (see `asks.rs`). The command runs in
//! the context's [`sandbox`](crate::sandbox) (unless a `sandbox.exclude` pattern matches every
//! command of the line); when its output shows a denial, a note says what the sandbox allows.

mod asks;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::object;
use crate::context::{PathKind, ToolContext};
use crate::error::ToolError;
use crate::sandbox::{Confinement, SandboxTarget, denial_note, tmpdir_of};
use crate::tool::{ToolSuccess, TypedTool};
use crate::tool_output::ToolOutputDir;

const NAME: &str = "bash";
/// The timeout when the call gives none (2 minutes).
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The longest timeout a call may ask for (10 minutes).
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// The metadata's `output` (what clients show) is the last this many characters (OpenCode's
/// 30,000).
pub const MAX_OUTPUT_CHARS: usize = 30_000;
/// The model gets at most this many last lines of the output (OpenCode 1.18.34's 2,000)...
pub const MAX_OUTPUT_LINES: usize = 2_000;
/// ... and at most this many last bytes (OpenCode 1.18.34's 50 KB); the whole output then goes
/// to a file (see [`ToolOutputDir`]).
pub const MAX_OUTPUT_BYTES: usize = 51_200;
/// How long the process group has between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(200);
/// At most one progress report per this interval while output streams in.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);
/// After the shell exits, how long output still held open by its background children is read.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// Output kept in memory: the last this many bytes, in whole chunks (OpenCode keeps twice the
/// byte limit); anything older is in the saved file by then.
const MAX_KEPT_BYTES: usize = MAX_OUTPUT_BYTES * 2;
/// The output of a command that printed nothing.
const NO_OUTPUT: &str = "(no output)";

const DESCRIPTION: &str = "Executes a shell command in the workspace (or in workdir) and returns its combined \
stdout and stderr, with an optional timeout in milliseconds (default 120000, at most 600000). Output longer \
than 2000 lines or 50 KB is truncated to its end, and the whole output is saved to a file whose \
path is given, to read or grep in parts. Commands may run in a sandbox that limits where they can write and \
whether they can use the network; a refusal by the sandbox is explained after the output. Prefer \
the read, list, glob, grep, edit and write tools over cat, ls, find, grep, sed and echo.";

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct BashArgs {
    /// The command to execute
    command: String,
    /// Optional timeout in milliseconds
    // A positive integer, in the words of OpenCode 1.18.34's schema: its bounds are
    // JavaScript's safe integers, and the lower one is exclusive 0.
    #[schemars(extend("minimum" = -9_007_199_254_740_991_i64, "exclusiveMinimum" = 0))]
    timeout: Option<u64>,
    /// The working directory to run the command in. Defaults to the workspace root. Use this instead of 'cd' commands.
    workdir: Option<String>,
    // Not offered, as in OpenCode 1.18.34's schema, but taken when a model sends it (the part's
    // metadata shows it), and a call without it runs.
    #[schemars(skip)]
    description: Option<String>,
}

/// The `bash` tool (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BashTool {
    shell: PathBuf,
}

impl Default for BashTool {
    fn default() -> Self {
        Self::new()
    }
}

impl BashTool {
    /// Runs commands with `/bin/bash -c`, or `/bin/sh -c` where bash is missing.
    pub fn new() -> Self {
        let bash = Path::new("/bin/bash");
        Self { shell: if bash.exists() { bash.to_path_buf() } else { PathBuf::from("/bin/sh") } }
    }

    /// Runs commands with `shell -c`.
    pub fn with_shell(shell: impl Into<PathBuf>) -> Self {
        Self { shell: shell.into() }
    }
}

/// Output collected from both pipes, in arrival order: the newest [`MAX_KEPT_BYTES`] in
/// memory, and, once it passed [`MAX_OUTPUT_BYTES`], all of it in a file of the data folder.
#[derive(Default)]
struct Collected {
    kept: std::collections::VecDeque<Vec<u8>>,
    kept_bytes: usize,
    /// Chunks left out of `kept` (they are in the file).
    dropped: bool,
    spill: Spill,
}

/// Where the whole output goes.
#[derive(Default)]
enum Spill {
    /// Not past [`MAX_OUTPUT_BYTES`] yet: everything is in `kept`.
    #[default]
    Memory,
    /// Saved so far to this file, which takes the rest as it comes.
    File(tokio::fs::File, PathBuf),
    /// No file (no data folder, or it could not be written).
    Nowhere,
}

impl Collected {
    async fn push(&mut self, chunk: Vec<u8>, store: Option<&ToolOutputDir>) {
        match &mut self.spill {
            Spill::File(file, _) => {
                if let Err(error) = file.write_all(&chunk).await {
                    tracing::warn!(%error, "the command output could not be saved whole");
                    self.spill = Spill::Nowhere;
                }
            }
            Spill::Memory if self.kept_bytes + chunk.len() > MAX_OUTPUT_BYTES => {
                self.spill = match store {
                    Some(store) => self.start_file(store, &chunk).await,
                    None => Spill::Nowhere,
                };
            }
            Spill::Memory | Spill::Nowhere => {}
        }
        self.kept_bytes += chunk.len();
        self.kept.push_back(chunk);
        while self.kept_bytes > MAX_KEPT_BYTES && self.kept.len() > 1 {
            if let Some(old) = self.kept.pop_front() {
                self.kept_bytes -= old.len();
                self.dropped = true;
            }
        }
    }

    /// A new output file holding what is kept so far and `chunk`.
    async fn start_file(&self, store: &ToolOutputDir, chunk: &[u8]) -> Spill {
        let store = store.clone();
        let created = tokio::task::spawn_blocking(move || store.create()).await;
        let (file, path) = match created {
            Ok(Ok(created)) => created,
            Ok(Err(error)) => {
                tracing::warn!(%error, "no file for the command output");
                return Spill::Nowhere;
            }
            Err(error) => {
                tracing::warn!(%error, "no file for the command output");
                return Spill::Nowhere;
            }
        };
        let mut file = tokio::fs::File::from_std(file);
        for part in self.kept.iter().map(Vec::as_slice).chain([chunk]) {
            if let Err(error) = file.write_all(part).await {
                tracing::warn!(%error, "the command output could not be saved whole");
                return Spill::Nowhere;
            }
        }
        Spill::File(file, path)
    }

    /// The output kept in memory, as text.
    fn text(&self) -> String {
        let bytes: Vec<u8> = self.kept.iter().flatten().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The file holding the whole output, flushed, once the command is done; written now when
    /// the output is short in bytes but long in lines.
    async fn saved(&mut self, store: Option<&ToolOutputDir>) -> Option<PathBuf> {
        if matches!(self.spill, Spill::Memory)
            && let Some(store) = store
        {
            self.spill = self.start_file(store, &[]).await;
        }
        match &mut self.spill {
            Spill::File(file, path) => match file.flush().await {
                Ok(()) => Some(path.clone()),
                Err(error) => {
                    tracing::warn!(%error, "the command output could not be saved whole");
                    None
                }
            },
            Spill::Memory | Spill::Nowhere => None,
        }
    }
}

/// The last [`MAX_OUTPUT_CHARS`] characters of `text`, led by `...` and a blank line when cut
/// (the metadata's `output`, as OpenCode shortens it).
fn metadata_tail(text: &str) -> String {
    let count = text.chars().count();
    if count <= MAX_OUTPUT_CHARS {
        return text.to_owned();
    }
    let start = text.char_indices().nth(count - MAX_OUTPUT_CHARS).map_or(0, |(at, _)| at);
    format!("...\n\n{}", &text[start..])
}

/// The end of `text` the model gets: at most `max_lines` lines and `max_bytes` bytes, and
/// whether anything was cut. A last line longer than `max_bytes` alone keeps its end (from a
/// character boundary), as OpenCode 1.18.34 does.
fn tail(text: &str, max_lines: usize, max_bytes: usize) -> (&str, bool) {
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.len() <= max_lines && text.len() <= max_bytes {
        return (text, false);
    }
    let (mut taken, mut bytes) = (0usize, 0usize);
    for line in lines.iter().rev() {
        if taken == max_lines {
            break;
        }
        let size = line.len() + usize::from(taken > 0);
        if bytes + size > max_bytes {
            if taken == 0 {
                let mut start = text.len() - max_bytes.min(line.len());
                while !text.is_char_boundary(start) {
                    start += 1;
                }
                return (&text[start..], true);
            }
            break;
        }
        taken += 1;
        bytes += size;
    }
    // The kept lines are the last `bytes` bytes: each but the first is preceded by a newline.
    (&text[text.len() - bytes..], true)
}

fn signal_group(pgid: Option<Pid>, signal: Signal) {
    if let Some(pgid) = pgid {
        // ESRCH (the group is gone already) is the expected failure.
        if let Err(error) = killpg(pgid, signal)
            && error != nix::errno::Errno::ESRCH
        {
            tracing::debug!(?error, ?signal, "killpg failed");
        }
    }
}

async fn pump(mut reader: impl tokio::io::AsyncRead + Unpin, sender: mpsc::Sender<Vec<u8>>) {
    let mut buffer = vec![0u8; 8192];
    loop {
        match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if sender.send(buffer[..n].to_vec()).await.is_err() {
                    break;
                }
            }
        }
    }
}

#[async_trait]
impl TypedTool for BashTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Input = BashArgs;

    async fn run(&self, args: BashArgs, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let workdir =
            ctx.resolve_path(args.workdir.as_deref().unwrap_or(""), PathKind::Directory).await?.path;
        let analysis = asks::authorize(ctx, &args.command, &workdir).await?;
        let excluded = ctx.sandbox().excludes(&analysis);
        self.run(&args, &workdir, excluded, ctx).await
    }
}

impl BashTool {
    async fn run(
        &self,
        args: &BashArgs,
        workdir: &Path,
        excluded: bool,
        ctx: &ToolContext,
    ) -> Result<ToolSuccess, ToolError> {
        let timeout_ms = args.timeout.unwrap_or(DEFAULT_TIMEOUT_MS).min(MAX_TIMEOUT_MS);
        let description = args.description.clone().map_or(Value::Null, Value::String);
        // Secrets stay out of what commands (and so the model) can read.
        let env = ctx.shell_env().filter(std::env::vars_os());
        let target =
            SandboxTarget { workspace: ctx.workspace().root().to_path_buf(), tmpdir: tmpdir_of(&env) };
        let mut command = tokio::process::Command::new(&self.shell);
        command
            .arg("-c")
            .arg(&args.command)
            .current_dir(workdir)
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let confinement = ctx.sandbox().confine_tokio(&mut command, &target, excluded)?;
        let mut child = command.spawn().map_err(|e| match &confinement {
            Confinement::Confined(_) => {
                ToolError::Sandbox { reason: format!("the command could not be started in the sandbox: {e}") }
            }
            Confinement::Unconfined(_) => ToolError::io("spawn", self.shell.to_string_lossy(), e),
        })?;
        let pgid = child.id().and_then(|pid| i32::try_from(pid).ok()).map(Pid::from_raw);
        let (sender, mut chunks) = mpsc::channel::<Vec<u8>>(64);
        let mut pumps = Vec::new();
        if let Some(stdout) = child.stdout.take() {
            pumps.push(tokio::spawn(pump(stdout, sender.clone())));
        }
        if let Some(stderr) = child.stderr.take() {
            pumps.push(tokio::spawn(pump(stderr, sender.clone())));
        }
        drop(sender);

        let store = ctx.tool_output();
        let report = |collected: &Collected| {
            let text = metadata_tail(&collected.text());
            ctx.metadata(
                None,
                Some(object([("output", Value::String(text)), ("description", description.clone())])),
            );
        };
        let mut collected = Collected::default();
        report(&collected);
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut last_report = Instant::now();
        let mut pending_report = false;
        let (mut timed_out, mut aborted) = (false, false);
        let mut status: Option<std::process::ExitStatus> = None;
        let mut drain_until: Option<Instant> = None;
        let mut streams_open = true;
        // Set when the group must be killed: SIGTERM was sent, SIGKILL follows at this instant.
        let mut kill_at: Option<Instant> = None;
        let far = Instant::now() + Duration::from_secs(86_400 * 365);

        loop {
            if status.is_some() && !streams_open {
                break;
            }
            tokio::select! {
                chunk = chunks.recv(), if streams_open => match chunk {
                    Some(bytes) => {
                        collected.push(bytes, store).await;
                        if last_report.elapsed() >= PROGRESS_INTERVAL {
                            report(&collected);
                            last_report = Instant::now();
                            pending_report = false;
                        } else {
                            pending_report = true;
                        }
                    }
                    None => streams_open = false,
                },
                exit = child.wait(), if status.is_none() => {
                    status = Some(exit.map_err(|e| ToolError::io("wait for", &args.command, e))?);
                    drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
                }
                () = tokio::time::sleep_until(deadline), if !timed_out && !aborted && status.is_none() => {
                    timed_out = true;
                    signal_group(pgid, Signal::SIGTERM);
                    kill_at = Some(Instant::now() + KILL_GRACE);
                }
                () = ctx.abort().cancelled(), if !aborted && !timed_out && status.is_none() => {
                    aborted = true;
                    // The output so far goes into the part now, in case cleanup gives up on us.
                    while let Ok(bytes) = chunks.try_recv() {
                        collected.push(bytes, store).await;
                    }
                    report(&collected);
                    signal_group(pgid, Signal::SIGTERM);
                    kill_at = Some(Instant::now() + KILL_GRACE);
                }
                () = tokio::time::sleep_until(kill_at.unwrap_or(far)), if kill_at.is_some() => {
                    signal_group(pgid, Signal::SIGKILL);
                    kill_at = None;
                }
                () = tokio::time::sleep_until(drain_until.unwrap_or(far)), if drain_until.is_some() && streams_open => {
                    // Background children still hold the pipes: stop reading them.
                    streams_open = false;
                }
                () = tokio::time::sleep_until(last_report + PROGRESS_INTERVAL), if pending_report => {
                    report(&collected);
                    last_report = Instant::now();
                    pending_report = false;
                }
            }
        }
        if kill_at.is_some() {
            // The shell is gone; finish off the group it leaves behind after a kill request.
            signal_group(pgid, Signal::SIGKILL);
        }
        for pump in pumps {
            pump.abort();
        }
        while let Ok(bytes) = chunks.try_recv() {
            collected.push(bytes, store).await;
        }

        // What the model gets, as OpenCode 1.18.34 gives it: the end of the output,
        // and where the whole of it was saved.
        let kept = collected.text();
        let (end, cut) = tail(&kept, MAX_OUTPUT_LINES, MAX_OUTPUT_BYTES);
        let truncated = cut || collected.dropped;
        let saved = if truncated { collected.saved(store).await } else { None };
        let mut output = end.to_owned();
        if output.is_empty() && !timed_out && !aborted {
            // What the model reads for a silent command, as OpenCode writes it.
            output.push_str(NO_OUTPUT);
        }
        if truncated {
            let note = match &saved {
                Some(path) => {
                    format!("...output truncated...\n\nFull output saved to: {}\n\n", path.display())
                }
                None => "...output truncated...\n\n".to_owned(),
            };
            output.insert_str(0, &note);
        }
        if timed_out {
            output.push_str(&format!("\n\n(Command timed out after {timeout_ms} ms)"));
        }
        if aborted {
            output.push_str("\n\n(Command was aborted)");
        }
        if let Confinement::Confined(confined) = &confinement
            && let Some(note) = denial_note(&output, confined)
        {
            output.push_str(&note);
        }
        let exit = status.and_then(|s| s.code()).map_or(Value::Null, Value::from);
        // Clients show the end of the output as it streamed (OpenCode: the output when none did).
        let shown = if kept.is_empty() { metadata_tail(&output) } else { metadata_tail(&kept) };
        let mut metadata =
            object([("output", Value::String(shown)), ("exit", exit), ("truncated", Value::Bool(truncated))]);
        if let Some(path) = &saved {
            metadata.insert("outputPath".into(), Value::String(path.display().to_string()));
        }
        let sandbox = match &confinement {
            Confinement::Confined(confined) => confined.mode.as_str(),
            Confinement::Unconfined(_) => "off",
        };
        metadata.insert("sandbox".into(), Value::String(sandbox.to_owned()));
        if timed_out {
            metadata.insert("timedOut".into(), Value::Bool(true));
        }
        if aborted {
            metadata.insert("aborted".into(), Value::Bool(true));
        }
        // The title is the command, as OpenCode's clients show it.
        Ok(ToolSuccess::new(args.command.clone(), output, metadata))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_the_last_lines_or_bytes_as_opencode_cuts_them() {
        // Within both limits: whole, not cut.
        assert_eq!(tail("a\nb\n", 3, 100), ("a\nb\n", false));
        // Three lines are split from "a\nb\n" (the last is empty): two kept.
        assert_eq!(tail("a\nb\n", 2, 100), ("b\n", true));
        // Bytes: whole lines only, as many as fit.
        assert_eq!(tail("aaaa\nbb\ncc", 10, 6), ("bb\ncc", true));
        // One line longer than the limit keeps its end, from a character boundary.
        assert_eq!(tail("xxxxé", 10, 2), ("é", true));
        assert_eq!(tail("xxxxéz", 10, 2), ("z", true));
    }

    #[test]
    fn the_metadata_shows_the_last_characters_led_by_dots() {
        assert_eq!(metadata_tail("short"), "short");
        let long = "é".repeat(MAX_OUTPUT_CHARS + 3);
        let shown = metadata_tail(&long);
        assert_eq!(shown, format!("...\n\n{}", "é".repeat(MAX_OUTPUT_CHARS)));
    }
}
