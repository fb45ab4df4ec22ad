//! Colours and emphasis; with `NO_COLOR` set every style keeps only its modifiers (bold, dim,
//! reversed), so the UI stays readable in monochrome.

use ratatui::style::{Color, Modifier, Style};

/// The styles the UI draws with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// False when `NO_COLOR` is set: no foreground or background colours at all.
    pub color: bool,
}

impl Theme {
    /// The theme for this environment: colours unless `no_color` (the value of `NO_COLOR`)
    /// is set to anything non-empty, as no-color.org says.
    pub fn from_no_color(no_color: Option<&str>) -> Self {
        Self { color: no_color.is_none_or(str::is_empty) }
    }

    /// A style with `fg` when colours are on, plus `modifier` either way.
    fn paint(&self, fg: Color, modifier: Modifier) -> Style {
        let style = Style::default().add_modifier(modifier);
        if self.color { style.fg(fg) } else { style }
    }

    /// Plain text.
    pub fn text(&self) -> Style {
        Style::default()
    }

    /// Secondary text: hints, times, collapsed reasoning.
    pub fn dim(&self) -> Style {
        self.paint(Color::DarkGray, Modifier::DIM)
    }

    /// The user's messages' marker.
    pub fn user(&self) -> Style {
        self.paint(Color::Cyan, Modifier::BOLD)
    }

    /// The assistant's marker.
    pub fn assistant(&self) -> Style {
        self.paint(Color::Magenta, Modifier::BOLD)
    }

    /// Markdown headings.
    pub fn heading(&self) -> Style {
        self.paint(Color::Yellow, Modifier::BOLD)
    }

    /// Inline code.
    pub fn code(&self) -> Style {
        self.paint(Color::LightYellow, Modifier::empty())
    }

    /// Links.
    pub fn link(&self) -> Style {
        self.paint(Color::Blue, Modifier::UNDERLINED)
    }

    /// A pending or running tool.
    pub fn running(&self) -> Style {
        self.paint(Color::Yellow, Modifier::empty())
    }

    /// A completed tool.
    pub fn done(&self) -> Style {
        self.paint(Color::Green, Modifier::empty())
    }

    /// Errors.
    pub fn error(&self) -> Style {
        self.paint(Color::Red, Modifier::BOLD)
    }

    /// Added diff lines.
    pub fn added(&self) -> Style {
        self.paint(Color::Green, Modifier::empty())
    }

    /// Removed diff lines.
    pub fn removed(&self) -> Style {
        self.paint(Color::Red, Modifier::empty())
    }

    /// Diff hunk headers.
    pub fn hunk(&self) -> Style {
        self.paint(Color::Cyan, Modifier::DIM)
    }

    /// The status line.
    pub fn status(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    /// The selected row of a picker or completion list.
    pub fn selected(&self) -> Style {
        if self.color {
            Style::default().fg(Color::Black).bg(Color::Cyan)
        } else {
            Style::default().add_modifier(Modifier::REVERSED)
        }
    }

    /// Borders of the prompt, the dialog and the pickers.
    pub fn border(&self) -> Style {
        self.paint(Color::DarkGray, Modifier::empty())
    }

    /// The permission dialog's border and title: it must catch the eye.
    pub fn attention(&self) -> Style {
        self.paint(Color::LightRed, Modifier::BOLD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_set_to_anything_turns_colours_off_but_keeps_emphasis() {
        assert!(Theme::from_no_color(None).color);
        assert!(Theme::from_no_color(Some("")).color);
        let mono = Theme::from_no_color(Some("1"));
        assert!(!mono.color);
        assert_eq!(mono.error().fg, None);
        assert!(mono.error().add_modifier.contains(Modifier::BOLD));
        assert_eq!(mono.selected().bg, None);
    }
}
