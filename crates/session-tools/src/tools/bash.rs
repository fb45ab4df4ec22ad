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
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{cut_chars, object};
use crate::context::{PathKind, ToolContext};
use crate::error::ToolError;
use crate::sandbox::{Confinement, SandboxTarget, denial_note, tmpdir_of};
use crate::tool::{ToolSuccess, TypedTool};

const NAME: &str = "bash";
/// The timeout when the call gives none (2 minutes).
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The longest timeout a call may ask for (10 minutes).
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// The output the model gets is cut after this many characters.
pub const MAX_OUTPUT_CHARS: usize = 30_000;
/// How long the process group has between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(200);
/// At most one progress report per this interval while output streams in.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);
/// After the shell exits, how long output still held open by its background children is read.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// Raw bytes kept: enough for `MAX_OUTPUT_CHARS` characters of any UTF-8.
const MAX_KEPT_BYTES: usize = MAX_OUTPUT_CHARS * 4;

/// The output of a command that printed nothing.
const NO_OUTPUT: &str = "(no output)";

const DESCRIPTION: &str = "Executes a shell command in the workspace (or in workdir) and returns its combined \
stdout and stderr, with an optional timeout in milliseconds (default 120000, at most 600000). Output longer \
than 30000 characters is truncated. Commands may run in a sandbox that limits where they can write and \
whether they can use the network; a refusal by the sandbox is explained after the output. Prefer \
the read, list, glob, grep, edit and write tools over cat, ls, find, grep, sed and echo.";

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct BashArgs {
    /// The command to execute
    command: String,
    /// Optional timeout in milliseconds
    timeout: Option<u64>,
    /// The working directory to run the command in. Defaults to the workspace root. Use this instead of 'cd' commands.
    workdir: Option<String>,
    /// Clear, concise description of what this command does in 5-10 words. Examples:
    /// Input: ls
    /// Output: Lists files in current directory
    ///
    /// Input: git status
    /// Output: Shows working tree status
    // Optional, as OpenCode 1.18.34 offers it: a call without it runs (issue 40).
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

/// Output collected from both pipes, in arrival order, kept up to a cap.
#[derive(Default)]
struct Collected {
    kept: Vec<u8>,
    total: usize,
}

impl Collected {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len();
        let room = MAX_KEPT_BYTES.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }

    /// The text so far, cut to `MAX_OUTPUT_CHARS`, and whether anything was cut.
    fn text(&self) -> (String, bool) {
        let text = String::from_utf8_lossy(&self.kept);
        let (head, cut) = cut_chars(&text, MAX_OUTPUT_CHARS);
        (head.to_owned(), cut || self.total > self.kept.len())
    }
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

        let report = |collected: &Collected| {
            let (text, _) = collected.text();
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
                        collected.push(&bytes);
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
                        collected.push(&bytes);
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
            collected.push(&bytes);
        }

        let (mut output, truncated) = collected.text();
        if output.is_empty() && !timed_out && !aborted {
            // What the model reads for a silent command, as OpenCode writes it (issue 40).
            output.push_str(NO_OUTPUT);
        }
        if truncated {
            output.push_str("\n\n(Output was truncated due to length limit)");
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
        let mut metadata = object([
            ("output", Value::String(output.clone())),
            ("exit", exit),
            ("truncated", Value::Bool(truncated)),
        ]);
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
        // The title is the command, as OpenCode's clients show it (issue 40).
        Ok(ToolSuccess::new(args.command.clone(), output, metadata))
    }
}
