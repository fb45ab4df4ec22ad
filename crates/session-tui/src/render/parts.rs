//! One message's parts as styled lines (not yet wrapped): text as markdown, reasoning collapsed
//! to one line, each tool call one line with its state (expanding to input and output), edits
//! and writes as coloured diffs, patch summaries, retries and errors.

use std::path::Path;

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use serde_json::Value;
use session_core::{Message, MessageError, Part, PartKind, ToolPart, ToolState};

use super::markdown::markdown;
use super::wrap::sanitize;
use crate::theme::Theme;

/// How many lines of a tool's output or diff an expanded call shows.
pub const MAX_EXPANDED_LINES: usize = 200;
/// How many lines of an edit's diff show while the call is collapsed.
pub const MAX_COLLAPSED_DIFF: usize = 12;

/// What rendering a message needs besides the message.
#[derive(Debug, Clone, Copy)]
pub struct RenderContext<'a> {
    /// Colours.
    pub theme: &'a Theme,
    /// The workspace, for paths shown relative to it.
    pub root: &'a Path,
    /// Now (epoch ms), for a running tool's elapsed time.
    pub now_ms: u64,
    /// Every tool and reasoning part shown expanded (Ctrl-O).
    pub details: bool,
}

/// A rendered line and the part a click on it toggles.
pub type Row = (Line<'static>, Option<session_core::PartId>);

/// `path` relative to the workspace when it is inside it.
fn relative<'p>(path: &'p str, root: &Path) -> &'p str {
    let root = root.to_string_lossy();
    path.strip_prefix(root.as_ref())
        .map(|p| p.trim_start_matches('/'))
        .filter(|p| !p.is_empty())
        .unwrap_or(path)
}

/// The one-line summary of a tool call's input: its command, path, pattern or description.
pub fn tool_summary(tool: &str, input: &serde_json::Map<String, Value>, root: &Path) -> String {
    let string = |key: &str| input.get(key).and_then(Value::as_str);
    let summary = match tool {
        "bash" => string("command").map(str::to_owned),
        "read" | "write" | "edit" | "multiedit" | "list" => {
            string("filePath").or_else(|| string("path")).map(|p| relative(p, root).to_owned())
        }
        "grep" | "glob" => string("pattern").map(str::to_owned),
        "webfetch" => string("url").map(str::to_owned),
        "task" => string("description").map(str::to_owned),
        _ => None,
    };
    let summary =
        summary.or_else(|| input.values().find_map(Value::as_str).map(str::to_owned)).unwrap_or_default();
    let first = sanitize(&summary).lines().next().unwrap_or_default().to_owned();
    if first.chars().count() > 120 {
        format!("{}…", first.chars().take(119).collect::<String>())
    } else {
        first
    }
}

/// A duration in ms as `850ms`, `3.2s` or `2m05s`.
pub fn elapsed(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms}ms"),
        1000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
    }
}

/// A unified diff as coloured lines, at most `limit` of them (then a line saying how many
/// more there are).
pub fn diff_lines(diff: &str, theme: &Theme, limit: usize) -> Vec<Line<'static>> {
    let diff = sanitize(diff);
    let body: Vec<&str> =
        diff.lines().filter(|l| !l.starts_with("Index:") && !l.starts_with("====")).collect();
    let mut lines: Vec<Line<'static>> = body
        .iter()
        .take(limit)
        .map(|l| {
            let style = if l.starts_with("+++") || l.starts_with("---") {
                theme.dim().add_modifier(Modifier::BOLD)
            } else if l.starts_with('+') {
                theme.added()
            } else if l.starts_with('-') {
                theme.removed()
            } else if l.starts_with("@@") {
                theme.hunk()
            } else {
                theme.text()
            };
            Line::from(Span::styled(format!("    {l}"), style))
        })
        .collect();
    if body.len() > limit {
        lines.push(Line::from(Span::styled(format!("    … {} more lines", body.len() - limit), theme.dim())));
    }
    lines
}

fn indented(text: &str, style: ratatui::style::Style, limit: usize) -> Vec<Line<'static>> {
    let text = sanitize(text);
    let all: Vec<&str> = text.lines().collect();
    let mut lines: Vec<Line<'static>> =
        all.iter().take(limit).map(|l| Line::from(Span::styled(format!("    {l}"), style))).collect();
    if all.len() > limit {
        lines.push(Line::from(Span::styled(format!("    … {} more lines", all.len() - limit), style)));
    }
    lines
}

/// The tool call's line and, when `expanded`, its input and output; edits and writes show
/// their diff either way.
pub fn tool_rows(part: &Part, tool: &ToolPart, expanded: bool, cx: &RenderContext<'_>) -> Vec<Row> {
    let theme = cx.theme;
    let (icon, style, input, state_text) = match &tool.state {
        ToolState::Pending { input, .. } => ("○", theme.running(), input, "pending".to_owned()),
        ToolState::Running { input, time, .. } => {
            // Whole seconds: the frame is redrawn once a second while it runs.
            ("◐", theme.running(), input, format!("running {}s", cx.now_ms.saturating_sub(time.start) / 1000))
        }
        ToolState::Completed { input, time, .. } => {
            ("✓", theme.done(), input, elapsed(time.end.saturating_sub(time.start)))
        }
        ToolState::Error { input, error, .. } => {
            let first = sanitize(error).lines().next().unwrap_or_default().to_owned();
            ("✗", theme.error(), input, format!("error: {first}"))
        }
    };
    let summary = tool_summary(&tool.tool, input, cx.root);
    let marker = if expanded { "▾" } else { "▸" };
    let header = Line::from(vec![
        Span::styled(format!("  {icon} "), style),
        Span::styled(tool.tool.clone(), style.add_modifier(Modifier::BOLD)),
        Span::raw(" "),
        Span::raw(summary),
        Span::styled(format!("  {state_text} {marker}"), theme.dim()),
    ]);
    let id = Some(part.id.clone());
    let mut rows: Vec<Row> = vec![(header, id.clone())];
    let diff = match &tool.state {
        ToolState::Completed { metadata, .. } => metadata.get("diff").and_then(Value::as_str),
        _ => None,
    };
    let limit = if expanded { MAX_EXPANDED_LINES } else { MAX_COLLAPSED_DIFF };
    if let Some(diff) = diff.filter(|_| matches!(tool.tool.as_str(), "edit" | "write" | "multiedit")) {
        rows.extend(diff_lines(diff, theme, limit).into_iter().map(|l| (l, id.clone())));
    } else if tool.tool == "write"
        && matches!(tool.state, ToolState::Completed { .. })
        && let Some(content) = input.get("content").and_then(Value::as_str)
    {
        // A write's result carries no diff (OpenCode's keys): show what it wrote, as OpenCode does.
        rows.extend(indented(content, theme.text(), limit).into_iter().map(|l| (l, id.clone())));
    }
    if expanded {
        rows.push((Line::from(Span::styled("    input:", theme.dim())), id.clone()));
        let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
        rows.extend(indented(&pretty, theme.dim(), MAX_EXPANDED_LINES).into_iter().map(|l| (l, id.clone())));
        let output = match &tool.state {
            ToolState::Completed { output, .. } => Some((output.as_str(), theme.text())),
            ToolState::Error { error, .. } => Some((error.as_str(), theme.error())),
            _ => None,
        };
        if let Some((output, style)) = output {
            rows.push((Line::from(Span::styled("    output:", theme.dim())), id.clone()));
            rows.extend(indented(output, style, MAX_EXPANDED_LINES).into_iter().map(|l| (l, id.clone())));
        }
    }
    rows
}

/// The line of a message error (an interrupt reads as such, not as a failure).
pub fn error_line(error: &MessageError, theme: &Theme) -> Line<'static> {
    match error {
        MessageError::MessageAbortedError { .. } => Line::from(Span::styled("  ⏹ interrupted", theme.dim())),
        other => Line::from(Span::styled(
            format!("  ✗ {}: {}", other.name(), sanitize(other.message()).replace('\n', " ")),
            theme.error(),
        )),
    }
}

/// The rows of one message: a header, then each part.
pub fn message_rows(
    info: &Message,
    parts: &[Part],
    expanded: &std::collections::HashSet<session_core::PartId>,
    cx: &RenderContext<'_>,
) -> Vec<Row> {
    let theme = cx.theme;
    let mut rows: Vec<Row> = Vec::new();
    let plain = |line: Line<'static>| (line, None);
    match info {
        Message::User(_) => {
            let mut first = true;
            for part in parts {
                match &part.kind {
                    PartKind::Text(text) if text.synthetic == Some(true) => {
                        rows.push(plain(Line::from(Span::styled(
                            format!("  + {} lines of context", text.text.lines().count()),
                            theme.dim(),
                        ))))
                    }
                    PartKind::Text(text) if !text.text.is_empty() => {
                        for line in sanitize(&text.text).lines() {
                            let lead = if first { "> " } else { "  " };
                            first = false;
                            rows.push(plain(Line::from(vec![
                                Span::styled(lead, theme.user()),
                                Span::styled(line.to_owned(), theme.text().add_modifier(Modifier::BOLD)),
                            ])));
                        }
                    }
                    PartKind::File(file) => rows.push(plain(Line::from(Span::styled(
                        format!("  📎 {}", file.filename.as_deref().unwrap_or(&file.mime)),
                        theme.dim(),
                    )))),
                    PartKind::Compaction(compaction) => rows.push(plain(Line::from(Span::styled(
                        match compaction.auto {
                            true => "── compacting the conversation (context full) ──",
                            false => "── compacting the conversation ──",
                        },
                        theme.dim(),
                    )))),
                    _ => {}
                }
            }
        }
        Message::Assistant(assistant) => {
            if assistant.summary == Some(true) {
                rows.push(plain(Line::from(Span::styled(
                    "── conversation compacted: summary ──",
                    theme.hunk(),
                ))));
            }
            for part in parts {
                match &part.kind {
                    PartKind::Text(text) if !text.text.trim().is_empty() => {
                        let style = if assistant.summary == Some(true) { theme.dim() } else { theme.text() };
                        for mut line in markdown(&text.text, theme) {
                            if style != theme.text() {
                                line = line.patch_style(style);
                            }
                            rows.push(plain(line));
                        }
                    }
                    PartKind::Reasoning(reasoning) if !reasoning.text.trim().is_empty() => {
                        let open = cx.details || expanded.contains(&part.id);
                        let id = Some(part.id.clone());
                        let count = reasoning.text.trim().lines().count();
                        let label = match open {
                            true => "  ▾ thinking".to_owned(),
                            false => format!("  ▸ thinking ({count} lines)"),
                        };
                        rows.push((Line::from(Span::styled(label, theme.dim())), id.clone()));
                        if open {
                            let style = theme.dim().add_modifier(Modifier::ITALIC);
                            rows.extend(
                                indented(&reasoning.text, style, usize::MAX)
                                    .into_iter()
                                    .map(|l| (l, id.clone())),
                            );
                        }
                    }
                    PartKind::Tool(tool) => {
                        let open = cx.details || expanded.contains(&part.id);
                        rows.extend(tool_rows(part, tool, open, cx));
                    }
                    PartKind::Patch(patch) if !patch.files.is_empty() => {
                        let files: Vec<&str> = patch.files.iter().map(|f| relative(f, cx.root)).collect();
                        let noun = if files.len() == 1 { "file" } else { "files" };
                        rows.push(plain(Line::from(Span::styled(
                            format!("  ± {} {noun} changed: {}", files.len(), sanitize(&files.join(", "))),
                            theme.hunk(),
                        ))));
                    }
                    PartKind::Retry(retry) => rows.push(plain(Line::from(Span::styled(
                        format!(
                            "  ↻ retry {}: {}",
                            retry.attempt,
                            sanitize(retry.error.message()).lines().next().unwrap_or_default()
                        ),
                        theme.running(),
                    )))),
                    PartKind::Subtask(task) => rows.push(plain(Line::from(Span::styled(
                        format!("  ⇢ {} task: {}", task.agent, sanitize(&task.description)),
                        theme.dim(),
                    )))),
                    _ => {}
                }
            }
            if let Some(error) = &assistant.error {
                rows.push(plain(error_line(error, theme)));
            }
        }
    }
    rows
}
