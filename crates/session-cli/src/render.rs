//! Turns bus events into what a person reads in a terminal, or into JSON lines.

use std::collections::HashMap;
use std::io::Write;

use session_core::{Message, PartKind, ToolState};
use session_runtime::BusEvent;
use session_runtime::clock::{Clock as _, SystemClock};
use session_runtime::sessions::SessionStatus;
use session_runtime::wire::Event;

use crate::terminal::clean;

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Readable text: streamed answer, one line per tool call, retry notices, totals.
    Text,
    /// One JSON line per bus event, `{"type", "properties"}`.
    Json,
}

/// Writes bus events to `out` as they arrive.
pub struct Renderer<W: Write> {
    out: W,
    format: OutputFormat,
    /// Part ids whose text is being streamed, so the final text is not printed twice.
    streamed: HashMap<String, usize>,
    /// The last status shown per tool part (call ids repeat across sessions: a subagent's child
    /// session may reuse its parent's), so a line is printed once per state.
    tool_states: HashMap<String, &'static str>,
    /// Parts known to be reasoning: their deltas are shown as thinking, apart from the answer.
    reasoning: std::collections::HashSet<String>,
    at_line_start: bool,
}

impl<W: Write> Renderer<W> {
    /// A renderer writing to `out`.
    pub fn new(out: W, format: OutputFormat) -> Self {
        Self {
            out,
            format,
            streamed: HashMap::new(),
            tool_states: HashMap::new(),
            reasoning: std::collections::HashSet::new(),
            at_line_start: true,
        }
    }

    /// Shows one event.
    pub fn event(&mut self, event: &BusEvent) -> std::io::Result<()> {
        if self.format == OutputFormat::Json {
            let line = serde_json::to_string(&Event::bus(event)).map_err(std::io::Error::other)?;
            writeln!(self.out, "{line}")?;
            return self.out.flush();
        }
        match event {
            BusEvent::PartDelta { part_id, field, delta, .. } if field == "text" => {
                let first = !self.streamed.contains_key(part_id.as_str());
                *self.streamed.entry(part_id.to_string()).or_default() += delta.len();
                if first {
                    self.line_break()?;
                    if self.reasoning.contains(part_id.as_str()) {
                        write!(self.out, "  (thinking) ")?;
                    }
                }
                // Per delta: a sequence split across deltas loses its ESC, which is what acts.
                write!(self.out, "{}", clean(delta))?;
                self.at_line_start = delta.ends_with('\n');
            }
            BusEvent::PartUpdated { part } => match &part.kind {
                PartKind::Text(text) if text.time.and_then(|t| t.end).is_some() => {
                    // Text that arrived without deltas (or more than the deltas) is shown whole.
                    if !self.streamed.contains_key(part.id.as_str()) && !text.text.is_empty() {
                        self.line_break()?;
                        write!(self.out, "{}", clean(&text.text))?;
                        self.at_line_start = text.text.ends_with('\n');
                    }
                    self.line_break()?;
                }
                PartKind::Reasoning(reasoning) => {
                    if reasoning.time.end.is_some() {
                        self.line_break()?;
                    } else {
                        self.reasoning.insert(part.id.to_string());
                    }
                }
                PartKind::Tool(tool) => {
                    let status = tool.state.status().as_str();
                    if self.tool_states.get(part.id.as_str()) == Some(&status) {
                        return Ok(());
                    }
                    self.tool_states.insert(part.id.to_string(), status);
                    // A tool whose input names no path or command shows its name alone.
                    let input = match summarize_input(tool.state.input()) {
                        text if text.is_empty() => text,
                        text => format!(" {text}"),
                    };
                    let line = match &tool.state {
                        ToolState::Pending { .. } => return Ok(()),
                        ToolState::Running { .. } => format!("  -> {}{input}", tool.tool),
                        ToolState::Completed { title, .. } => format!("  ok {} {title}", tool.tool),
                        ToolState::Error { error, .. } => format!("  !! {}{input}: {error}", tool.tool),
                    };
                    self.line_break()?;
                    writeln!(self.out, "{}", clean(&line))?;
                    self.at_line_start = true;
                }
                PartKind::Patch(patch) => {
                    self.line_break()?;
                    writeln!(self.out, "  changed: {}", clean(&patch.files.join(", ")))?;
                    self.at_line_start = true;
                }
                _ => {}
            },
            BusEvent::SessionStatus { status: SessionStatus::Retry { attempt, message, next }, .. } => {
                self.line_break()?;
                let wait = next.saturating_sub(SystemClock.now_ms()).div_ceil(1000);
                writeln!(self.out, "  retrying in {wait} s (attempt {attempt}): {}", clean(message))?;
                self.at_line_start = true;
            }
            BusEvent::SessionError { error, .. } => {
                self.line_break()?;
                writeln!(self.out, "  error: {}", clean(error.message()))?;
                self.at_line_start = true;
            }
            BusEvent::MessageUpdated { info } => {
                if let Message::Assistant(assistant) = info.as_ref()
                    && assistant.is_summary()
                    && assistant.time.completed.is_some()
                {
                    self.line_break()?;
                    writeln!(self.out, "  (history compacted)")?;
                    self.at_line_start = true;
                }
            }
            _ => {}
        }
        self.out.flush()
    }

    /// True when the output stands at the start of a line (nothing half-written on it).
    pub fn at_line_start(&self) -> bool {
        self.at_line_start
    }

    /// Ends a half-written line, so what comes next (a question on the terminal) starts on its
    /// own line.
    pub fn end_line(&mut self) -> std::io::Result<()> {
        self.line_break()?;
        self.out.flush()
    }

    fn line_break(&mut self) -> std::io::Result<()> {
        if !self.at_line_start {
            writeln!(self.out)?;
            self.at_line_start = true;
        }
        Ok(())
    }

    /// Ends the output with a totals line (text format only).
    pub fn totals(&mut self, line: &str) -> std::io::Result<()> {
        if self.format == OutputFormat::Text {
            self.line_break()?;
            writeln!(self.out, "{line}")?;
        }
        self.out.flush()
    }
}

/// A short, one-line view of a tool input: its path, pattern or command when it has one.
fn summarize_input(input: &session_core::JsonObject) -> String {
    for key in ["filePath", "path", "pattern", "command"] {
        if let Some(serde_json::Value::String(value)) = input.get(key) {
            let first_line = value.lines().next().unwrap_or_default();
            return if first_line.chars().count() > 80 {
                format!("{}...", first_line.chars().take(77).collect::<String>())
            } else {
                first_line.to_owned()
            };
        }
    }
    String::new()
}
