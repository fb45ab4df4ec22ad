//! The question dialog: the `question` tool's questions one after another, each with its
//! numbered options, several picked when the question allows it, and a typed answer of one's
//! own. Esc dismisses the whole request (the tool call fails, as OpenCode's dismissal does).

use std::collections::BTreeSet;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use session_runtime::questions::{QuestionAnswer, QuestionRequest};

use crate::render::wrap::{sanitize, wrap_all};
use crate::theme::Theme;

/// The label of the row that opens the typed answer.
pub const CUSTOM_ROW: &str = "Type your own answer";

/// One question request on screen.
#[derive(Debug, Clone)]
pub struct QuestionDialog {
    /// The request.
    pub request: QuestionRequest,
    /// The question shown (answered ones come before it).
    pub index: usize,
    /// The highlighted row: an option, or the typed-answer row after them.
    pub cursor: usize,
    /// The options picked of the shown question (multiple choice).
    pub picked: BTreeSet<usize>,
    /// The typed answer while it is being typed.
    pub typing: Option<String>,
    /// The answers of the questions before the shown one.
    pub answers: Vec<QuestionAnswer>,
}

/// What a key did to the dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing final yet.
    Pending,
    /// Every question is answered.
    Answered(Vec<QuestionAnswer>),
    /// The user dismissed the request.
    Dismissed,
}

impl QuestionDialog {
    /// A dialog at the first question.
    pub fn new(request: QuestionRequest) -> Self {
        Self { request, index: 0, cursor: 0, picked: BTreeSet::new(), typing: None, answers: Vec::new() }
    }

    fn options(&self) -> usize {
        self.request.questions.get(self.index).map_or(0, |q| q.options.len())
    }

    fn multiple(&self) -> bool {
        self.request.questions.get(self.index).is_some_and(|q| q.is_multiple())
    }

    fn label(&self, option: usize) -> Option<String> {
        self.request.questions.get(self.index)?.options.get(option).map(|o| o.label.clone())
    }

    /// Records the shown question's answer and moves on; the last one ends the dialog.
    fn settle(&mut self, answer: QuestionAnswer) -> Outcome {
        self.answers.push(answer);
        self.index += 1;
        self.cursor = 0;
        self.picked.clear();
        self.typing = None;
        if self.index >= self.request.questions.len() {
            Outcome::Answered(std::mem::take(&mut self.answers))
        } else {
            Outcome::Pending
        }
    }

    /// The picked labels of a multiple-choice question, in the options' order.
    fn picked_labels(&self) -> Vec<String> {
        self.picked.iter().filter_map(|&option| self.label(option)).collect()
    }

    /// Picks option `option`: answers a single-choice question, toggles a multiple one.
    fn pick(&mut self, option: usize) -> Outcome {
        if option == self.options() {
            self.typing = Some(String::new());
            return Outcome::Pending;
        }
        if self.multiple() {
            if !self.picked.remove(&option) {
                self.picked.insert(option);
            }
            return Outcome::Pending;
        }
        match self.label(option) {
            Some(label) => self.settle(vec![label]),
            None => Outcome::Pending,
        }
    }

    /// Applies a key.
    pub fn key(&mut self, key: &KeyEvent) -> Outcome {
        if let Some(text) = &mut self.typing {
            match key.code {
                KeyCode::Enter => {
                    let typed = text.trim().to_owned();
                    let mut answer = if self.multiple() { self.picked_labels() } else { Vec::new() };
                    if !typed.is_empty() {
                        answer.push(typed);
                    }
                    return self.settle(answer);
                }
                KeyCode::Esc => self.typing = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
                _ => {}
            }
            return Outcome::Pending;
        }
        let rows = self.options() + 1;
        match key.code {
            KeyCode::Esc => return Outcome::Dismissed,
            KeyCode::Up => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Down => self.cursor = (self.cursor + 1).min(rows - 1),
            KeyCode::Char(c @ '1'..='9') => {
                let option = usize::from(c as u8 - b'1');
                if option < rows {
                    self.cursor = option;
                    return self.pick(option);
                }
            }
            KeyCode::Char(' ') if self.multiple() && self.cursor < self.options() => {
                return self.pick(self.cursor);
            }
            KeyCode::Enter if self.multiple() && self.cursor < self.options() => {
                // Enter confirms what is picked; with nothing picked, the highlighted option.
                if self.picked.is_empty() {
                    self.picked.insert(self.cursor);
                }
                let answer = self.picked_labels();
                return self.settle(answer);
            }
            KeyCode::Enter => return self.pick(self.cursor),
            _ => {}
        }
        Outcome::Pending
    }

    /// The dialog's lines at `width` columns; `more` is how many requests wait behind it.
    pub fn lines(&self, theme: &Theme, width: u16, more: usize) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        let Some(question) = self.request.questions.get(self.index) else { return lines };
        let total = self.request.questions.len();
        let count = if total > 1 { format!(" ({}/{total})", self.index + 1) } else { String::new() };
        lines.push(Line::from(vec![
            Span::styled(format!("{}{count}  ", sanitize(&question.header)), theme.dim()),
            Span::styled(sanitize(&question.question).into_owned(), theme.attention()),
        ]));
        for (i, option) in question.options.iter().enumerate() {
            let mark = match (self.multiple(), self.picked.contains(&i)) {
                (true, true) => "[x] ",
                (true, false) => "[ ] ",
                (false, _) => "",
            };
            let style =
                if i == self.cursor && self.typing.is_none() { theme.selected() } else { theme.text() };
            lines.push(Line::from(vec![
                Span::styled(format!(" {}. {mark}{} ", i + 1, sanitize(&option.label)), style),
                Span::styled(format!(" {}", sanitize(&option.description)), theme.dim()),
            ]));
        }
        let custom = question.options.len();
        let row = match &self.typing {
            Some(text) => format!(" {}. {}▏ ", custom + 1, sanitize(text)),
            None => format!(" {}. {CUSTOM_ROW} ", custom + 1),
        };
        let style =
            if self.cursor == custom || self.typing.is_some() { theme.selected() } else { theme.text() };
        lines.push(Line::from(Span::styled(row, style)));
        let waiting = if more > 0 { format!("   ({more} more waiting)") } else { String::new() };
        let keys = match (&self.typing, self.multiple()) {
            (Some(_), _) => "type the answer · Enter sends · Esc back to the options".to_owned(),
            (None, true) => format!("↑↓ · 1-9/Space pick · Enter confirms · Esc dismisses{waiting}"),
            (None, false) => format!("↑↓ · 1-9 or Enter picks · Esc dismisses{waiting}"),
        };
        lines.push(Line::from(Span::styled(keys, theme.dim().remove_modifier(Modifier::DIM))));
        wrap_all(&lines, usize::from(width.saturating_sub(2)))
    }
}

#[cfg(test)]
mod tests;
