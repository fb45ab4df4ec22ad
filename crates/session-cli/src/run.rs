//! `session run`: one prompt against a real provider, streamed to the terminal.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use async_trait::async_trait;
use rust_decimal::Decimal;
use session_core::{
    Identifier as _, Message, MessageId, PartKind, QuestionId, SessionId, permission::Action,
    permission::PermissionAsk, permission::Reply, permission::Rule,
};
use session_runtime::clock::{Clock as _, SystemClock};
use session_runtime::commands::CommandInput;
use session_runtime::questions::QuestionRequest;
use session_runtime::sessions::RequestAhead;
pub use session_runtime::{Assembled, RuntimeSetup};
use session_runtime::{BusEvent, PromptInput};
use session_store::{ListSessions, SessionPatch, Store, StoreOptions};
use session_tools::{PermissionAnswer, PermissionAsker};
use tokio::sync::{mpsc, oneshot};

use crate::run_json::{RunFormat, RunOutput};
use crate::run_question;
use crate::status_line::StatusLine;

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
    /// `-c/--continue`: continue the latest session of this folder.
    pub continue_latest: bool,
    /// `--fork`: continue a copy of the session (`--session` or `--continue`), not the session.
    pub fork: bool,
    /// `--title`: the session's title (else one is generated from the first prompt).
    pub title: Option<String>,
    /// `-f/--file`: files attached to the prompt.
    pub files: Vec<PathBuf>,
    /// `--base-url` for the model's provider.
    pub base_url: Option<String>,
    /// `--db`: a PostgreSQL URL overriding the config's `database`.
    pub db: Option<String>,
    /// Output format.
    pub format: RunFormat,
    /// `--thinking`: include reasoning in the JSON lines (text always shows it).
    pub thinking: bool,
    /// How asks are answered.
    pub ask: AskMode,
    /// Draw the spinner and the retry countdown on stderr (only when it is a terminal).
    pub status_line: bool,
    /// Offer the `question` tool and ask its questions on the terminal (stdin and stderr are
    /// one); without, a new session denies the tool as OpenCode's `run` does.
    pub questions: bool,
    /// The working directory (the workspace).
    pub cwd: PathBuf,
    /// The user's home.
    pub home: Option<PathBuf>,
    /// Where data lives (the SQLite file, snapshots).
    pub data_dir: PathBuf,
    /// The environment, for config substitutions and API keys.
    pub env: HashMap<String, String>,
}

/// A question for the terminal, asked by the run loop so that it never lands between two
/// pieces of output: everything published before it is shown first, nothing while it waits.
struct Question {
    text: String,
    answer: oneshot::Sender<String>,
}

/// Answers asks as the flags and the terminal allow; never a silent allow.
struct CliAsker {
    mode: AskMode,
    failures: mpsc::UnboundedSender<String>,
    /// Terminal questions go to the run loop, which owns the terminal.
    questions: mpsc::UnboundedSender<Question>,
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
                let text =
                    format!("permission: {what}\n  allow [o]nce, [a]lways, [r]eject, or type feedback: ");
                let (answer, answered) = oneshot::channel();
                // A closed loop (the run is ending) or no answer rejects.
                let line = match self.questions.send(Question { text, answer }) {
                    Ok(()) => answered.await.unwrap_or_default(),
                    Err(_) => String::new(),
                };
                Some(parse_answer(line.trim()))
            }
        }
    }
}

/// The reply a typed answer means; anything else is feedback, which rejects.
fn parse_answer(line: &str) -> PermissionAnswer {
    match line {
        "o" | "once" | "y" | "yes" => PermissionAnswer { reply: Reply::Once, message: None },
        "a" | "always" => PermissionAnswer { reply: Reply::Always, message: None },
        "" | "r" | "reject" | "n" | "no" => PermissionAnswer { reply: Reply::Reject, message: None },
        feedback => PermissionAnswer { reply: Reply::Reject, message: Some(feedback.to_owned()) },
    }
}

/// Who waits for what the terminal is asked.
enum Asking {
    /// A permission ask, for the typed line.
    Permission(oneshot::Sender<String>),
    /// A `question` request, for its answers.
    Question(QuestionId),
}

/// What the terminal answered.
enum Typed {
    /// The line typed for a permission ask.
    Line(String),
    /// A question request's answers; `None`: dismissed.
    Answers(Option<Vec<Vec<String>>>),
}

/// A question on the terminal waiting for its line.
struct Waiting {
    asking: Asking,
    line: tokio::task::JoinHandle<std::io::Result<Typed>>,
}

/// What was typed for the waiting question (`None` on a read error); never resolves without one.
async fn typed(waiting: &mut Option<Waiting>) -> Option<Typed> {
    match waiting {
        Some(waiting) => match (&mut waiting.line).await {
            Ok(Ok(typed)) => Some(typed),
            _ => None,
        },
        None => std::future::pending().await,
    }
}

/// What a run used over all its steps, and how full the context was at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct RunTotals {
    /// Input tokens over every step (cache reads and writes included).
    input: u64,
    /// Output tokens over every step (reasoning included).
    output: u64,
    /// The last step's context: what it read and wrote, which the next step carries.
    context: u64,
}

impl RunTotals {
    /// Sums the messages of `history` that are not in `before` (the run's own).
    fn of_run(history: &[session_core::MessageWithParts], before: &HashSet<MessageId>) -> (Self, Decimal) {
        let mut totals = Self::default();
        let mut cost = Decimal::ZERO;
        for message in history.iter().filter(|m| !before.contains(m.info.id())) {
            let Message::Assistant(assistant) = &message.info else { continue };
            cost += assistant.cost;
            for part in &message.parts {
                if let PartKind::StepFinish(step) = &part.kind {
                    let t = &step.tokens;
                    totals.input += t.input + t.cache.read + t.cache.write;
                    totals.output += t.output + t.reasoning;
                    totals.context = t.input + t.cache.read + t.cache.write + t.output + t.reasoning;
                }
            }
        }
        (totals, cost)
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
    Ok(session_runtime::setup::open_store(database, data_dir, options).await?)
}

/// Builds the runtime `session run` and `session serve` use (session-runtime's
/// [`session_runtime::assemble`]) and prints the configuration's warnings.
pub async fn assemble(setup: &RuntimeSetup, asker: Arc<dyn PermissionAsker>) -> Result<Assembled> {
    assemble_sending(setup, asker, None, &[]).await
}

/// [`assemble`] with the first request of `first`, a new session's first prompt (the session
/// to be created with `rules`), sent while the store opens
/// ([`session_runtime::setup::assemble_sending`]).
async fn assemble_sending(
    setup: &RuntimeSetup,
    asker: Arc<dyn PermissionAsker>,
    first: Option<&PromptInput>,
    rules: &[Rule],
) -> Result<Assembled> {
    let mut assembled = session_runtime::setup::assemble_sending(setup, asker.clone(), first, rules).await?;
    if crate::trust::ask_once(&assembled.warnings, &setup.cwd, &setup.env, setup.home.as_deref()) {
        assembled = session_runtime::setup::assemble_sending(setup, asker, first, rules).await?;
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

/// The session a run continues (`--session`, `--continue`, a `--fork` of either), or a new one;
/// true when this run made it.
async fn pick_session(
    options: &RunOptions,
    runtime: &session_runtime::Runtime,
    store: &Arc<dyn Store>,
    ahead: Option<&RequestAhead>,
) -> Result<(SessionId, bool)> {
    let continued = match (&options.session, options.continue_latest) {
        (Some(id), _) => {
            let id = SessionId::parse(id).map_err(|error| anyhow!("--session: {error}"))?;
            Some(store.get_session(&id).await.map_err(|error| anyhow!("--session {id}: {error}"))?.id)
        }
        (None, true) => {
            let query = ListSessions {
                limit: 1,
                directory: Some(options.cwd.to_string_lossy().into_owned()),
                roots_only: true,
                ..ListSessions::default()
            };
            let page = store.list_sessions(&query).await?;
            let latest = page.sessions.into_iter().next().ok_or_else(|| {
                anyhow!(
                    "--continue: no session in {} yet; run without --continue to start one",
                    options.cwd.display()
                )
            })?;
            Some(latest.id)
        }
        (None, false) => None,
    };
    let (id, created) = match continued {
        Some(id) if options.fork => {
            (store.fork_session(&id, None).await.map_err(|error| anyhow!("--fork {id}: {error}"))?.id, true)
        }
        Some(id) => (id, false),
        None if options.fork => anyhow::bail!("--fork needs a session to copy: --session ID or --continue"),
        // A new session takes the id its first request, sent ahead, already named, and the
        // rules OpenCode's `run` gives its sessions.
        None => {
            let id = ahead.map(|ahead| ahead.session_id().clone());
            (
                runtime.create_session_as(id, options.title.clone(), run_rules(options.questions)).await?.id,
                true,
            )
        }
    };
    if let Some(title) = options.title.as_ref().filter(|_| !created || options.fork) {
        store
            .update_session(&id, SessionPatch { title: Some(title.clone()), ..SessionPatch::default() })
            .await?;
    }
    Ok((id, created))
}

/// The rules of a session `session run` starts, as OpenCode 1.18.34's `run` sets them: no one
/// is there to answer a question or to switch into or out of plan mode. On a terminal the
/// questions are asked there, so `question` stays allowed.
fn run_rules(questions: bool) -> Vec<Rule> {
    ["question", "plan_enter", "plan_exit"]
        .into_iter()
        .filter(|permission| !(questions && *permission == "question"))
        .map(|permission| Rule::new(permission, "*", Action::Deny))
        .collect()
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
    // A file that cannot be attached stops the run before anything is stored.
    let attachments = crate::attach::attachments(&options.files, &options.cwd)?;
    let (failures, mut failed) = mpsc::unbounded_channel();
    let (questions, mut asked) = mpsc::unbounded_channel::<Question>();
    let mut status = StatusLine::new(options.status_line && options.format == RunFormat::Text);
    let asker = CliAsker { mode: options.ask, failures, questions };
    let input = PromptInput {
        text: options.prompt.clone(),
        agent: options.agent.clone(),
        // `--model` beats the agent's model; without it the agent's model, else the config's
        // `model`, is the runtime's choice.
        model: options.model.as_deref().and_then(session_runtime::models::parse_model_ref),
        variant: options.variant.clone(),
        attachments,
        ..PromptInput::default()
    };
    // A new session's first prompt (not a command) is sent while the store opens.
    let new_session = options.session.is_none() && !options.continue_latest && options.command.is_none();
    let first = new_session.then_some(&input);
    let Assembled { runtime, store, mcp, ahead, .. } =
        assemble_sending(&setup, Arc::new(asker), first, &run_rules(options.questions)).await?;
    let (session_id, created) = pick_session(&options, &runtime, &store, ahead.as_ref()).await?;
    // The messages already there are not this run's: the totals count the run's own.
    let before: HashSet<MessageId> = match created {
        true => HashSet::new(),
        false => {
            store.load_history(&session_id).await?.messages.iter().map(|m| m.info.id().clone()).collect()
        }
    };
    let mut events = runtime.bus().subscribe();
    let mut renderer = RunOutput::new(out, options.format, &session_id, options.thinking);
    let mut run = {
        let runtime = runtime.clone();
        let id = session_id.clone();
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
                None => runtime.prompt_with(&id, input, ahead).await,
            }
        })
    };
    let mut interrupted = false;
    // One listener for the whole run, so a signal between two loop turns is not missed.
    let interrupt = interrupt_signal();
    tokio::pin!(interrupt);
    let mut ask_failure = None;
    let mut countdown = tokio::time::interval(std::time::Duration::from_millis(250));
    // A question on the terminal, and the events that arrived while it waits.
    let mut waiting: Option<Waiting> = None;
    let mut held: Vec<BusEvent> = Vec::new();
    // Question requests of the `question` tool, asked one at a time.
    let mut due: VecDeque<QuestionRequest> = VecDeque::new();
    let result = loop {
        if waiting.is_none()
            && let Some(request) = due.pop_front()
        {
            status.pause();
            renderer.end_line()?;
            let id = request.id.clone();
            let line = tokio::task::spawn_blocking(move || {
                let answers =
                    run_question::ask(&request, &mut std::io::stdin().lock(), &mut std::io::stderr())?;
                Ok(Typed::Answers(answers))
            });
            waiting = Some(Waiting { asking: Asking::Question(id), line });
        }
        tokio::select! {
            biased;
            () = &mut interrupt, if !interrupted => {
                interrupted = true;
                status.pause();
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
            question = asked.recv(), if waiting.is_none() => {
                let Some(question) = question else { continue };
                // What was published before the ask (the tool's own line) comes first.
                while let Ok(event) = events.try_recv() {
                    if !run_question::route(&event, &mut due, options.questions, &runtime) {
                        show(&mut renderer, &mut status, &event)?;
                    }
                }
                status.pause();
                renderer.end_line()?;
                let text = question.text;
                let line = tokio::task::spawn_blocking(move || {
                    let mut stderr = std::io::stderr();
                    write!(stderr, "{text}")?;
                    stderr.flush()?;
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line).map(|_| Typed::Line(line))
                });
                waiting = Some(Waiting { asking: Asking::Permission(question.answer), line });
            }
            typed = typed(&mut waiting), if waiting.is_some() => {
                if let Some(done) = waiting.take() {
                    match (done.asking, typed) {
                        (Asking::Permission(answer), Some(Typed::Line(line))) => {
                            let _ = answer.send(line);
                        }
                        (Asking::Permission(answer), _) => {
                            let _ = answer.send(String::new());
                        }
                        // A question withdrawn meanwhile (an interrupt) answers nothing.
                        (Asking::Question(id), Some(Typed::Answers(Some(answers)))) => {
                            let _ = runtime.reply_question(&id, answers);
                        }
                        (Asking::Question(id), _) => {
                            let _ = runtime.reject_question(&id);
                        }
                    }
                }
                status.resume();
                for event in std::mem::take(&mut held) {
                    show(&mut renderer, &mut status, &event)?;
                }
            }
            _ = countdown.tick(), if status.counting_down() => status.tick(SystemClock.now_ms()),
            event = events.recv() => match event {
                Ok(event) if run_question::route(&event, &mut due, options.questions, &runtime) => {}
                Ok(event) if waiting.is_some() => held.push(event),
                Ok(event) => show(&mut renderer, &mut status, &event)?,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break (&mut run).await,
            },
            finished = &mut run => {
                for event in std::mem::take(&mut held) {
                    show(&mut renderer, &mut status, &event)?;
                }
                while let Ok(event) = events.try_recv() {
                    show(&mut renderer, &mut status, &event)?;
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
    let reply = match result.context("the run stopped unexpectedly")? {
        Ok(reply) => reply,
        Err(error) => {
            // Nothing ran (an unknown agent, a busy session): a session made for it goes too.
            if created {
                discard(store.as_ref(), &session_id).await;
            }
            store.close().await?;
            // Written last: a closed stdout must not keep the store from being cleaned up.
            renderer.refused(&error.to_string())?;
            return Err(error.into());
        }
    };
    let history = store.load_history(&session_id).await?.messages;
    let (totals, cost) = RunTotals::of_run(&history, &before);
    // A failed start (a provider that refused the first request, a server that is not
    // running) keeps its session: the prompt is stored, the error beside it, and `--continue`
    // goes on from there, as in OpenCode. Nothing the user typed is lost.
    let session = session_id.to_string();
    // Subagents' costs are their sessions'; the parent's line adds them up.
    let subagents = match children_cost(store.as_ref(), &session_id).await {
        Some(children) => format!(" (with subagents: ${})", (cost + children).round_dp(6).normalize()),
        None => String::new(),
    };
    renderer.totals(&format!(
        "tokens: {} in, {} out | context: {} | cost: ${}{subagents} | session: {session}",
        totals.input,
        totals.output,
        totals.context,
        cost.round_dp(6).normalize(),
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

/// Shows one event with the status line out of the way.
fn show<W: Write>(renderer: &mut RunOutput<W>, status: &mut StatusLine, event: &BusEvent) -> Result<()> {
    status.suspend(|| renderer.event(event).map(|()| renderer.at_line_start()))?;
    status.event(event, SystemClock.now_ms());
    Ok(())
}

/// Deletes a session this run made and could not use; a failure is only logged.
async fn discard(store: &dyn Store, id: &SessionId) {
    if let Err(error) = store.delete_session(id).await {
        tracing::warn!("could not remove the unused session {id}: {error}");
    }
}
