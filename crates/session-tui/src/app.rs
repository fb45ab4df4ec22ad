//! The UI's state and what keys, the mouse and the bus do to it. Pure: the effects it asks
//! for (send a prompt, interrupt, revert...) are carried out by the runner, so that frames and
//! key handling are tested without a runtime.

use std::collections::VecDeque;

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::Rect;
use ratatui_textarea::{TextArea, WrapMode};
use session_core::permission::{PermissionAsk, Reply};
use session_core::{Message, PartId, PartKind};
use session_runtime::BusEvent;
use session_runtime::permissions::PermissionAnswer;
use session_runtime::sessions::Session;
use session_runtime::sessions::SessionStatus;
use tokio::sync::oneshot;

use crate::commands::{Builtin, Slash, help, parse};
use crate::complete::{at_word, matches};
use crate::theme::Theme;
use crate::transcript::{NoteKind, Transcript};

/// Pastes longer than this many characters or lines are kept aside as a placeholder.
pub const LARGE_PASTE_CHARS: usize = 1000;
/// See [`LARGE_PASTE_CHARS`].
pub const LARGE_PASTE_LINES: usize = 10;
/// Rows the mouse wheel scrolls.
const WHEEL_ROWS: usize = 3;

/// Something for the runner to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send a prompt (it joins a run that is going).
    Prompt {
        /// The text, with pastes expanded.
        text: String,
        /// Shell outputs to send with it (`!command`).
        context: Vec<String>,
    },
    /// Run a configured command.
    Command {
        /// Its name.
        name: String,
        /// Its arguments.
        arguments: String,
    },
    /// Run a shell command (`!command`).
    Shell(String),
    /// Interrupt the run (Esc).
    Interrupt,
    /// Quit.
    Quit,
    /// Start a new session.
    NewSession,
    /// List the sessions for the picker.
    ListSessions,
    /// Switch to a session.
    OpenSession(String),
    /// Revert to before this user message.
    Revert(session_core::MessageId),
    /// Undo the pending revert.
    Unrevert,
    /// Compact the conversation.
    Compact,
    /// Export the session as JSON.
    Export,
    /// Open a picker (the runner lists its items).
    Picker(PickerKind),
    /// Answer a question of the `question` tool.
    ReplyQuestion {
        /// The question request.
        id: session_core::QuestionId,
        /// One answer per question.
        answers: Vec<Vec<String>>,
    },
    /// Dismiss a question request.
    RejectQuestion(session_core::QuestionId),
}

/// An ask on screen, waiting for its answer.
#[derive(Debug)]
pub struct PendingAsk {
    /// The ask.
    pub ask: PermissionAsk,
    /// Where the answer goes; gone once answered (or when the ask was dropped).
    pub answer: Option<oneshot::Sender<PermissionAnswer>>,
}

/// What a picker picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerKind {
    /// A session.
    Sessions,
    /// A model.
    Models,
    /// An agent.
    Agents,
}

/// One row of a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickerItem {
    /// What is shown.
    pub label: String,
    /// Shown dimmed after it (a time, a context size).
    pub detail: String,
    /// What picking it means (an id, a model reference).
    pub value: String,
}

/// A list to pick from, with a filter typed into it.
#[derive(Debug, Clone)]
pub struct Picker {
    /// What it picks.
    pub kind: PickerKind,
    /// Every item.
    pub items: Vec<PickerItem>,
    /// The typed filter.
    pub filter: String,
    /// The selected row among the filtered ones.
    pub selected: usize,
}

impl Picker {
    /// The items the filter keeps.
    pub fn visible(&self) -> Vec<&PickerItem> {
        let filter = self.filter.to_lowercase();
        self.items
            .iter()
            .filter(|i| {
                filter.is_empty()
                    || i.label.to_lowercase().contains(&filter)
                    || i.value.to_lowercase().contains(&filter)
            })
            .collect()
    }
}

/// The status line's facts.
#[derive(Debug, Clone, Default)]
pub struct Status {
    /// The model, as provider/model.
    pub model: String,
    /// Its context window, when known.
    pub context_limit: Option<u64>,
    /// The agent.
    pub agent: String,
    /// The session's title.
    pub title: String,
    /// Idle, busy or waiting to retry.
    pub state: Option<SessionStatus>,
    /// A short message (a hint, the last command's result), cleared by the next key.
    pub flash: Option<String>,
}

/// The whole UI state.
pub struct App {
    /// Colours.
    pub theme: Theme,
    /// The transcript.
    pub transcript: Transcript,
    /// The prompt editor.
    pub input: TextArea<'static>,
    /// The status line.
    pub status: Status,
    /// Asks waiting, oldest first (the first is shown).
    pub asks: VecDeque<PendingAsk>,
    /// True while the prompt holds feedback for rejecting the shown ask.
    pub feedback: bool,
    /// Question requests waiting, oldest first (the first is shown once no ask waits).
    pub questions: VecDeque<crate::question::QuestionDialog>,
    /// An open picker.
    pub picker: Option<Picker>,
    /// `@path` completions under the prompt, and the selected one.
    pub completion: Option<(Vec<String>, usize)>,
    /// Workspace files for completion (listed once, on the first `@`).
    pub files: Option<Vec<String>>,
    /// Rows scrolled up from the bottom; 0 follows new output.
    pub scroll: usize,
    /// Total rows at the last frame (to keep the view still while scrolled up).
    pub last_total: usize,
    /// Every tool call and reasoning expanded.
    pub details: bool,
    /// Ctrl-C was pressed once.
    pub quit_armed: bool,
    /// Prompts sent, oldest first, and where Up/Down are in them.
    pub history: Vec<String>,
    history_at: Option<usize>,
    /// Large pastes kept aside: the placeholder stands for the text.
    pub pastes: Vec<String>,
    /// Shell outputs that go with the next prompt.
    pub context: Vec<String>,
    /// Configured commands: name and description.
    pub commands: Vec<(String, String)>,
    /// What `/skills` shows: the skills and the files skipped.
    pub skills: String,
    /// The transcript's area and the part under each row at the last frame (for clicks).
    pub transcript_area: Rect,
    /// See [`App::transcript_area`].
    pub row_parts: Vec<Option<PartId>>,
}

/// An empty prompt editor.
pub fn prompt_editor() -> TextArea<'static> {
    let mut input = TextArea::default();
    input.set_placeholder_text("Ask anything · /help for commands · @ for files · ! for a shell command");
    input.set_cursor_line_style(ratatui::style::Style::default());
    input.set_wrap_mode(WrapMode::Word);
    input
}

fn is_ctrl(key: &KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char(c)
}

impl App {
    /// A UI for `transcript`.
    pub fn new(theme: Theme, transcript: Transcript, status: Status) -> Self {
        Self {
            theme,
            transcript,
            input: prompt_editor(),
            status,
            asks: VecDeque::new(),
            feedback: false,
            questions: VecDeque::new(),
            picker: None,
            completion: None,
            files: None,
            scroll: 0,
            last_total: 0,
            details: false,
            quit_armed: false,
            history: Vec::new(),
            history_at: None,
            pastes: Vec::new(),
            context: Vec::new(),
            commands: Vec::new(),
            skills: String::new(),
            transcript_area: Rect::default(),
            row_parts: Vec::new(),
        }
    }

    /// True while a run goes on in the session (busy or waiting to retry).
    pub fn busy(&self) -> bool {
        matches!(self.status.state, Some(SessionStatus::Busy | SessionStatus::Retry { .. }))
    }

    /// True while something on screen changes with time: frames are due without events.
    pub fn animating(&self) -> bool {
        self.busy() || self.transcript.animated()
    }

    /// Applies a bus event; true when the screen changed.
    pub fn bus(&mut self, event: &BusEvent) -> bool {
        let mine = self.transcript.session().clone();
        let changed = self.transcript.apply(event) | self.question_event(event);
        match event {
            BusEvent::SessionStatus { session_id, status } if session_id == &mine => {
                self.status.state = Some(status.clone());
                true
            }
            BusEvent::SessionUpdated { info } if info.id == mine => {
                self.status.title = info.title.clone();
                true
            }
            BusEvent::SessionCompacted { session_id } if session_id == &mine => {
                self.transcript.note(
                    NoteKind::Info,
                    "── the conversation was compacted; the model continues from the summary ──",
                );
                true
            }
            BusEvent::SessionError { session_id, error } if session_id == &mine => {
                if !matches!(error, session_core::MessageError::MessageAbortedError { .. }) {
                    self.transcript.note(NoteKind::Error, format!("{}: {}", error.name(), error.message()));
                }
                true
            }
            BusEvent::MessageUpdated { info } if info.session_id() == &mine => {
                if let Message::User(user) = info.as_ref() {
                    self.status.agent = user.agent.clone();
                }
                changed
            }
            _ => changed,
        }
    }

    /// Shows a new session (a switch or `/new`).
    pub fn show_session(&mut self, session: &Session, transcript: Transcript) {
        self.transcript = transcript;
        self.status.title = session.title.clone();
        self.status.state = None;
        self.scroll = 0;
        self.history_at = None;
    }

    /// Drops asks whose waiter is gone (their run ended or was interrupted).
    pub fn prune_asks(&mut self) {
        self.asks.retain(|a| a.answer.as_ref().is_some_and(|s| !s.is_closed()));
        if self.asks.is_empty() && self.feedback {
            self.feedback = false;
            self.input = prompt_editor();
        }
    }

    /// The prompt's text.
    pub fn prompt_text(&self) -> String {
        self.input.lines().join("\n")
    }

    fn set_prompt(&mut self, text: &str) {
        self.input = prompt_editor();
        self.input.insert_str(text);
    }

    /// Text pasted into the prompt: a large paste becomes a placeholder.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if text.chars().count() > LARGE_PASTE_CHARS || lines > LARGE_PASTE_LINES {
            self.pastes.push(text);
            let n = self.pastes.len();
            self.input.insert_str(format!("[paste #{n}: {lines} lines]"));
        } else {
            self.input.insert_str(&text);
        }
    }

    /// `text` with the paste placeholders replaced by what was pasted.
    fn expand_pastes(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (i, paste) in self.pastes.iter().enumerate() {
            let lines = paste.lines().count();
            out = out.replace(&format!("[paste #{}: {lines} lines]", i + 1), paste);
        }
        out
    }

    /// Answers the shown ask.
    fn answer(&mut self, reply: Reply, message: Option<String>) {
        if let Some(mut pending) = self.asks.pop_front()
            && let Some(answer) = pending.answer.take()
        {
            let _ = answer.send(PermissionAnswer { reply, message });
        }
        self.feedback = false;
    }

    /// Opens a picker.
    pub fn open_picker(&mut self, kind: PickerKind, items: Vec<PickerItem>) {
        self.picker = Some(Picker { kind, items, filter: String::new(), selected: 0 });
    }

    fn refresh_completion(&mut self, root: &std::path::Path) {
        let row = self.input.cursor().0;
        let col = self.input.cursor().1;
        let line = self.input.lines().get(row).cloned().unwrap_or_default();
        match at_word(&line, col) {
            Some((query, _)) => {
                let files = self.files.get_or_insert_with(|| crate::complete::workspace_files(root));
                let found = matches(files, &query, 8);
                self.completion = (!found.is_empty()).then_some((found, 0));
            }
            None => self.completion = None,
        }
    }

    fn accept_completion(&mut self) {
        let Some((items, selected)) = self.completion.take() else { return };
        let Some(choice) = items.get(selected) else { return };
        let (row, col) = (self.input.cursor().0, self.input.cursor().1);
        let line = self.input.lines().get(row).cloned().unwrap_or_default();
        if let Some((query, _)) = at_word(&line, col) {
            self.input.delete_str(0);
            for _ in 0..query.chars().count() {
                self.input.delete_char();
            }
            self.input.insert_str(format!("{choice} "));
        }
    }

    /// What Enter on the prompt does.
    fn submit(&mut self) -> Vec<Effect> {
        let text = self.prompt_text();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Vec::new();
        }
        if self.history.last().is_none_or(|last| last != &text) {
            self.history.push(text.clone());
        }
        self.history_at = None;
        self.input = prompt_editor();
        if let Some(command) = trimmed.strip_prefix('!') {
            return vec![Effect::Shell(command.trim().to_owned())];
        }
        if trimmed.starts_with('/') {
            return self.slash(trimmed);
        }
        let text = self.expand_pastes(&text);
        self.pastes.clear();
        self.scroll = 0;
        vec![Effect::Prompt { text, context: std::mem::take(&mut self.context) }]
    }

    fn slash(&mut self, line: &str) -> Vec<Effect> {
        match parse(line, &self.commands) {
            Slash::Builtin(Builtin::New) => vec![Effect::NewSession],
            Slash::Builtin(Builtin::Sessions) => vec![Effect::ListSessions],
            Slash::Builtin(Builtin::Undo) => {
                let users = crate::transcript::user_messages(&self.transcript);
                let before = self.transcript.revert().map(|r| r.message_id.clone());
                let target = users.iter().rev().find(|(id, _)| before.as_ref().is_none_or(|b| id < b));
                match target {
                    Some((id, text)) => {
                        // The undone prompt comes back into the editor, to edit and resend.
                        let text = text.clone();
                        let id = id.clone();
                        self.set_prompt(&text);
                        vec![Effect::Revert(id)]
                    }
                    None => {
                        self.status.flash = Some("nothing to undo".to_owned());
                        Vec::new()
                    }
                }
            }
            Slash::Builtin(Builtin::Redo) => match self.transcript.revert() {
                Some(_) => vec![Effect::Unrevert],
                None => {
                    self.status.flash = Some("nothing to redo".to_owned());
                    Vec::new()
                }
            },
            Slash::Builtin(Builtin::Compact) => vec![Effect::Compact],
            Slash::Builtin(Builtin::Model) => vec![Effect::Picker(PickerKind::Models)],
            Slash::Builtin(Builtin::Agent) => vec![Effect::Picker(PickerKind::Agents)],
            Slash::Builtin(Builtin::Export) => vec![Effect::Export],
            Slash::Builtin(Builtin::Help) => {
                self.transcript.note(NoteKind::Info, help(&self.commands));
                self.scroll = 0;
                Vec::new()
            }
            Slash::Builtin(Builtin::Skills) => {
                self.transcript.note(NoteKind::Info, self.skills.trim_end().to_owned());
                self.scroll = 0;
                Vec::new()
            }
            Slash::Builtin(Builtin::Exit) => vec![Effect::Quit],
            Slash::Configured { name, arguments } => vec![Effect::Command { name, arguments }],
            Slash::Unknown(name) => {
                self.transcript.note(NoteKind::Error, format!("no command /{name}; /help lists them"));
                Vec::new()
            }
        }
    }

    fn picker_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        let Some(picker) = &mut self.picker else { return Vec::new() };
        let count = picker.visible().len();
        match key.code {
            KeyCode::Esc => self.picker = None,
            KeyCode::Up => picker.selected = picker.selected.saturating_sub(1),
            KeyCode::Down => picker.selected = (picker.selected + 1).min(count.saturating_sub(1)),
            KeyCode::Backspace => {
                picker.filter.pop();
                picker.selected = 0;
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                picker.filter.push(c);
                picker.selected = 0;
            }
            KeyCode::Enter => {
                let kind = picker.kind;
                let chosen = picker.visible().get(picker.selected).map(|i| i.value.clone());
                self.picker = None;
                if let Some(value) = chosen {
                    match kind {
                        PickerKind::Sessions => return vec![Effect::OpenSession(value)],
                        PickerKind::Models => {
                            self.status.flash = Some(format!("model: {value}"));
                            self.status.model = value;
                        }
                        PickerKind::Agents => {
                            self.status.flash = Some(format!("agent: {value}"));
                            self.status.agent = value;
                        }
                    }
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn ask_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        if self.feedback {
            match key.code {
                KeyCode::Enter if !key.modifiers.contains(KeyModifiers::ALT) => {
                    let text = self.prompt_text().trim().to_owned();
                    self.input = prompt_editor();
                    self.answer(Reply::Reject, (!text.is_empty()).then_some(text));
                }
                KeyCode::Esc => {
                    self.feedback = false;
                    self.input = prompt_editor();
                }
                _ => {
                    self.input.input(*key);
                }
            }
            return Vec::new();
        }
        match key.code {
            KeyCode::Char('o' | 'y') | KeyCode::Enter => self.answer(Reply::Once, None),
            KeyCode::Char('a') => self.answer(Reply::Always, None),
            KeyCode::Char('r' | 'n') => self.answer(Reply::Reject, None),
            KeyCode::Char('f') => {
                self.feedback = true;
                self.input = prompt_editor();
                self.input.set_placeholder_text("Why not? Enter rejects with this feedback, Esc goes back");
            }
            KeyCode::Esc => return vec![Effect::Interrupt],
            _ => {}
        }
        Vec::new()
    }

    /// Handles a key; `root` is the workspace (for completion).
    pub fn key(&mut self, key: KeyEvent, root: &std::path::Path) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if is_ctrl(&key, 'c') {
            if self.quit_armed {
                return vec![Effect::Quit];
            }
            // With text in the prompt, the first Ctrl-C clears it.
            if !self.prompt_text().is_empty()
                && self.asks.is_empty()
                && self.questions.is_empty()
                && self.picker.is_none()
            {
                self.input = prompt_editor();
                self.completion = None;
                return Vec::new();
            }
            self.quit_armed = true;
            self.status.flash = Some("press Ctrl-C again to quit".to_owned());
            return Vec::new();
        }
        self.quit_armed = false;
        self.status.flash = None;
        if self.picker.is_some() {
            return self.picker_key(&key);
        }
        if !self.asks.is_empty() {
            return self.ask_key(&key);
        }
        if !self.questions.is_empty() {
            return self.question_key(&key);
        }
        if let Some((items, selected)) = &mut self.completion {
            match key.code {
                KeyCode::Up => {
                    *selected = selected.saturating_sub(1);
                    return Vec::new();
                }
                KeyCode::Down => {
                    *selected = (*selected + 1).min(items.len().saturating_sub(1));
                    return Vec::new();
                }
                KeyCode::Tab | KeyCode::Enter => {
                    self.accept_completion();
                    return Vec::new();
                }
                KeyCode::Esc => {
                    self.completion = None;
                    return Vec::new();
                }
                _ => {}
            }
        }
        match key.code {
            KeyCode::Esc if self.busy() => return vec![Effect::Interrupt],
            KeyCode::Esc => {}
            KeyCode::Enter if key.modifiers.contains(KeyModifiers::ALT) => self.input.insert_newline(),
            KeyCode::Char('j') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.input.insert_newline()
            }
            KeyCode::Enter => return self.submit(),
            KeyCode::PageUp => self.scroll += usize::from(self.transcript_area.height.max(2) / 2),
            KeyCode::PageDown => {
                self.scroll = self.scroll.saturating_sub(usize::from(self.transcript_area.height.max(2) / 2))
            }
            KeyCode::End if key.modifiers.contains(KeyModifiers::CONTROL) => self.scroll = 0,
            KeyCode::Home if key.modifiers.contains(KeyModifiers::CONTROL) => self.scroll = usize::MAX / 2,
            KeyCode::Char('o') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.details = !self.details
            }
            KeyCode::Char('t') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                if let Some(part) = self.transcript.last_expandable() {
                    self.transcript.toggle(&part);
                }
            }
            KeyCode::Up if self.input.cursor().0 == 0 && !self.history.is_empty() => {
                let at = self.history_at.map_or(self.history.len() - 1, |i| i.saturating_sub(1));
                self.history_at = Some(at);
                let text = self.history[at].clone();
                self.set_prompt(&text);
            }
            KeyCode::Down
                if self.history_at.is_some() && self.input.cursor().0 + 1 >= self.input.lines().len() =>
            {
                match self.history_at {
                    Some(i) if i + 1 < self.history.len() => {
                        self.history_at = Some(i + 1);
                        let text = self.history[i + 1].clone();
                        self.set_prompt(&text);
                    }
                    _ => {
                        self.history_at = None;
                        self.input = prompt_editor();
                    }
                }
            }
            _ => {
                self.input.input(key);
                self.refresh_completion(root);
            }
        }
        Vec::new()
    }

    /// Handles the mouse: the wheel scrolls, a click on a tool line expands it.
    pub fn mouse(&mut self, mouse: MouseEvent) {
        match mouse.kind {
            MouseEventKind::ScrollUp => self.scroll += WHEEL_ROWS,
            MouseEventKind::ScrollDown => self.scroll = self.scroll.saturating_sub(WHEEL_ROWS),
            MouseEventKind::Down(MouseButton::Left) => {
                let area = self.transcript_area;
                if mouse.row >= area.y && mouse.row < area.y + area.height {
                    let row = usize::from(mouse.row - area.y);
                    if let Some(Some(part)) = self.row_parts.get(row).cloned() {
                        self.transcript.toggle(&part);
                    }
                }
            }
            _ => {}
        }
    }

    /// Context tokens of the last finished step (what the next request carries).
    pub fn context_tokens(&self) -> u64 {
        self.transcript
            .messages()
            .flat_map(|(_, parts)| parts.iter())
            .filter_map(|p| match &p.kind {
                PartKind::StepFinish(step) => {
                    let t = &step.tokens;
                    Some(t.input + t.cache.read + t.cache.write + t.output + t.reasoning)
                }
                _ => None,
            })
            .next_back()
            .unwrap_or(0)
    }

    /// The session's cost so far.
    pub fn cost(&self) -> rust_decimal::Decimal {
        self.transcript
            .messages()
            .filter_map(|(m, _)| match m {
                Message::Assistant(a) => Some(a.cost),
                Message::User(_) => None,
            })
            .sum()
    }
}
