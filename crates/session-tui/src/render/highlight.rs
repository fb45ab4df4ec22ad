//! Syntax colours for code blocks, with syntect's bundled grammars and themes on its pure-Rust
//! regex engine. The grammars load once, on the first code block.

use std::sync::OnceLock;

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme as SyntectTheme, ThemeSet};
use syntect::parsing::SyntaxSet;

use super::wrap::sanitize;
use crate::theme::Theme;

/// The bundled grammars and the one theme used, loaded on first use.
fn assets() -> &'static (SyntaxSet, Option<SyntectTheme>) {
    static ASSETS: OnceLock<(SyntaxSet, Option<SyntectTheme>)> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let theme = ThemeSet::load_defaults().themes.remove("base16-ocean.dark");
        (syntaxes, theme)
    })
}

/// `code` as lines coloured for `lang` (a fence's info string: `rust`, `py`, `sh`...); plain
/// lines in `theme.code()` when colours are off, the language is unknown or highlighting fails.
pub fn highlight(code: &str, lang: &str, theme: &Theme) -> Vec<Line<'static>> {
    let code = sanitize(code);
    let plain = || code.lines().map(|l| Line::from(Span::styled(l.to_owned(), theme.code()))).collect();
    if !theme.color || lang.is_empty() {
        return plain();
    }
    let (syntaxes, Some(colours)) = assets() else { return plain() };
    let token = lang.split([' ', ',', '{']).next().unwrap_or(lang);
    let Some(syntax) = syntaxes.find_syntax_by_token(token) else { return plain() };
    let mut highlighter = HighlightLines::new(syntax, colours);
    let mut lines = Vec::new();
    for line in syntect::util::LinesWithEndings::from(&code) {
        let Ok(ranges) = highlighter.highlight_line(line, syntaxes) else { return plain() };
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .map(|(style, text)| {
                let fg = style.foreground;
                Span::styled(
                    text.trim_end_matches(['\n', '\r']).to_owned(),
                    Style::default().fg(Color::Rgb(fg.r, fg.g, fg.b)),
                )
            })
            .filter(|span| !span.content.is_empty())
            .collect();
        lines.push(Line::from(spans));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_get_colours_and_unknown_ones_stay_plain() {
        let theme = Theme { color: true };
        let rust = highlight("fn main() {\n    let x = 1;\n}\n", "rust", &theme);
        assert_eq!(rust.len(), 3);
        let colours: std::collections::HashSet<_> =
            rust.iter().flat_map(|l| l.spans.iter().filter_map(|s| s.style.fg)).collect();
        assert!(colours.len() > 1, "several token colours: {colours:?}");
        let unknown = highlight("some text", "no-such-language", &theme);
        assert_eq!(unknown[0].spans[0].style, theme.code());
        let mono = highlight("fn main() {}", "rust", &Theme { color: false });
        assert_eq!(mono[0].spans[0].style.fg, None);
    }
}
