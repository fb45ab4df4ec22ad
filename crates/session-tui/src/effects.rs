//! The effects the UI asks for, carried out on the runtime in tasks of their own (the loop
//! never waits on a run), and what their results do to the UI when they come back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use session_core::{
    AssistantMessage, CompactionPart, Identifier as _, MessageWithParts, PartKind, SessionId, TextPart,
};
use session_runtime::commands::CommandInput;
use session_runtime::models::parse_model_ref;
use session_runtime::sessions::Session;
use session_runtime::{PromptInput, Runtime, RuntimeError};
use tokio::sync::mpsc;

use crate::app::{App, Effect, PickerItem, PickerKind};
use crate::transcript::{NoteKind, Transcript};

/// The most bytes of a file `@path` attaches, and of a shell command's output.
pub const MAX_ATTACHED_BYTES: usize = 256 * 1024;
/// How long a `!command` may run.
pub const SHELL_TIMEOUT: Duration = Duration::from_secs(120);

/// What the effects work on.
pub struct Handles {
    /// The engine (and, through it, the sessions).
    pub runtime: Arc<Runtime>,
    /// The workspace.
    pub root: PathBuf,
    /// The model the runtime defaults to (`--model` or the config's), as provider/model.
    pub default_model: String,
    /// True when `--model` was given: every prompt names it.
    pub model_flag: bool,
}

/// A finished piece of background work.
pub enum Done {
    /// A prompt, command or compaction ended.
    Run(Result<AssistantMessage, RuntimeError>),
    /// A `!command` ended.
    Shell {
        /// The command.
        command: String,
        /// What it printed (stdout then stderr), and its exit status.
        output: String,
    },
    /// The sessions for the picker.
    Sessions(Result<Vec<PickerItem>>),
    /// A session to show (new or switched to).
    Open(Result<SessionId>),
    /// A revert or unrevert ended.
    Reverted {
        /// True for unrevert.
        redo: bool,
        /// The session after it.
        result: Result<Session, RuntimeError>,
    },
    /// An export ended.
    Exported(Result<PathBuf>),
}

/// `@path` words naming workspace files, as synthetic text parts with their contents.
pub fn mentioned_files(text: &str, root: &Path) -> Vec<PartKind> {
    let mut parts = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else { continue };
        let path = path.trim_end_matches([',', '.', ';', ':', ')', '?', '!']);
        if path.is_empty() || !seen.insert(path.to_owned()) {
            continue;
        }
        let full = root.join(path);
        // Only files inside the workspace: `@../../etc/passwd` attaches nothing.
        let inside =
            full.canonicalize().ok().zip(root.canonicalize().ok()).is_some_and(|(f, r)| f.starts_with(r));
        if !inside || !full.is_file() {
            continue;
        }
        let Ok(bytes) = std::fs::read(&full) else { continue };
        let shown = &bytes[..bytes.len().min(MAX_ATTACHED_BYTES)];
        let Ok(content) = std::str::from_utf8(shown) else { continue };
        parts.push(synthetic(format!("Contents of {path} (attached with @{path}):\n```\n{content}\n```")));
    }
    parts
}

fn synthetic(text: String) -> PartKind {
    PartKind::Text(TextPart { text, synthetic: Some(true), ..TextPart::default() })
}

/// The model and agent a prompt names: the picked ones, `--model`.
fn choice(handles: &Handles, app: &App) -> (Option<session_core::ModelRef>, Option<String>) {
    let picked = handles.model_flag || app.status.model != handles.default_model;
    (picked.then(|| parse_model_ref(&app.status.model)).flatten(), Some(app.status.agent.clone()))
}

/// Starts `effect` in a task; its result comes back on `done`.
pub fn spawn(handles: &Handles, app: &mut App, effect: Effect, done: &mpsc::UnboundedSender<Done>) {
    let runtime = handles.runtime.clone();
    let id = app.transcript.session().clone();
    let done = done.clone();
    let (model, agent) = choice(handles, app);
    match effect {
        Effect::Prompt { text, context } => {
            let mut attachments: Vec<PartKind> = context.into_iter().map(synthetic).collect();
            attachments.extend(mentioned_files(&text, &handles.root));
            let input = PromptInput { text, agent, model, attachments, ..PromptInput::default() };
            tokio::spawn(async move {
                let _ = done.send(Done::Run(runtime.prompt(&id, input).await));
            });
        }
        Effect::Compact => {
            let compaction =
                PartKind::Compaction(CompactionPart { auto: false, overflow: None, tail_start_id: None });
            let input = PromptInput { agent, model, attachments: vec![compaction], ..PromptInput::default() };
            tokio::spawn(async move {
                let _ = done.send(Done::Run(runtime.prompt(&id, input).await));
            });
        }
        Effect::Command { name, arguments } => {
            let input = CommandInput { command: name, arguments, agent, model, variant: None };
            tokio::spawn(async move {
                let _ = done.send(Done::Run(runtime.command(&id, &input).await.map(|(_, answer)| answer)));
            });
        }
        Effect::Shell(command) => {
            app.transcript.note(NoteKind::Shell, format!("$ {command}"));
            let root = handles.root.clone();
            tokio::spawn(async move {
                let output = shell(&command, &root).await;
                let _ = done.send(Done::Shell { command, output });
            });
        }
        Effect::Interrupt => {
            if runtime.cancel(&id) {
                app.status.flash = Some("interrupting…".to_owned());
            }
        }
        Effect::NewSession => {
            tokio::spawn(async move {
                let created = runtime.create_session(None).await.map(|s| s.id).map_err(anyhow::Error::from);
                let _ = done.send(Done::Open(created));
            });
        }
        Effect::ListSessions => {
            tokio::spawn(async move {
                let _ = done.send(Done::Sessions(crate::setup::session_items(&runtime).await));
            });
        }
        Effect::OpenSession(value) => {
            let parsed = SessionId::parse(&value).map_err(|e| anyhow::anyhow!("{value}: {e}"));
            let _ = done.send(Done::Open(parsed));
        }
        Effect::Revert(message) => {
            tokio::spawn(async move {
                let result = runtime.revert(&id, &message, None).await;
                let _ = done.send(Done::Reverted { redo: false, result });
            });
        }
        Effect::Unrevert => {
            tokio::spawn(async move {
                let result = runtime.unrevert(&id).await;
                let _ = done.send(Done::Reverted { redo: true, result });
            });
        }
        Effect::Export => {
            let root = handles.root.clone();
            tokio::spawn(async move {
                let _ = done.send(Done::Exported(export(&runtime, &id, &root).await));
            });
        }
        Effect::ReplyQuestion { id, answers } => {
            if runtime.reply_question(&id, answers).is_err() {
                app.status.flash = Some("that question is no longer waiting".to_owned());
            }
        }
        Effect::RejectQuestion(id) => {
            if runtime.reject_question(&id).is_ok() {
                app.status.flash = Some("question dismissed".to_owned());
            }
        }
        // The loop handles these itself.
        Effect::Quit | Effect::Picker(_) => {}
    }
}

/// Writes the session as JSON into the workspace; returns the file.
async fn export(runtime: &Runtime, id: &SessionId, root: &Path) -> Result<PathBuf> {
    let document = runtime.export_session(id).await?;
    let path = root.join(format!("session-{}.json", id.as_str()));
    let text = serde_json::to_string_pretty(&document)?;
    tokio::fs::write(&path, text).await?;
    Ok(path)
}

/// Runs `command` with `sh -c` in the workspace: its output (at most
/// `MAX_ATTACHED_BYTES`) and how it ended.
pub async fn shell(command: &str, root: &Path) -> String {
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(SHELL_TIMEOUT, child).await {
        Err(_) => format!("(stopped after {}s)", SHELL_TIMEOUT.as_secs()),
        Ok(Err(error)) => format!("(could not run it: {error})"),
        Ok(Ok(output)) => {
            let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&output.stderr));
            if text.len() > MAX_ATTACHED_BYTES {
                let mut cut = MAX_ATTACHED_BYTES;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.push_str("\n(output cut)");
            }
            match output.status.code() {
                Some(0) => text,
                Some(code) => format!("{text}(exit status {code})"),
                None => format!("{text}(ended by a signal)"),
            }
        }
    }
}

/// What a finished piece of work does to the UI.
pub async fn finished(app: &mut App, done: Done, handles: &Handles) -> Result<()> {
    match done {
        Done::Run(result) => run_outcome(app, result),
        Done::Shell { command, output } => {
            let shown: String = output.lines().take(200).collect::<Vec<_>>().join("\n");
            app.transcript
                .note(NoteKind::Shell, if shown.is_empty() { "(no output)".to_owned() } else { shown });
            app.context
                .push(format!("The user ran `{command}` in the shell; it printed:\n```\n{output}\n```"));
            app.status.flash = Some("the output goes with your next prompt".to_owned());
        }
        Done::Sessions(Ok(items)) => app.open_picker(PickerKind::Sessions, items),
        Done::Sessions(Err(error)) => {
            app.transcript.note(NoteKind::Error, format!("listing sessions: {error:#}"))
        }
        Done::Open(Ok(id)) => match load(&handles.runtime, &id, handles.root.clone()).await {
            Ok((session, transcript)) => {
                app.show_session(&session, transcript);
                app.status.flash = Some(format!("session {}", id.as_str()));
            }
            Err(error) => app.transcript.note(NoteKind::Error, format!("opening {}: {error:#}", id.as_str())),
        },
        Done::Open(Err(error)) => app.transcript.note(NoteKind::Error, format!("{error:#}")),
        Done::Reverted { redo, result } => match result {
            Ok(session) => {
                app.transcript.set_revert(session.revert.clone());
                let text = match (redo, session.revert.is_some()) {
                    (true, _) => "redone: the reverted changes are back".to_owned(),
                    (false, _) => format!(
                        "undone: {} prompt(s) and their file changes; /redo brings them back, a new prompt makes it final",
                        crate::transcript::reverted_count(&app.transcript)
                    ),
                };
                app.transcript.note(NoteKind::Info, text);
            }
            Err(error) => app
                .transcript
                .note(NoteKind::Error, format!("{}: {error}", if redo { "redo" } else { "undo" })),
        },
        Done::Exported(Ok(path)) => {
            app.transcript.note(NoteKind::Info, format!("exported to {}", path.display()))
        }
        Done::Exported(Err(error)) => app.transcript.note(NoteKind::Error, format!("export: {error:#}")),
    }
    Ok(())
}

/// The session's history and record, for showing it.
pub(crate) async fn load(runtime: &Runtime, id: &SessionId, root: PathBuf) -> Result<(Session, Transcript)> {
    let session = runtime.session(id).await?;
    let history: Vec<MessageWithParts> = runtime.history(id).await?.messages;
    let mut transcript = Transcript::new(id.clone(), root);
    transcript.load(history, session.revert.clone());
    Ok((session, transcript))
}

/// A run's result as the transcript shows it: errors the run itself did not show.
pub(crate) fn run_outcome(app: &mut App, result: Result<AssistantMessage, RuntimeError>) {
    if let Err(error) = result {
        let text = match &error {
            RuntimeError::Busy(_) => {
                "the session is busy (a revert or another run); try again when it is idle".to_owned()
            }
            other => other.to_string(),
        };
        app.transcript.note(NoteKind::Error, text);
    }
}
