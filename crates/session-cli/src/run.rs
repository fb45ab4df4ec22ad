//! `session run`: one prompt against a real provider, streamed to the terminal.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use async_trait::async_trait;
use session_core::{Identifier as _, SessionId, permission::PermissionAsk, permission::Reply};
pub use session_runtime::{Assembled, RuntimeSetup};
use session_runtime::{Clock as _, CommandInput, PromptInput, SystemClock};
use session_store::{Store, StoreOptions};
use session_tools::{PermissionAnswer, PermissionAsker};
use tokio::sync::mpsc;

use crate::render::{OutputFormat, Renderer};
use crate::status_line::{StatusLine, StatusPause};

/// Exit code of a run interrupted by the user.
pub const EXIT_INTERRUPTED: u8 = 130;

/// How permission asks are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskMode {
    /// Ask on the terminal.
    Terminal,
    /// Answer "once" (`--yes`).
    Yes,
    /// Reject (`--deny`).
    Deny,
    /// No terminal and no flag: an ask fails the run.
    Fail,
}

/// Everything `session run` needs, gathered by `main` from flags and the environment.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The prompt.
    pub prompt: String,
    /// `--model provider/model`.
    pub model: Option<String>,
    /// `--agent`.
    pub agent: Option<String>,
    /// `--command`: run this command with `prompt` as its arguments.
    pub command: Option<String>,
    /// `--variant`: the model variant (reasoning effort).
    pub variant: Option<String>,
    /// `--session`: continue this session.
    pub session: Option<String>,
    /// `--base-url` for the model's provider.
    pub base_url: Option<String>,
    /// `--db`: a PostgreSQL URL overriding the config's `database`.
    pub db: Option<String>,
    /// Output format.
    pub format: OutputFormat,
    /// How asks are answered.
    pub ask: AskMode,
    /// Draw the spinner and the retry countdown on stderr (only when it is a terminal).
    pub status_line: bool,
    /// The working directory (the workspace).
    pub cwd: PathBuf,
    /// The user's home.
    pub home: Option<PathBuf>,
    /// Where data lives (the SQLite file, snapshots).
    pub data_dir: PathBuf,
    /// The environment, for config substitutions and API keys.
    pub env: HashMap<String, String>,
}

/// Answers asks as the flags and the terminal allow; never a silent allow.
struct CliAsker {
    mode: AskMode,
    failures: mpsc::UnboundedSender<String>,
    /// The status line gives up the terminal while a question waits there.
    status: StatusPause,
}

#[async_trait]
impl PermissionAsker for CliAsker {
    async fn ask(&self, ask: &PermissionAsk) -> Option<PermissionAnswer> {
        let what = format!("{} {}", ask.request.permission, ask.request.patterns.join(", "));
        match self.mode {
            AskMode::Yes => Some(PermissionAnswer { reply: Reply::Once, message: None }),
            AskMode::Deny => Some(PermissionAnswer { reply: Reply::Reject, message: None }),
            AskMode::Fail => {
                let _ = self.failures.send(format!(
                    "the model asked for permission ({what}) and there is no terminal to ask: rerun with --yes to allow such asks once, or --deny to reject them"
                ));
                Some(PermissionAnswer { reply: Reply::Reject, message: None })
            }
            AskMode::Terminal => {
                let question =
                    format!("\npermission: {what}\n  allow [o]nce, [a]lways, [r]eject, or type feedback: ");
                self.status.pause();
                let answer = tokio::task::spawn_blocking(move || {
                    let mut stderr = std::io::stderr();
                    let _ = write!(stderr, "{question}");
                    let _ = stderr.flush();
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line).map(|_| line)
                })
                .await;
                self.status.resume();
                let line = match answer {
                    Ok(Ok(line)) => line.trim().to_owned(),
                    _ => String::new(),
                };
                Some(match line.as_str() {
                    "o" | "once" | "y" | "yes" => PermissionAnswer { reply: Reply::Once, message: None },
                    "a" | "always" => PermissionAnswer { reply: Reply::Always, message: None },
                    "" | "r" | "reject" | "n" | "no" => {
                        PermissionAnswer { reply: Reply::Reject, message: None }
                    }
                    feedback => PermissionAnswer { reply: Reply::Reject, message: Some(feedback.to_owned()) },
                })
            }
        }
    }
}

/// Opens the store the config or `--db` names, or the embedded SQLite file.
pub async fn open_store(database: Option<&str>, data_dir: &Path) -> Result<Arc<dyn Store>> {
    open_store_with(database, data_dir, StoreOptions::default()).await
}

/// Opens the store like [`open_store`], with the given store options (lease time, owner).
pub async fn open_store_with(
    database: Option<&str>,
    data_dir: &Path,
    options: StoreOptions,
) -> Result<Arc<dyn Store>> {
    Ok(session_runtime::open_store(database, data_dir, options).await?)
}

/// Builds the runtime `session run` and `session serve` use (session-runtime's
/// [`session_runtime::assemble`]) and prints the configuration's warnings.
pub async fn assemble(setup: &RuntimeSetup, asker: Arc<dyn PermissionAsker>) -> Result<Assembled> {
    let mut assembled = session_runtime::assemble(setup, asker.clone()).await?;
    if crate::trust::ask_once(&assembled.warnings, &setup.cwd, &setup.env, setup.home.as_deref()) {
        assembled = session_runtime::assemble(setup, asker).await?;
    }
    for warning in &assembled.warnings {
        eprintln!("session: warning: {warning}");
    }
    if let Some(warning) = &assembled.sandbox_warning {
        eprintln!("session: warning: {warning}");
    }
    Ok(assembled)
}

/// What to do about a run's final error, when the error itself does not say.
fn hint(error: &session_core::MessageError) -> &'static str {
    let message = error.message();
    let unreachable = ["ECONNREFUSED", "tcp connect error", "dns error", "error sending request"]
        .iter()
        .any(|sign| message.contains(sign));
    if unreachable {
        " (is the provider's server running? check its address: --base-url, or provider.<id>.options.baseURL in your config)"
    } else {
        ""
    }
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM: both abort the run cleanly (SPEC 8).
async fn interrupt_signal() {
    #[cfg(unix)]
    if let Ok(mut terminate) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        return;
    }
    // Without a way to listen, never resolve: a failed listener must not abort the run.
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The summed cost of the assistant messages of `parent`'s child sessions (subagent tasks);
/// `None` when it has none (or they cannot be read, which only costs the extra figure).
async fn children_cost(store: &dyn Store, parent: &SessionId) -> Option<rust_decimal::Decimal> {
    let mut query = session_store::ListSessions { limit: 1000, ..session_store::ListSessions::default() };
    let mut children = Vec::new();
    loop {
        let page = store.list_sessions(&query).await.ok()?;
        children
            .extend(page.sessions.into_iter().filter(|s| s.parent_id.as_ref() == Some(parent)).map(|s| s.id));
        match page.next {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    if children.is_empty() {
        return None;
    }
    let mut total = rust_decimal::Decimal::ZERO;
    for child in &children {
        for message in store.load_history(child).await.ok()?.messages {
            if let session_core::Message::Assistant(assistant) = message.info {
                total += assistant.cost;
            }
        }
    }
    Some(total)
}

/// Runs one prompt; returns the process exit code.
pub async fn run_prompt(options: RunOptions, out: impl Write + Send + 'static) -> Result<u8> {
    let setup = RuntimeSetup {
        cwd: options.cwd.clone(),
        home: options.home.clone(),
        data_dir: options.data_dir.clone(),
        env: options.env.clone(),
        model: options.model.clone(),
        base_url: options.base_url.clone(),
        db: options.db.clone(),
        store_options: StoreOptions::default(),
    };
    let (failures, mut failed) = mpsc::unbounded_channel();
    let mut status = StatusLine::new(options.status_line && options.format == OutputFormat::Text);
    let asker = CliAsker { mode: options.ask, failures, status: status.pause_handle() };
    let Assembled { runtime, store, model, mcp, .. } = assemble(&setup, Arc::new(asker)).await?;
    let session_id = match &options.session {
        Some(id) => {
            let id = SessionId::parse(id).map_err(|error| anyhow!("--session: {error}"))?;
            store.get_session(&id).await.map_err(|error| anyhow!("--session {id}: {error}"))?.id
        }
        None => runtime.create_session(None).await?.id,
    };
    let mut events = runtime.bus().subscribe();
    let mut renderer = Renderer::new(out, options.format);
    let mut run = {
        let runtime = runtime.clone();
        let id = session_id.clone();
        // `--model` beats the agent's model; without it the agent's model, else the config's
        // `model`, is the runtime's choice.
        let model = options.model.is_some().then_some(model);
        let input = PromptInput {
            text: options.prompt.clone(),
            agent: options.agent.clone(),
            model,
            variant: options.variant.clone(),
            ..PromptInput::default()
        };
        let command = options.command.clone().map(|command| CommandInput {
            command,
            arguments: options.prompt.clone(),
            agent: input.agent.clone(),
            model: input.model.clone(),
            variant: input.variant.clone(),
        });
        tokio::spawn(async move {
            match command {
                Some(command) => runtime.command(&id, &command).await.map(|(_, answer)| answer),
                None => runtime.prompt(&id, input).await,
            }
        })
    };
    let mut interrupted = false;
    // One listener for the whole run, so a signal between two loop turns is not missed.
    let interrupt = interrupt_signal();
    tokio::pin!(interrupt);
    let mut ask_failure = None;
    let mut countdown = tokio::time::interval(std::time::Duration::from_millis(250));
    let result = loop {
        tokio::select! {
            biased;
            () = &mut interrupt, if !interrupted => {
                interrupted = true;
                eprintln!("\nsession: interrupting (press Ctrl-C again to quit at once)");
                runtime.cancel(&session_id);
                tokio::spawn(async {
                    interrupt_signal().await;
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                });
            }
            message = failed.recv(), if ask_failure.is_none() => {
                if let Some(message) = message {
                    ask_failure = Some(message);
                    runtime.cancel(&session_id);
                }
            }
            _ = countdown.tick(), if status.counting_down() => status.tick(SystemClock.now_ms()),
            event = events.recv() => match event {
                Ok(event) => {
                    status.suspend(|| renderer.event(&event))?;
                    status.event(&event, SystemClock.now_ms());
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break (&mut run).await,
            },
            finished = &mut run => {
                while let Ok(event) = events.try_recv() {
                    status.suspend(|| renderer.event(&event))?;
                }
                break finished;
            }
        }
    };
    drop(status);
    if interrupted || ask_failure.is_some() {
        runtime.cancel_background();
    }
    // A title still on its way is stored before the process exits.
    runtime.settle().await;
    // Every MCP server this run started ends with it.
    mcp.shutdown().await;
    while let Ok(event) = events.try_recv() {
        renderer.event(&event)?;
    }
    let reply = result.context("the run stopped unexpectedly")??;
    let tokens = reply.tokens;
    // Subagents' costs are their sessions'; the parent's line adds them up.
    let subagents = match children_cost(store.as_ref(), &session_id).await {
        Some(cost) => format!(" (with subagents: ${})", (reply.cost + cost).round_dp(6).normalize()),
        None => String::new(),
    };
    renderer.totals(&format!(
        "tokens: {} in, {} out | cost: ${}{subagents} | session: {}",
        tokens.input + tokens.cache.read + tokens.cache.write,
        tokens.output + tokens.reasoning,
        reply.cost.round_dp(6).normalize(),
        session_id,
    ))?;
    store.close().await?;
    if let Some(message) = ask_failure {
        eprintln!("session: {message}");
        return Ok(1);
    }
    if interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    if let Some(error) = reply.error {
        eprintln!("session: {}: {}{}", error.name(), error.message(), hint(&error));
        return Ok(1);
    }
    Ok(0)
}
