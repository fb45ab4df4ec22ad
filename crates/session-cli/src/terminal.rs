//! Human output with the terminal's control sequences taken out: text from a model, a title or
//! an imported session may carry escape sequences (a window-title rewrite, a cursor move, a
//! fake prompt, a carriage return that hides what came before); written raw they would act on
//! the user's terminal. The sequences are recognised by `vte`, the parser terminals use.

use std::borrow::Cow;

/// `text` as it may be shown: printable characters, newlines and tabs; every escape sequence
/// and other control character removed. Borrowed when there was nothing to remove.
pub fn clean(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Cow::Borrowed(text);
    }
    let mut kept = Kept(String::with_capacity(text.len()));
    vte::Parser::new().advance(&mut kept, text.as_bytes());
    Cow::Owned(kept.0)
}

/// Collects what a terminal would print, plus newlines and tabs.
struct Kept(String);

impl vte::Perform for Kept {
    fn print(&mut self, c: char) {
        self.0.push(c);
    }

    fn execute(&mut self, byte: u8) {
        if byte == b'\n' || byte == b'\t' {
            self.0.push(char::from(byte));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_are_removed_and_text_kept() {
        let hostile = "ok \u{1b}]0;pwned\u{7}title \u{1b}[2J\u{1b}[31mred\u{1b}[0m\tend\u{8}\rX\u{9b}2Jz\n";
        // A UTF-8 terminal prints U+009B's neighbours as text; the C1 control itself goes.
        assert_eq!(clean(hostile), "ok title red\tendX2Jz\n");
        assert!(matches!(clean("plain\ttext\nline"), Cow::Borrowed(_)));
        assert_eq!(clean("unicode é 日本 🎉"), "unicode é 日本 🎉");
    }
}
