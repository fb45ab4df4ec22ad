//! Words as bash would see them after quote removal, when that can be known from the text
//! alone: quotes and backslashes removed, `$'...'` decoded, and a record of which characters
//! stayed unquoted (globs and brace expansion act only on those).

use tree_sitter::Node;

/// One word of a command: its source text and, when no expansion can change it, its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The text as written.
    pub(crate) raw: String,
    /// The value after quote removal; `None` when an expansion (`$x`, `$(...)`, ...) is part
    /// of it.
    pub(crate) value: Option<String>,
    /// True when an unquoted expansion is part of it: bash may split it into several words.
    pub(crate) splits: bool,
    /// The value with every quoted character replaced by `_`: what globbing and brace
    /// expansion act on. Same length in characters as `value`.
    unquoted: String,
}

impl Word {
    /// A word known to be exactly `value`, as if single-quoted.
    #[cfg(test)]
    pub(crate) fn literal(value: &str) -> Self {
        let unquoted = value.chars().map(|c| if is_special(c) { '_' } else { c }).collect();
        Self { raw: value.to_owned(), value: Some(value.to_owned()), splits: false, unquoted }
    }

    /// The text a permission pattern shows: the value where static, else the source.
    pub(crate) fn text(&self) -> &str {
        self.value.as_deref().unwrap_or(&self.raw)
    }

    /// The value when it is static and neither globbing nor brace expansion can turn it into
    /// other words (what a command name must be for the analysis to trust it).
    pub(crate) fn plain(&self) -> Option<&str> {
        self.value.as_deref().filter(|_| !self.globs() && !self.braces())
    }

    /// The static value cut before its first unquoted glob character (`rm src/*.o` →
    /// `src/`): the part of a path argument that is known. `None` when not static or when a
    /// brace expansion may produce several different paths.
    pub(crate) fn path_prefix(&self) -> Option<&str> {
        let value = self.value.as_deref()?;
        if self.braces() {
            return None;
        }
        let cut = self.unquoted.chars().position(is_glob);
        Some(match cut {
            Some(chars) => value.char_indices().nth(chars).map_or(value, |(at, _)| &value[..at]),
            None => value,
        })
    }

    fn globs(&self) -> bool {
        self.unquoted.chars().any(is_glob)
            || ["@(", "!(", "+("].iter().any(|extglob| self.unquoted.contains(extglob))
    }

    /// A `{` later closed by `}` with a `,` or `..` between, all unquoted.
    fn braces(&self) -> bool {
        let text = &self.unquoted;
        text.match_indices('{').any(|(open, _)| {
            text[open..].find('}').is_some_and(|close| {
                let inner = &text[open + 1..open + close];
                inner.contains(',') || inner.contains("..")
            })
        })
    }
}

fn is_glob(c: char) -> bool {
    matches!(c, '*' | '?' | '[')
}

/// Characters whose quoting matters to the analysis.
fn is_special(c: char) -> bool {
    is_glob(c) || matches!(c, '{' | '}' | ',' | '.' | '@' | '!' | '+' | '(')
}

/// A value being built: the characters and the unquoted view.
#[derive(Default)]
struct Builder {
    value: String,
    unquoted: String,
}

impl Builder {
    fn quoted(&mut self, c: char) {
        self.value.push(c);
        self.unquoted.push(if is_special(c) { '_' } else { c });
    }

    fn quoted_str(&mut self, text: &str) {
        text.chars().for_each(|c| self.quoted(c));
    }

    fn unquoted(&mut self, c: char) {
        self.value.push(c);
        self.unquoted.push(c);
    }
}

/// The word a node of an argument position stands for.
pub(crate) fn word(node: Node<'_>, source: &str) -> Word {
    let raw = text(node, source).to_owned();
    let mut builder = Builder::default();
    if build(node, source, &mut builder) {
        Word { raw, value: Some(builder.value), splits: false, unquoted: builder.unquoted }
    } else {
        Word { value: None, splits: splits(node), unquoted: String::new(), raw }
    }
}

/// True when an expansion outside double quotes is part of the node (its result is split
/// into words and globbed).
fn splits(node: Node<'_>) -> bool {
    match node.kind() {
        "simple_expansion" | "expansion" | "command_substitution" | "arithmetic_expansion" => true,
        "concatenation" | "command_name" => {
            let mut cursor = node.walk();
            node.children(&mut cursor).any(splits)
        }
        // Strings quote what is inside; anything the analysis does not know may split.
        "string" | "raw_string" | "ansi_c_string" | "word" | "number" => false,
        _ => true,
    }
}

/// The source text of a node (empty if its range is not on character boundaries, which
/// tree-sitter's byte offsets on valid UTF-8 never produce).
pub(crate) fn text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.start_byte()..node.end_byte()).unwrap_or_default()
}

/// Appends the value of `node`; false when it is not static.
fn build(node: Node<'_>, source: &str, out: &mut Builder) -> bool {
    let raw = text(node, source);
    match node.kind() {
        "word" | "command_name" if node.named_child_count() == 0 => {
            unescape_unquoted(raw, out);
            true
        }
        // Options like `-n5` parse as numbers; they are what they say.
        "number" => {
            unescape_unquoted(raw, out);
            true
        }
        "raw_string" => match raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
            Some(inner) => {
                out.quoted_str(inner);
                true
            }
            None => false,
        },
        "ansi_c_string" => {
            match raw.strip_prefix("$'").and_then(|r| r.strip_suffix('\'')).and_then(decode_ansi_c) {
                Some(decoded) => {
                    out.quoted_str(&decoded);
                    true
                }
                None => false,
            }
        }
        "string" => {
            let mut cursor = node.walk();
            let only_text = node.named_children(&mut cursor).all(|child| child.kind() == "string_content");
            match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                Some(inner) if only_text => {
                    unescape_double_quoted(inner, out);
                    true
                }
                _ => false,
            }
        }
        "concatenation" | "command_name" => {
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
            !children.is_empty() && children.into_iter().all(|child| build(child, source, out))
        }
        _ => false,
    }
}

/// Outside quotes a backslash quotes the next character and a backslash-newline vanishes.
fn unescape_unquoted(raw: &str, out: &mut Builder) {
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.quoted(next),
            }
        } else {
            out.unquoted(c);
        }
    }
}

/// Inside double quotes a backslash escapes only `$`, `` ` ``, `"`, `\` and a newline.
fn unescape_double_quoted(inner: &str, out: &mut Builder) {
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('\\', Some('\n')) => {
                chars.next();
            }
            ('\\', Some(next @ ('$' | '`' | '"' | '\\'))) => {
                chars.next();
                out.quoted(next);
            }
            (c, _) => out.quoted(c),
        }
    }
}

/// Decodes the body of `$'...'`; `None` for `\c` (control characters), a code point that is
/// not a character, or a NUL (bash cuts the word there).
pub(crate) fn decode_ansi_c(body: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(escape) = chars.next() else {
            out.push('\\');
            break;
        };
        let simple = match escape {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(escape),
            _ => None,
        };
        if let Some(decoded) = simple {
            out.push(decoded);
            continue;
        }
        let (radix, max_digits, first) = match escape {
            '0'..='7' => (8, 3, Some(escape)),
            'x' => (16, 2, None),
            'u' => (16, 4, None),
            'U' => (16, 8, None),
            'c' => return None,
            other => {
                // An unknown escape stays as written.
                out.push('\\');
                out.push(other);
                continue;
            }
        };
        let mut digits = String::new();
        digits.extend(first);
        while digits.len() < max_digits {
            match chars.peek() {
                Some(d) if d.is_digit(radix) => {
                    digits.push(*d);
                    chars.next();
                }
                _ => break,
            }
        }
        if digits.is_empty() {
            // `\x` with no digits stays as written.
            out.push('\\');
            out.push(escape);
            continue;
        }
        let code = u32::from_str_radix(&digits, radix).ok()?;
        let decoded = match escape {
            // Octal and hex escapes are bytes; above 0x7f they would be raw bytes, not
            // characters, which a permission pattern cannot show faithfully.
            '0'..='7' | 'x' if code > 0x7f => return None,
            _ => char::from_u32(code)?,
        };
        if decoded == '\0' {
            return None;
        }
        out.push(decoded);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word `source` as the argument of `echo`.
    fn parse_word(source: &str) -> Word {
        let line = format!("echo {source}");
        let mut parser = tree_sitter::Parser::new();
        assert!(parser.set_language(&tree_sitter_bash::LANGUAGE.into()).is_ok());
        let tree = parser.parse(&line, None);
        let tree = tree.as_ref().map(tree_sitter::Tree::root_node);
        let command = tree.and_then(|root| root.named_child(0)).filter(|c| c.kind() == "command");
        let argument = command.and_then(|c| c.child_by_field_name("argument"));
        argument.map(|argument| word(argument, &line)).unwrap_or_else(|| Word::literal("<none>"))
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        for (source, value) in [
            ("rm", "rm"),
            ("\\rm", "rm"),
            ("'rm'", "rm"),
            ("\"rm\"", "rm"),
            ("\"r\"m", "rm"),
            ("r''m", "rm"),
            ("$'\\x72m'", "rm"),
            ("$'\\162m'", "rm"),
            ("$'r\\u006d'", "rm"),
            ("\"a\\\"b\\x\"", "a\"b\\x"),
            ("\"r\\\nm\"", "rm"),
        ] {
            let word = parse_word(source);
            assert_eq!(word.plain(), Some(value), "{source:?} gave {word:?}");
        }
    }

    #[test]
    fn expansions_globs_and_braces_are_not_plain() {
        for source in
            ["$x", "r$x", "\"$(echo rm)\"", "`echo rm`", "/bin/r?", "r*", "{rm,x}", "r{m,}", "$'\\cA'"]
        {
            assert_eq!(parse_word(source).plain(), None, "{source:?}");
        }
        // Quoted, they are only characters.
        assert_eq!(parse_word("'r*'").plain(), Some("r*"));
        assert_eq!(parse_word("\"{a,b}\"").plain(), Some("{a,b}"));
        assert_eq!(parse_word("\\*").plain(), Some("*"));
    }

    #[test]
    fn path_prefixes_stop_at_the_first_glob() {
        assert_eq!(Word::literal("src/a.rs").path_prefix(), Some("src/a.rs"));
        assert_eq!(parse_word("/tmp/x*").path_prefix(), Some("/tmp/x"));
        assert_eq!(parse_word("'/tmp/x*'y*").path_prefix(), Some("/tmp/x*y"));
        assert_eq!(parse_word("{/a,/b}").path_prefix(), None);
    }
}
