//! Markdown to styled lines (unwrapped): headings, emphasis, inline code, links, lists, block
//! quotes, rules, fenced code with syntax colours and tables with aligned columns. Streaming
//! text is rendered as it is: an unclosed fence is a code block to the end.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::highlight;
use super::wrap::{sanitize, width};
use crate::theme::Theme;

/// Builds lines from parser events.
struct Builder<'t> {
    theme: &'t Theme,
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    /// Nested inline styles (emphasis, strong, link, heading).
    styles: Vec<Style>,
    /// Open lists: the next number of an ordered one, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// The prefix of continuation lines inside a list item or quote.
    indent: String,
    quote: usize,
    /// The current line starts with a list marker (it takes the indent's place).
    marker: bool,
    /// An open code block: its language and text so far.
    code: Option<(String, String)>,
    /// An open table: its rows of cells, the row being read, the cell being read.
    table: Option<Table>,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: String,
    header_rows: usize,
}

impl<'t> Builder<'t> {
    fn style(&self) -> Style {
        self.styles.iter().fold(Style::default(), |acc, s| acc.patch(*s))
    }

    fn push_text(&mut self, text: &str) {
        if let Some(table) = &mut self.table {
            table.cell.push_str(text);
            return;
        }
        let style = self.style();
        let mut first = true;
        for piece in text.split('\n') {
            if !first {
                self.flush();
            }
            first = false;
            if !piece.is_empty() {
                self.current.push(Span::styled(piece.to_owned(), style));
            }
        }
    }

    /// Ends the current line (with the quote marks and indent in front).
    fn flush(&mut self) {
        let mut spans = Vec::new();
        if self.quote > 0 {
            spans.push(Span::styled("│ ".repeat(self.quote), self.theme.dim()));
        }
        if !self.indent.is_empty() && !std::mem::take(&mut self.marker) {
            spans.push(Span::raw(self.indent.clone()));
        }
        spans.append(&mut self.current);
        self.lines.push(Line::from(spans));
    }

    fn flush_if_open(&mut self) {
        if !self.current.is_empty() {
            self.flush();
        }
    }

    /// An empty line between blocks, never two and never first.
    fn gap(&mut self) {
        self.flush_if_open();
        if self.lists.is_empty() && self.lines.last().is_some_and(|l| l.width() > 0) {
            self.lines.push(Line::default());
        }
    }

    fn code_block(&mut self, lang: &str, text: &str) {
        let fence = if lang.is_empty() { "```".to_owned() } else { format!("``` {lang}") };
        self.lines.push(Line::from(Span::styled(fence, self.theme.dim())));
        for mut line in highlight(text, lang, self.theme) {
            line.spans.insert(0, Span::raw(format!("{}  ", self.indent)));
            self.lines.push(line);
        }
        self.lines.push(Line::from(Span::styled("```", self.theme.dim())));
    }

    fn table_lines(&mut self, table: Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(width(cell));
            }
        }
        for (r, row) in table.rows.iter().enumerate() {
            let mut spans = Vec::new();
            for (i, w) in widths.iter().enumerate() {
                let cell = row.get(i).map(String::as_str).unwrap_or("");
                let pad = w.saturating_sub(width(cell));
                let style = if r < table.header_rows {
                    Style::default().add_modifier(Modifier::BOLD)
                } else {
                    Style::default()
                };
                spans.push(Span::styled("│ ", self.theme.border()));
                spans.push(Span::styled(format!("{cell}{}", " ".repeat(pad)), style));
                spans.push(Span::raw(" "));
            }
            spans.push(Span::styled("│", self.theme.border()));
            self.lines.push(Line::from(spans));
            if r + 1 == table.header_rows {
                let cells: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
                let rule = format!("├{}┤", cells.join("┼"));
                self.lines.push(Line::from(Span::styled(rule, self.theme.border())));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.flush_if_open(),
            Tag::Heading { level, .. } => {
                self.gap();
                let marks = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    HeadingLevel::H3 => "### ",
                    _ => "#### ",
                };
                self.styles.push(self.theme.heading());
                self.current.push(Span::styled(marks, self.theme.heading()));
            }
            Tag::BlockQuote(_) => {
                self.gap();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.flush_if_open();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.gap();
                } else {
                    self.flush_if_open();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush_if_open();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                let lead = "  ".repeat(depth);
                self.current.push(Span::raw(format!("{lead}{marker}")));
                self.marker = true;
                self.indent = format!("{lead}{}", " ".repeat(width(&marker)));
            }
            Tag::Emphasis => self.styles.push(Style::default().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::default().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.styles.push(Style::default().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { .. } => self.styles.push(self.theme.link()),
            Tag::Table(_) => {
                self.gap();
                self.table = Some(Table::default());
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => {}
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush_if_open();
                if self.lists.is_empty() {
                    self.lines.push(Line::default());
                }
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
            }
            TagEnd::BlockQuote(_) => {
                self.flush_if_open();
                self.quote = self.quote.saturating_sub(1);
            }
            TagEnd::CodeBlock => {
                if let Some((lang, text)) = self.code.take() {
                    self.code_block(&lang, &text);
                }
            }
            TagEnd::List(_) => {
                self.flush_if_open();
                self.lists.pop();
                self.indent = " ".repeat(self.lists.len() * 2);
                if self.lists.is_empty() {
                    self.indent.clear();
                    self.lines.push(Line::default());
                }
            }
            TagEnd::Item => self.flush_if_open(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link => {
                self.styles.pop();
            }
            TagEnd::TableCell => {
                if let Some(table) = &mut self.table {
                    let cell = std::mem::take(&mut table.cell);
                    table.row.push(cell.trim().to_owned());
                }
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::TableRow => {
                if let Some(table) = &mut self.table {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table_lines(table);
                    self.lines.push(Line::default());
                }
            }
            _ => {}
        }
    }
}

/// `text` (markdown, possibly still streaming) as styled lines, not yet wrapped.
pub fn markdown(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let text = sanitize(text);
    let mut builder = Builder {
        theme,
        lines: Vec::new(),
        current: Vec::new(),
        styles: Vec::new(),
        lists: Vec::new(),
        indent: String::new(),
        quote: 0,
        marker: false,
        code: None,
        table: None,
    };
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(&text, options) {
        match event {
            Event::Start(tag) => builder.start(tag),
            Event::End(tag) => builder.end(tag),
            Event::Text(t) => match &mut builder.code {
                Some((_, code)) => code.push_str(&t),
                None => builder.push_text(&t),
            },
            Event::Code(code) => match &mut builder.table {
                Some(table) => table.cell.push_str(&code),
                None => builder.current.push(Span::styled(code.to_string(), theme.code())),
            },
            Event::SoftBreak => builder.push_text(" "),
            Event::HardBreak => builder.flush(),
            Event::Rule => {
                builder.gap();
                builder.lines.push(Line::from(Span::styled("─".repeat(40), theme.border())));
            }
            Event::Html(html) | Event::InlineHtml(html) => builder.push_text(&html),
            Event::TaskListMarker(done) => builder.push_text(if done { "[x] " } else { "[ ] " }),
            _ => {}
        }
    }
    // A stream cut inside a fence or a table still shows what came.
    if let Some((lang, code)) = builder.code.take() {
        builder.code_block(&lang, &code);
    }
    if let Some(table) = builder.table.take() {
        builder.table_lines(table);
    }
    builder.flush_if_open();
    while builder.lines.last().is_some_and(|l| l.width() == 0) {
        builder.lines.pop();
    }
    builder.lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn headings_lists_code_and_tables_render_as_blocks() {
        let text = "# Title\n\nSome *em* and `code`.\n\n- one\n- two\n\n1. first\n2. second\n\n```rust\nfn main() {}\n```\n\n| a | bb |\n|---|----|\n| 1 | 2 |\n";
        let lines = markdown(text, &Theme { color: false });
        insta::assert_snapshot!(plain(&lines).join("\n"));
    }

    #[test]
    fn an_unclosed_fence_while_streaming_is_still_a_code_block() {
        let lines = markdown("Look:\n\n```py\nprint(1)\n", &Theme { color: false });
        assert_eq!(plain(&lines), ["Look:", "", "``` py", "  print(1)", "```"]);
    }
}
