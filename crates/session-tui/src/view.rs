//! One frame: the transcript (only its visible rows), then in their own areas below it the
//! completion list, the picker or the permission dialog, the prompt and the status line. The
//! dialog never covers the transcript's text: the transcript gives up rows for it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use serde_json::Value;
use session_core::permission::PermissionAsk;
use session_runtime::sessions::SessionStatus;

use crate::app::App;
use crate::render::parts::diff_lines;
use crate::render::wrap::{sanitize, wrap_all};

/// The most rows the prompt grows to.
const MAX_PROMPT_ROWS: u16 = 8;
/// The most rows a picker or the dialog takes.
const MAX_PANEL_ROWS: u16 = 14;

/// Tokens as `950`, `12.3k` or `1.2M`.
pub fn tokens(n: u64) -> String {
    match n {
        0..1000 => n.to_string(),
        1000..1_000_000 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// The status line's text: model, agent, context and its share, cost, title, state.
pub fn status_text(app: &App, now_ms: u64) -> String {
    let context = app.context_tokens();
    let share = match app.status.context_limit.filter(|&l| l > 0) {
        Some(limit) => format!("{}/{} ({}%)", tokens(context), tokens(limit), context * 100 / limit),
        None => tokens(context),
    };
    let state = match &app.status.state {
        Some(SessionStatus::Busy) => {
            let spinner = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
            format!("{} working · Esc interrupts", spinner[((now_ms / 1000) % 10) as usize])
        }
        Some(SessionStatus::Retry { attempt, message, next }) => {
            let wait = next.saturating_sub(now_ms).div_ceil(1000);
            let first = sanitize(message).lines().next().unwrap_or_default().to_owned();
            format!("↻ retry {attempt} in {wait}s: {first}")
        }
        Some(SessionStatus::Idle) | None => "idle".to_owned(),
    };
    let flash = app.status.flash.as_ref().map(|f| format!(" │ {f}")).unwrap_or_default();
    format!(
        " {} · {} │ ctx {share} │ ${} │ {} │ {state}{flash}",
        app.status.agent,
        app.status.model,
        app.cost().round_dp(4).normalize(),
        sanitize(&app.status.title),
    )
}

/// The dialog's lines for an ask.
pub fn ask_lines(app: &App, ask: &PermissionAsk, width: u16) -> Vec<Line<'static>> {
    let theme = &app.theme;
    let request = &ask.request;
    let mut lines = Vec::new();
    let what = if request.permission == "doom_loop" {
        "The model keeps repeating the same tool call. Let it go on?".to_owned()
    } else {
        format!("Allow {}?", request.permission)
    };
    lines.push(Line::from(Span::styled(what, theme.attention())));
    for pattern in request.patterns.iter().take(4) {
        lines.push(Line::from(format!("  {}", sanitize(pattern))));
    }
    if let Some(diff) = request.metadata.get("diff").and_then(Value::as_str) {
        lines.extend(diff_lines(diff, theme, 6));
    } else if let Some(command) = request.metadata.get("command").and_then(Value::as_str) {
        lines.push(Line::from(Span::styled(format!("  $ {}", sanitize(command)), theme.code())));
    }
    let more = match app.asks.len() {
        0 | 1 => String::new(),
        n => format!("   ({} more waiting)", n - 1),
    };
    let keys = match app.feedback {
        true => "type why, Enter rejects with it · Esc back".to_owned(),
        false => format!("[o]nce  [a]lways  [r]eject  [f] reject with feedback  · Esc interrupts{more}"),
    };
    lines.push(Line::from(Span::styled(keys, theme.dim().remove_modifier(Modifier::DIM))));
    wrap_all(&lines, usize::from(width.saturating_sub(2)))
}

/// Draws the frame for `app` at `now_ms`.
pub fn draw(frame: &mut Frame<'_>, app: &mut App, now_ms: u64) {
    let area = frame.area();
    let theme = app.theme;
    let width = area.width;
    // The panel under the transcript: a picker, the dialog, or the completions.
    let panel: Option<(String, Vec<Line<'static>>, bool)> = if let Some(picker) = &app.picker {
        let visible = picker.visible();
        let title = match picker.kind {
            crate::app::PickerKind::Sessions => "sessions",
            crate::app::PickerKind::Models => "models",
            crate::app::PickerKind::Agents => "agents",
        };
        let rows = usize::from(MAX_PANEL_ROWS - 3);
        let start = picker.selected.saturating_sub(rows - 1);
        let mut lines: Vec<Line<'static>> = visible
            .iter()
            .enumerate()
            .skip(start)
            .take(rows)
            .map(|(i, item)| {
                let style = if i == picker.selected { theme.selected() } else { theme.text() };
                Line::from(vec![
                    Span::styled(format!(" {} ", sanitize(&item.label)), style),
                    Span::styled(format!(" {}", item.detail), theme.dim()),
                ])
            })
            .collect();
        if visible.is_empty() {
            lines.push(Line::from(Span::styled(" nothing matches", theme.dim())));
        }
        lines.push(Line::from(Span::styled(
            format!(" filter: {}▏ · ↑↓ choose · Enter picks · Esc closes", picker.filter),
            theme.dim(),
        )));
        Some((format!(" {title} "), lines, false))
    } else if let Some(pending) = app.asks.front() {
        Some((" permission ".to_owned(), ask_lines(app, &pending.ask, width), true))
    } else if let Some(dialog) = app.questions.front() {
        let lines = dialog.lines(&theme, width, app.questions.len() - 1);
        Some((" question ".to_owned(), lines, true))
    } else {
        app.completion.as_ref().map(|(items, selected)| {
            let lines = items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let style = if i == *selected { theme.selected() } else { theme.text() };
                    Line::from(Span::styled(format!(" @{} ", sanitize(item)), style))
                })
                .collect();
            (" files · Tab completes ".to_owned(), lines, false)
        })
    };
    let panel_rows = panel.as_ref().map_or(0, |(_, lines, _)| (lines.len() as u16 + 2).min(MAX_PANEL_ROWS));
    let prompt_rows = (app.input.lines().len() as u16).clamp(1, MAX_PROMPT_ROWS) + 2;
    let [body, panel_area, prompt_area, status_area] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(panel_rows),
        Constraint::Length(prompt_rows),
        Constraint::Length(1),
    ])
    .areas(area);

    // The transcript: lay out (cached), then copy the visible rows only.
    let total = app.transcript.layout(body.width.max(1), &theme, now_ms, app.details);
    if app.scroll > 0 && app.last_total > 0 && total > app.last_total {
        // Scrolled up: new rows below must not move what is being read.
        app.scroll += total - app.last_total;
    }
    app.last_total = total;
    let height = usize::from(body.height);
    let max_top = total.saturating_sub(height);
    app.scroll = app.scroll.min(max_top);
    let top = max_top - app.scroll;
    let rows = app.transcript.rows(top, height);
    app.transcript_area = body;
    app.row_parts = rows.iter().map(|(_, part)| part.clone()).collect();
    let lines: Vec<Line<'static>> = if total == 0 {
        vec![
            Line::from(Span::styled("session", theme.assistant())),
            Line::from(Span::styled(
                "Type a prompt and press Enter. /help lists commands and keys.",
                theme.dim(),
            )),
        ]
    } else {
        rows.into_iter().map(|(line, _)| line).collect()
    };
    frame.render_widget(Paragraph::new(lines), body);
    if app.scroll > 0 {
        let hint = format!(" ↓ {} more rows · Ctrl-End ", app.scroll);
        let w = (hint.chars().count() as u16).min(body.width);
        let at = Rect {
            x: body.x + body.width - w,
            y: body.y + body.height.saturating_sub(1),
            width: w,
            height: 1,
        };
        frame.render_widget(Paragraph::new(Span::styled(hint, theme.status())), at);
    }

    if let Some((title, lines, attention)) = panel {
        let style = if attention { theme.attention() } else { theme.border() };
        let block =
            Block::default().borders(Borders::ALL).border_style(style).title(Span::styled(title, style));
        frame.render_widget(Paragraph::new(lines).block(block), panel_area);
    }

    let title = match (app.feedback, app.busy()) {
        (true, _) => " feedback ",
        (false, true) => " prompt · joins the running turn ",
        (false, false) => " prompt ",
    };
    let mut extra = String::new();
    if !app.context.is_empty() {
        extra = format!(" +{} shell output ", app.context.len());
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border())
        .title(Span::styled(title, theme.border()))
        .title_bottom(Span::styled(extra, theme.dim()));
    app.input.set_block(block);
    frame.render_widget(&app.input, prompt_area);

    let status = status_text(app, now_ms);
    frame.render_widget(
        Paragraph::new(Span::styled(status, theme.status())).style(theme.status()),
        status_area,
    );
}
