//! Word wrapping of styled lines to a width, and removal of control characters: model text
//! written raw into the terminal could move the cursor or retitle the window.

use std::borrow::Cow;

use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// `text` without control characters: tabs become four spaces, newlines stay (the caller
/// splits on them), everything else below U+0020 or in C1 goes.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\n' => out.push('\n'),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The display width of `text` in terminal cells.
pub fn width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `line` broken into lines at most `max` cells wide: at spaces where possible, inside a word
/// when it alone is wider. Styles and the line's own style carry over; an empty line stays one
/// empty line.
pub fn wrap_line(line: &Line<'static>, max: usize) -> Vec<Line<'static>> {
    let max = max.max(1);
    let total: usize = line.spans.iter().map(|s| width(&s.content)).sum();
    if total <= max {
        return vec![line.clone()];
    }
    // Characters with their styles, then greedy breaking with a remembered last space.
    let cells: Vec<(char, ratatui::style::Style)> =
        line.spans.iter().flat_map(|s| s.content.chars().map(move |c| (c, s.style))).collect();
    let mut rows: Vec<&[(char, ratatui::style::Style)]> = Vec::new();
    let mut start = 0;
    while start < cells.len() {
        let mut used = 0;
        let mut end = start;
        let mut last_space = None;
        while end < cells.len() {
            let w = cells[end].0.width().unwrap_or(0);
            if used + w > max {
                break;
            }
            if cells[end].0 == ' ' {
                last_space = Some(end);
            }
            used += w;
            end += 1;
        }
        if end == start {
            // One character wider than the row: it goes alone.
            end = start + 1;
        } else if end < cells.len()
            && cells[end].0 != ' '
            && let Some(space) = last_space.filter(|&s| s > start)
        {
            end = space + 1;
        }
        rows.push(&cells[start..end]);
        start = end;
        // The spaces a break lands on are not carried to the next row.
        while start < cells.len() && cells[start].0 == ' ' && end > 0 {
            start += 1;
        }
    }
    rows.into_iter()
        .map(|row| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            for &(c, style) in row {
                match spans.last_mut() {
                    Some(last) if last.style == style => last.content.to_mut().push(c),
                    _ => spans.push(Span::styled(c.to_string(), style)),
                }
            }
            // A row ending in the break's space keeps no trailing blank.
            if let Some(last) = spans.last_mut() {
                let trimmed = last.content.trim_end().len();
                last.content.to_mut().truncate(trimmed);
            }
            Line::from(spans).style(line.style)
        })
        .collect()
}

/// Every line of `lines` wrapped to `max` cells.
pub fn wrap_all(lines: &[Line<'static>], max: usize) -> Vec<Line<'static>> {
    lines.iter().flat_map(|line| wrap_line(line, max)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Style};

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn words_break_at_spaces_and_long_words_inside() {
        let line = Line::from("the quick brown fox jumps");
        assert_eq!(text(&wrap_line(&line, 10)), ["the quick", "brown fox", "jumps"]);
        let long = Line::from("abcdefghijkl xy");
        assert_eq!(text(&wrap_line(&long, 5)), ["abcde", "fghij", "kl xy"]);
        assert_eq!(text(&wrap_line(&Line::from(""), 5)), [""]);
    }

    #[test]
    fn styles_survive_a_break() {
        let red = Style::default().fg(Color::Red);
        let line = Line::from(vec![Span::raw("plain "), Span::styled("red words here", red)]);
        let rows = wrap_line(&line, 10);
        assert_eq!(text(&rows), ["plain red", "words here"]);
        assert_eq!(rows[1].spans[0].style, red);
    }

    #[test]
    fn wide_characters_count_two_cells() {
        let rows = wrap_line(&Line::from("日本語のテキスト"), 6);
        assert!(rows.iter().all(|r| r.width() <= 6), "{:?}", text(&rows));
        assert_eq!(rows.len(), 3);
    }

    proptest::proptest! {
        /// Rows never exceed the width, and every non-space character survives, in order.
        #[test]
        fn rows_fit_and_keep_every_character(text in "[a-z ]{0,200}", max in 1usize..40) {
            let rows = wrap_line(&Line::from(text.clone()), max);
            for row in &rows {
                proptest::prop_assert!(row.width() <= max);
            }
            let kept: String = text.chars().filter(|c| *c != ' ').collect();
            let shown: String = rows.iter().flat_map(|r| r.spans.iter()).flat_map(|s| s.content.chars()).filter(|c| *c != ' ').collect();
            proptest::prop_assert_eq!(kept, shown);
        }
    }

    #[test]
    fn controls_are_removed_and_tabs_expanded() {
        assert_eq!(sanitize("a\u{1b}[2Jb\tc\rd\n"), "a[2Jb    cd\n");
        assert!(matches!(sanitize("plain\ntext"), Cow::Borrowed(_)));
    }
}
