//! `session run --format json`: the lines OpenCode 1.18's `opencode run --format json` prints,
//! so that wrappers written for `opencode run` read ours unchanged.
//!
//! One JSON object per line, `{type, timestamp, sessionID, part}`, or
//! `{type: "error", timestamp, sessionID, error}`. Like OpenCode's client, only the run's own
//! session is shown (a subagent's parts stay in its child session), and a part is shown once it
//! is final: a step's start and finish as they are stored, text and reasoning when they end
//! (reasoning only with `--thinking`), a tool call when it completes or fails.

use std::collections::HashSet;
use std::io::Write;

use session_core::{MessageError, Part, PartId, PartKind, SessionId, ToolStatus};
use session_runtime::BusEvent;
use session_runtime::clock::{Clock as _, SystemClock};

use crate::render::{OutputFormat, Renderer};

/// What `session run` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunFormat {
    /// Readable text: the streamed answer, one line per tool call, the totals.
    Text,
    /// OpenCode's `run --format json` lines (this module).
    Json,
    /// Every bus event as a JSON line, `{"type", "properties"}`.
    Events,
}

/// Where a run's events go: the renderer (text, bus events) or OpenCode's lines.
pub(crate) enum RunOutput<W: Write> {
    /// Text or bus events.
    Render(Renderer<W>),
    /// OpenCode's lines.
    Json {
        /// Stdout.
        out: W,
        /// What has been shown.
        lines: JsonLines,
    },
}

impl<W: Write> RunOutput<W> {
    /// The output of a run of `session_id` in `format`.
    pub(crate) fn new(out: W, format: RunFormat, session_id: &SessionId, thinking: bool) -> Self {
        match format {
            RunFormat::Text => Self::Render(Renderer::new(out, OutputFormat::Text)),
            RunFormat::Events => Self::Render(Renderer::new(out, OutputFormat::Json)),
            RunFormat::Json => Self::Json { out, lines: JsonLines::new(session_id.clone(), thinking) },
        }
    }

    /// Shows one event.
    pub(crate) fn event(&mut self, event: &BusEvent) -> std::io::Result<()> {
        match self {
            Self::Render(renderer) => renderer.event(event),
            Self::Json { out, lines } => lines.write(out, event, SystemClock.now_ms()),
        }
    }

    /// True when the output stands at the start of a line (lines are always whole in JSON).
    pub(crate) fn at_line_start(&self) -> bool {
        match self {
            Self::Render(renderer) => renderer.at_line_start(),
            Self::Json { .. } => true,
        }
    }

    /// Ends a half-written line before a question on the terminal.
    pub(crate) fn end_line(&mut self) -> std::io::Result<()> {
        match self {
            Self::Render(renderer) => renderer.end_line(),
            Self::Json { out, .. } => out.flush(),
        }
    }

    /// Ends the output with the totals line (text only: OpenCode's lines have none, the
    /// `step_finish` lines carry the figures).
    pub(crate) fn totals(&mut self, line: &str) -> std::io::Result<()> {
        match self {
            Self::Render(renderer) => renderer.totals(line),
            Self::Json { out, .. } => out.flush(),
        }
    }

    /// Shows an error that is no bus event (the runtime refused the prompt) as OpenCode's
    /// client does: an `error` line in JSON; the other formats leave it to stderr.
    pub(crate) fn refused(&mut self, message: &str) -> std::io::Result<()> {
        match self {
            Self::Render(_) => Ok(()),
            Self::Json { out, lines } => {
                let error = MessageError::UnknownError { message: message.to_owned() };
                write_line(out, &lines.error_line(&error, SystemClock.now_ms()))
            }
        }
    }
}

/// The `type` of a line.
pub use session_runtime::wire::RunLineKind as LineKind;

/// One line of output, borrowed from the event it shows.
pub use session_runtime::wire::RunLine as Line;

/// Picks, from the bus, the events OpenCode's `run --format json` shows, and writes them.
#[derive(Debug)]
pub struct JsonLines {
    session_id: SessionId,
    thinking: bool,
    /// Parts already shown: the runtime may publish a final part again (a step's end touches
    /// it), and a wrapper expects one line per part.
    shown: HashSet<PartId>,
}

impl JsonLines {
    /// Lines for `session_id`; reasoning is shown when `thinking` is set.
    pub fn new(session_id: SessionId, thinking: bool) -> Self {
        Self { session_id, thinking, shown: HashSet::new() }
    }

    /// The run's session.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// The line `event` is shown as, stamped `now_ms`, or `None` when it is not shown.
    pub fn line<'a>(&'a mut self, event: &'a BusEvent, now_ms: u64) -> Option<Line<'a>> {
        match event {
            BusEvent::PartUpdated { part } if part.session_id == self.session_id => {
                let kind = self.kind_of(part)?;
                if !self.shown.insert(part.id.clone()) {
                    return None;
                }
                Some(Line {
                    kind,
                    timestamp: now_ms,
                    session_id: &self.session_id,
                    part: Some(part),
                    error: None,
                })
            }
            BusEvent::SessionError { session_id, error } if *session_id == self.session_id => {
                Some(self.error_line(error, now_ms))
            }
            _ => None,
        }
    }

    /// An `error` line for the run's session, for an error that is not a bus event (a prompt
    /// the runtime refused before it ran).
    pub fn error_line<'a>(&'a self, error: &'a MessageError, now_ms: u64) -> Line<'a> {
        Line {
            kind: LineKind::Error,
            timestamp: now_ms,
            session_id: &self.session_id,
            part: None,
            error: Some(error),
        }
    }

    /// Writes the line of `event`, if it has one, and flushes it.
    pub fn write(&mut self, out: &mut impl Write, event: &BusEvent, now_ms: u64) -> std::io::Result<()> {
        match self.line(event, now_ms) {
            Some(line) => write_line(out, &line),
            None => Ok(()),
        }
    }

    /// The kind of line a part is shown as in its current state, if it is final.
    fn kind_of(&self, part: &Part) -> Option<LineKind> {
        match &part.kind {
            PartKind::StepStart(_) => Some(LineKind::StepStart),
            PartKind::StepFinish(_) => Some(LineKind::StepFinish),
            PartKind::Text(text) if text.time.is_some_and(|t| t.end.is_some()) => Some(LineKind::Text),
            PartKind::Reasoning(reasoning) if self.thinking && reasoning.time.end.is_some() => {
                Some(LineKind::Reasoning)
            }
            PartKind::Tool(tool)
                if matches!(tool.state.status(), ToolStatus::Completed | ToolStatus::Error) =>
            {
                Some(LineKind::ToolUse)
            }
            _ => None,
        }
    }
}

/// Writes one line as compact JSON and a newline, flushed so a reader sees it at once.
pub fn write_line(out: &mut impl Write, line: &Line<'_>) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, line).map_err(std::io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::{Value, json};
    use session_runtime::sessions::SessionStatus;

    use super::*;

    const SESSION: &str = "ses_0123456789abABCDEFGHIJKLMN";
    const CHILD: &str = "ses_0123456789abZZZZZZZZZZZZZZ";

    fn part(session: &str, id: &str, kind: Value) -> BusEvent {
        let mut value =
            json!({"id": id, "sessionID": session, "messageID": "msg_0123456789abABCDEFGHIJKLMN"});
        value.as_object_mut().unwrap().extend(kind.as_object().unwrap().clone());
        BusEvent::PartUpdated { part: Box::new(serde_json::from_value(value).unwrap()) }
    }

    fn lines(thinking: bool, events: &[BusEvent]) -> Vec<Value> {
        let mut writer = JsonLines::new(serde_json::from_value(json!(SESSION)).unwrap(), thinking);
        let mut out = Vec::new();
        for (at, event) in events.iter().enumerate() {
            writer.write(&mut out, event, 1_000 + at as u64).unwrap();
        }
        String::from_utf8(out).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    fn tool(status: Value) -> Value {
        json!({"type": "tool", "callID": "call_1", "tool": "bash", "state": status})
    }

    fn step_events() -> Vec<BusEvent> {
        vec![
            part(SESSION, "prt_0123456789abAAAAAAAAAAAAA1", json!({"type": "step-start"})),
            part(
                SESSION,
                "prt_0123456789abAAAAAAAAAAAAA2",
                json!({"type": "reasoning", "text": "Hm", "time": {"start": 5}}),
            ),
            part(
                SESSION,
                "prt_0123456789abAAAAAAAAAAAAA2",
                json!({"type": "reasoning", "text": "Hmm.", "time": {"start": 5, "end": 6}}),
            ),
            part(
                SESSION,
                "prt_0123456789abAAAAAAAAAAAAA3",
                json!({"type": "text", "text": "Che", "time": {"start": 7}}),
            ),
            part(
                SESSION,
                "prt_0123456789abAAAAAAAAAAAAA3",
                json!({"type": "text", "text": "Checking.", "time": {"start": 7, "end": 8}}),
            ),
            part(
                SESSION,
                "prt_0123456789abAAAAAAAAAAAAA4",
                tool(json!({"status": "running", "input": {"command": "ls"}, "time": {"start": 9}})),
            ),
            part(
                SESSION,
                "prt_0123456789abAAAAAAAAAAAAA4",
                tool(
                    json!({"status": "completed", "input": {"command": "ls"}, "output": "a\n", "title": "ls",
                    "metadata": {}, "time": {"start": 9, "end": 10}}),
                ),
            ),
            // The same final part published again is not shown twice.
            part(
                SESSION,
                "prt_0123456789abAAAAAAAAAAAAA4",
                tool(
                    json!({"status": "completed", "input": {"command": "ls"}, "output": "a\n", "title": "ls",
                    "metadata": {}, "time": {"start": 9, "end": 10}}),
                ),
            ),
            // A subagent's parts belong to its child session: not shown.
            part(
                CHILD,
                "prt_0123456789abAAAAAAAAAAAAA5",
                json!({"type": "text", "text": "child", "time": {"start": 1, "end": 2}}),
            ),
            part(
                SESSION,
                "prt_0123456789abAAAAAAAAAAAAA6",
                json!({"type": "step-finish", "reason": "tool-calls", "cost": 0.5,
                    "tokens": {"input": 10, "output": 2, "reasoning": 0, "cache": {"read": 0, "write": 0}}}),
            ),
        ]
    }

    #[test]
    fn a_step_shows_its_final_parts_once_in_order() {
        let shown = lines(false, &step_events());
        let types: Vec<&str> = shown.iter().map(|line| line["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["step_start", "text", "tool_use", "step_finish"]);
        assert!(
            shown.iter().all(|line| line["sessionID"] == SESSION && line["part"]["sessionID"] == SESSION)
        );
        assert_eq!(shown[1]["part"]["text"], "Checking.");
        assert_eq!(shown[2]["part"]["state"]["status"], "completed");
        assert_eq!(shown[3]["part"]["tokens"]["input"], 10);
        assert_eq!(shown[0]["timestamp"], 1_000);
    }

    #[test]
    fn reasoning_is_shown_with_thinking_only() {
        let shown = lines(true, &step_events());
        let types: Vec<&str> = shown.iter().map(|line| line["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["step_start", "reasoning", "text", "tool_use", "step_finish"]);
        assert_eq!(shown[1]["part"]["text"], "Hmm.");
    }

    #[test]
    fn a_failed_tool_call_is_a_tool_use_line() {
        let failed = part(
            SESSION,
            "prt_0123456789abAAAAAAAAAAAAA7",
            tool(
                json!({"status": "error", "input": {"command": "ls"}, "error": "denied", "time": {"start": 1, "end": 2}}),
            ),
        );
        let shown = lines(false, &[failed]);
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0]["type"], "tool_use");
        assert_eq!(shown[0]["part"]["state"]["error"], "denied");
    }

    #[test]
    fn the_sessions_errors_are_error_lines_with_name_and_data() {
        let error = MessageError::UnknownError { message: "boom".to_owned() };
        let events = [
            BusEvent::SessionError {
                session_id: serde_json::from_value(json!(SESSION)).unwrap(),
                error: error.clone(),
            },
            BusEvent::SessionError { session_id: serde_json::from_value(json!(CHILD)).unwrap(), error },
        ];
        let shown = lines(false, &events);
        assert_eq!(
            shown,
            [json!({"type": "error", "timestamp": 1_000, "sessionID": SESSION,
                "error": {"name": "UnknownError", "data": {"message": "boom"}}})]
        );
    }

    #[test]
    fn an_error_line_outside_the_bus_names_the_session() {
        let writer = JsonLines::new(serde_json::from_value(json!(SESSION)).unwrap(), false);
        let error = MessageError::UnknownError { message: "unknown agent".to_owned() };
        let mut out = Vec::new();
        write_line(&mut out, &writer.error_line(&error, 7)).unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap(), @r#"{"type":"error","timestamp":7,"sessionID":"ses_0123456789abABCDEFGHIJKLMN","error":{"name":"UnknownError","data":{"message":"unknown agent"}}}
"#);
    }

    /// Each bus event as `--format events` prints it, byte for byte.
    #[test]
    fn every_bus_event_has_its_pinned_events_line() {
        let mut out = Vec::new();
        let mut renderer = Renderer::new(&mut out, OutputFormat::Json);
        for event in every_bus_event() {
            renderer.event(&event).unwrap();
        }
        drop(renderer);
        insta::assert_snapshot!("bus_events_as_events_lines", String::from_utf8(out).unwrap());
    }

    fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Every kind of bus event, each with its optional fields filled.
    fn every_bus_event() -> Vec<BusEvent> {
        let session: session_store::Session = from(json!({
            "id": "ses_01ABCdef", "slug": "calm-otter", "projectID": "p", "directory": "/w", "path": "",
            "parentID": "ses_01ABCdee", "cost": 0.0105,
            "tokens": {"input": 7, "output": 1, "reasoning": 0, "cache": {"read": 2, "write": 3}},
            "title": "T", "agent": "build", "model": {"id": "m", "providerID": "p", "variant": "default"},
            "version": "0.1.0", "time": {"created": 1, "updated": 2},
            "permission": [{"permission": "read", "pattern": "*.env", "action": "deny"}],
            "someExtra": {"kept": true}}));
        let user: session_core::Message = from(json!({
            "role": "user", "id": "msg_1", "sessionID": "ses_01ABCdef", "time": {"created": 3},
            "agent": "build", "model": {"providerID": "p", "modelID": "m"}}));
        let part: session_core::Part = from(json!({
            "id": "prt_1", "sessionID": "ses_01ABCdef", "messageID": "msg_1", "type": "text", "text": "Hel",
            "time": {"start": 4}}));
        let ask: session_core::permission::PermissionAsk = from(json!({
            "id": "per_1", "sessionID": "ses_01ABCdef", "permission": "bash", "patterns": ["ls"],
            "always": ["ls *"], "metadata": {"command": "ls"}, "tool": {"messageID": "msg_1", "callID": "call_1"}}));
        let id = || from::<session_core::SessionId>(json!("ses_01ABCdef"));
        vec![
            BusEvent::SessionCreated { info: Box::new(session.clone()) },
            BusEvent::SessionUpdated { info: Box::new(session) },
            BusEvent::SessionDiff {
                session_id: id(),
                diff: from(
                    json!([{"file": "src/a.rs", "additions": 2, "deletions": 1, "status": "modified"}]),
                ),
            },
            BusEvent::SessionStatus { session_id: id(), status: SessionStatus::Busy },
            BusEvent::SessionStatus {
                session_id: id(),
                status: SessionStatus::Retry { attempt: 2, message: "overloaded".into(), next: 9 },
            },
            BusEvent::SessionIdle { session_id: id() },
            BusEvent::SessionError {
                session_id: id(),
                error: session_core::MessageError::UnknownError { message: "boom".into() },
            },
            BusEvent::SessionCompacted { session_id: id() },
            BusEvent::MessageUpdated { info: Box::new(user) },
            BusEvent::MessageRemoved { session_id: id(), message_id: from(json!("msg_1")) },
            BusEvent::PartRemoved {
                session_id: id(),
                message_id: from(json!("msg_1")),
                part_id: from(json!("prt_1")),
            },
            BusEvent::PartUpdated { part: Box::new(part) },
            BusEvent::PartDelta {
                session_id: id(),
                message_id: from(json!("msg_1")),
                part_id: from(json!("prt_1")),
                field: "text".into(),
                delta: "lo".into(),
            },
            BusEvent::TodoUpdated {
                session_id: id(),
                todos: from(json!([{"content": "c", "status": "pending", "priority": "high"}])),
            },
            BusEvent::PermissionAsked(Box::new(ask)),
            BusEvent::PermissionReplied {
                session_id: id(),
                permission_id: from(json!("per_1")),
                response: session_core::permission::Reply::Always,
            },
            BusEvent::QuestionAsked(Box::new(from(json!({
                "id": "que_1", "sessionID": "ses_01ABCdef",
                "questions": [{"question": "Which?", "header": "Pick", "multiple": true,
                    "options": [{"label": "A", "description": "first"}]}],
                "tool": {"messageID": "msg_1", "callID": "call_1"}})))),
            BusEvent::QuestionReplied {
                session_id: id(),
                request_id: from(json!("que_1")),
                answers: vec![vec!["A".into(), "my own".into()]],
            },
            BusEvent::QuestionRejected { session_id: id(), request_id: from(json!("que_1")) },
        ]
    }
}
