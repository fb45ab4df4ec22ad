//! The walk over a parsed command line: every node is visited (a command substitution can
//! hide in any word), commands are handed to `commands.rs`, and redirections, here-document
//! bodies and assignments are checked where they appear.
//!
//! The walk also checks the text against the places where the grammar and bash part ways: a
//! backtick or `$(` in code that the grammar did not parse as a substitution, and a
//! backslash-newline between two words (bash joins them, the grammar does not). Each node's
//! context (code, double quotes, `${...}`, a here-document, literal) is carried down the walk,
//! since asking a node for its parent costs tree-sitter a walk from the root.

use tree_sitter::{Node, Parser};

use super::words::{text, word};
use super::{Analysis, MAX_ANALYSED_BYTES, MAX_NESTED_STRINGS, MAX_TREE_DEPTH, Step, hijacks};

/// Walks one parsed string (the command line, or a string it runs) into an analysis.
pub(super) struct Walker<'a> {
    pub(super) source: &'a str,
    /// How many strings deep this one is (0: the command line itself).
    pub(super) level: usize,
    pub(super) out: &'a mut Analysis,
}

/// Parses `source` as bash and adds what it runs to `out`.
pub(super) fn analyse_source(source: &str, level: usize, out: &mut Analysis) {
    if level > MAX_NESTED_STRINGS {
        out.cannot(format!("strings run by strings are nested more than {MAX_NESTED_STRINGS} deep"));
        return;
    }
    if source.len() > MAX_ANALYSED_BYTES {
        out.cannot(format!("the command is longer than {MAX_ANALYSED_BYTES} bytes"));
        return;
    }
    let mut parser = Parser::new();
    if parser.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
        out.cannot("the bash grammar could not be loaded".into());
        return;
    }
    let Some(tree) = parser.parse(parser_safe(source).as_bytes(), None) else {
        out.cannot("the command could not be parsed".into());
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        // What did parse is still walked, so a deny rule can match the commands in it.
        out.cannot("the command does not parse as bash".into());
    }
    Walker { source, level, out }.walk(root, 0, Context::Code, None);
}

/// The text the parser reads: `source` with every character above U+00FF replaced by as many
/// `x` as it has UTF-8 bytes. tree-sitter-bash's scanner (0.25.1) hands the character after a
/// `{` to C's `isdigit`, which indexes a table of 384 entries: a higher code point reads far
/// outside it, and `{` followed by U+E0114 killed the process with SIGSEGV (any model could
/// write that command). Bash reads every non-ASCII character as a word character, as it
/// reads `x`, so the copy parses to the same tree at the same byte offsets; the walk reads the
/// words from `source`. A run of one letter is never split by the grammar, so no node ends
/// inside a replaced character.
fn parser_safe(source: &str) -> std::borrow::Cow<'_, str> {
    const HIGHEST_SAFE: char = '\u{ff}';
    if source.chars().all(|c| c <= HIGHEST_SAFE) {
        return std::borrow::Cow::Borrowed(source);
    }
    let mut copy = String::with_capacity(source.len());
    for c in source.chars() {
        match c <= HIGHEST_SAFE {
            true => copy.push(c),
            false => copy.extend(std::iter::repeat_n('x', c.len_utf8())),
        }
    }
    std::borrow::Cow::Owned(copy)
}

/// What the text inside a node is to bash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Context {
    /// Shell code.
    Code,
    /// Inside a double-quoted string.
    Quoted,
    /// Inside `${...}`.
    Expansion,
    /// Inside an unquoted here-document body (scanned on its own).
    Heredoc,
    /// Single quotes, `$'...'`, a comment, a quoted here-document: nothing there runs.
    Literal,
}

/// True when the character at `at` follows an odd number of backslashes.
fn escaped(source: &str, at: usize) -> bool {
    let before = source.get(..at).unwrap_or_default();
    before.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// True for the old form of command substitution, `` `...` ``.
fn is_backticks(node: Node<'_>) -> bool {
    node.child(0).is_some_and(|open| open.kind() == "`")
}

impl Walker<'_> {
    pub(super) fn walk(&mut self, node: Node<'_>, depth: usize, context: Context, parent: Option<Node<'_>>) {
        if depth > MAX_TREE_DEPTH {
            self.out.cannot(format!("the command is nested more than {MAX_TREE_DEPTH} levels deep"));
            return;
        }
        let inner = match node.kind() {
            "comment" | "raw_string" | "ansi_c_string" => return,
            "command" => {
                self.command(node, parent);
                context
            }
            "command_substitution" if is_backticks(node) => {
                // Inside backticks a backslash quotes `$`, `` ` `` and `\\`, so nested
                // backticks are substitutions too: bash reads the body again, and so does this.
                self.backticks(node, context == Context::Quoted);
                return;
            }
            "command_substitution" | "process_substitution" | "arithmetic_expansion" => Context::Code,
            "string" => Context::Quoted,
            "expansion" => {
                self.expansion(node);
                Context::Expansion
            }
            "heredoc_redirect" => self.heredoc(node),
            "file_redirect" => {
                self.redirect(node);
                context
            }
            "variable_assignment" => {
                self.assignment(node, parent);
                context
            }
            "declaration_command" => {
                self.declaration(node);
                context
            }
            _ => context,
        };
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        if children.is_empty() {
            self.leaf(node, context);
            return;
        }
        let mut gap_start = node.start_byte();
        for child in children {
            self.gap(gap_start, child.start_byte(), inner);
            gap_start = child.end_byte();
            self.walk(child, depth + 1, inner, Some(node));
        }
        self.gap(gap_start, node.end_byte(), inner);
    }

    /// A token: a backtick or `$(` in its text is a substitution the grammar did not parse.
    fn leaf(&mut self, node: Node<'_>, context: Context) {
        if !node.is_named() || matches!(context, Context::Heredoc | Context::Literal) {
            // Anonymous tokens are the substitutions' own brackets; here-documents are
            // scanned where they start.
            return;
        }
        let start = node.start_byte();
        for (offset, c) in text(node, self.source).char_indices() {
            let at = start + offset;
            let opens = match c {
                // Backticks in `${...}` are scanned by `expansion`.
                '`' => context != Context::Expansion,
                '$' => self.source.get(at + 1..).is_some_and(|rest| rest.starts_with('(')),
                _ => false,
            };
            if opens && !escaped(self.source, at) {
                self.out.cannot("a command substitution is not where the grammar expects one".into());
                return;
            }
        }
    }

    /// The text between two tokens: a line continuation there between two non-blank
    /// characters joins them in bash (`r\⏎m` is `rm`), while the grammar split them.
    fn gap(&mut self, start: usize, end: usize, context: Context) {
        if !matches!(context, Context::Code | Context::Expansion) {
            return;
        }
        let Some(gap) = self.source.get(start..end) else { return };
        for (offset, _) in gap.match_indices("\\\n") {
            let at = start + offset;
            let blank = |c: Option<char>| c.is_none_or(|c| matches!(c, ' ' | '\t' | '\n'));
            let before = self.source.get(..at).and_then(|text| text.chars().last());
            let after = self.source.get(at + 2..).and_then(|text| text.chars().next());
            if !escaped(self.source, at) && !blank(before) && !blank(after) {
                self.out.cannot(
                    "a backslash-newline joins two words, which the grammar reads as separate".into(),
                );
                return;
            }
        }
    }

    /// Analyses a string the command line runs (`bash -c`, `eval`, a literal heredoc, ...).
    pub(super) fn nested(&mut self, source: &str) {
        analyse_source(source, self.level + 1, self.out);
    }

    /// A redirection that writes a file becomes a [`Step::Write`]; fd duplications (`2>&1`),
    /// reads and process substitutions do not.
    fn redirect(&mut self, node: Node<'_>) {
        let Some(operator) = operator(node, self.source) else { return };
        let Some(target) = node.child_by_field_name("destination") else { return };
        let writes = match operator {
            ">" | ">>" | "&>" | "&>>" | ">|" => true,
            // `>&word` with a word that is not a descriptor writes stdout and stderr to it.
            ">&" => {
                let value = word(target, self.source);
                !(target.kind() == "number"
                    || value
                        .value
                        .as_deref()
                        .is_some_and(|v| v == "-" || v.chars().all(|c| c.is_ascii_digit())))
            }
            _ => false,
        };
        if !writes || target.kind() == "process_substitution" {
            return;
        }
        let target = word(target, self.source);
        match target.path_prefix() {
            Some(path) if harmless_device(path) => {}
            Some(path) => self.out.steps.push(Step::Write { path: path.to_owned() }),
            None => self
                .out
                .cannot(format!("a redirection writes to `{}`, which is not a static path", target.raw)),
        }
    }

    /// A here-document: an unquoted body expands `$(...)` (walked as nodes) and backticks,
    /// which the grammar leaves in the text and which are found here. Returns the context
    /// of the redirect's children.
    fn heredoc(&mut self, redirect: Node<'_>) -> Context {
        if heredoc_is_quoted(redirect, self.source) {
            return Context::Literal;
        }
        let mut cursor = redirect.walk();
        let body = redirect.children(&mut cursor).find(|child| child.kind() == "heredoc_body");
        if let Some(body) = body {
            let masked = masked_text(body, self.source);
            if masked.contains("$(") {
                self.out
                    .cannot("a here-document has a command substitution the grammar did not parse".into());
            }
            self.backtick_bodies(&masked, "a here-document");
        }
        Context::Heredoc
    }

    /// `${x:-`cmd`}`: the grammar leaves backticks in a parameter expansion unparsed.
    fn expansion(&mut self, node: Node<'_>) {
        let masked = masked_text(node, self.source);
        if masked.contains("@P") {
            self.out.cannot("`${var@P}` runs the command substitutions in a variable's value".into());
        }
        self.backtick_bodies(&masked, "a parameter expansion");
    }

    fn backtick_bodies(&mut self, masked: &str, place: &str) {
        match backtick_bodies(masked) {
            Some(bodies) => bodies.iter().for_each(|body| self.nested(body)),
            None => self.out.cannot(format!("{place} has an unterminated backtick")),
        }
    }

    /// A `` `...` `` substitution: its body, unescaped as bash does, analysed as a string.
    fn backticks(&mut self, node: Node<'_>, in_double_quotes: bool) {
        let raw = text(node, self.source);
        let Some(body) = raw.strip_prefix('`').and_then(|rest| rest.strip_suffix('`')) else {
            self.out.cannot("a backtick substitution is not closed".into());
            return;
        };
        self.nested(&unescape_backticks(body, in_double_quotes));
    }

    fn assignment(&mut self, node: Node<'_>, parent: Option<Node<'_>>) {
        let name = assigned_name(node, self.source);
        if hijacks(name) {
            self.out.cannot(format!("it sets {name}, which changes what later commands run"));
        }
        if let Some(value) = node.child_by_field_name("value")
            && let Some(value) = word(value, self.source).value
            && (value.contains("$(") || value.contains('`'))
        {
            // Arithmetic on the variable, `${x@P}` or an `eval` elsewhere would run it.
            self.out.cannot(format!("it assigns text that bash could run as a command to {name}"));
        }
        let standalone =
            parent.is_none_or(|parent| !matches!(parent.kind(), "command" | "declaration_command"));
        if standalone && environment_name(name) {
            let words = vec![self.assignment_text(node)];
            self.out.steps.push(Step::Environment { words });
        }
    }

    /// `export`, `declare`, `typeset`, `local`, `readonly`: an environment change when it
    /// exports (`export`, `-x`) or names an all-capitals variable. `declare -n`/`local -n`
    /// make a name stand for another variable, which hides what a later assignment sets.
    fn declaration(&mut self, node: Node<'_>) {
        let keyword = node.child(0).map(|child| text(child, self.source)).unwrap_or_default();
        let mut words = vec![keyword.to_owned()];
        let (mut exports, mut environment, mut nameref) = (keyword == "export", false, false);
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => {
                    environment |= environment_name(assigned_name(child, self.source));
                    words.push(self.assignment_text(child));
                }
                "variable_name" => {
                    environment |= environment_name(text(child, self.source));
                    words.push(text(child, self.source).to_owned());
                }
                _ => {
                    let option = word(child, self.source);
                    if let Some(flags) = option.text().strip_prefix('-') {
                        exports |= flags.contains('x');
                        nameref |= flags.contains('n') && keyword != "export";
                    }
                    words.push(option.text().to_owned());
                }
            }
        }
        if nameref {
            self.out.cannot(format!("`{keyword} -n` makes a variable name stand for another"));
        }
        if exports || environment {
            self.out.steps.push(Step::Environment { words });
        }
    }
}

/// The variable an assignment sets (`a` for `a[1]=x`).
fn assigned_name<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    let name = node.child_by_field_name("name").map(|name| text(name, source)).unwrap_or_default();
    name.split('[').next().unwrap_or_default()
}

/// All capitals (digits and `_` allowed): by convention an environment variable, which may be
/// exported already, so setting it reaches the commands after it.
fn environment_name(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase()) && !name.chars().any(|c| c.is_ascii_lowercase())
}

/// The operator token of a redirection (`>`, `>>`, `>&`, ...).
pub(super) fn operator<'s>(node: Node<'_>, source: &'s str) -> Option<&'s str> {
    let mut cursor = node.walk();
    let mut children = node.children(&mut cursor);
    children.find(|child| !child.is_named()).map(|child| text(child, source))
}

/// Device files that a redirection may name without writing a file.
fn harmless_device(path: &str) -> bool {
    matches!(path, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty") || path.starts_with("/dev/fd/")
}

/// True when the here-document's delimiter is quoted (`<<'EOF'`, `<<"EOF"`, `<<\EOF`): its
/// body is then taken literally.
pub(super) fn heredoc_is_quoted(redirect: Node<'_>, source: &str) -> bool {
    let mut cursor = redirect.walk();
    let start = redirect.children(&mut cursor).find(|child| child.kind() == "heredoc_start");
    start.is_some_and(|start| text(start, source).contains(['\'', '"', '\\']))
}

/// The text of a node with its nested substitutions, quotes and expansions blanked out
/// (they are walked, or literal, on their own): what is left is the node's own text.
fn masked_text(node: Node<'_>, source: &str) -> String {
    let start = node.start_byte();
    let mut masked = text(node, source).as_bytes().to_vec();
    let mut stack = Vec::new();
    let mut cursor = node.walk();
    stack.extend(node.named_children(&mut cursor));
    while let Some(child) = stack.pop() {
        if matches!(
            child.kind(),
            "command_substitution"
                | "process_substitution"
                | "arithmetic_expansion"
                | "expansion"
                | "raw_string"
                | "ansi_c_string"
        ) {
            let range = child.start_byte().saturating_sub(start)..child.end_byte().saturating_sub(start);
            if let Some(bytes) = masked.get_mut(range) {
                bytes.fill(b' ');
            }
        } else {
            let mut cursor = child.walk();
            stack.extend(child.named_children(&mut cursor));
        }
    }
    // Blanking whole nodes keeps the text valid UTF-8; lossy only guards against surprises.
    String::from_utf8_lossy(&masked).into_owned()
}

/// Removes the backslashes that quote `$`, `` ` `` and `\` (and `"` inside double quotes)
/// in the body of a backtick substitution, as bash does before running it.
fn unescape_backticks(body: &str, in_double_quotes: bool) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(next @ ('`' | '$' | '\\')) => out.push(next),
            Some('"') if in_double_quotes => out.push('"'),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The bodies of the backtick substitutions in text the grammar left unparsed (unescaped
/// as bash does); `None` when a backtick is not closed.
fn backtick_bodies(text: &str) -> Option<Vec<String>> {
    let mut bodies = Vec::new();
    let mut chars = text.chars();
    let mut current: Option<String> = None;
    while let Some(c) = chars.next() {
        match (c, current.as_mut()) {
            ('\\', None) => {
                chars.next();
            }
            ('\\', Some(body)) => {
                // Kept escaped here; unescaped once the body is complete.
                body.push('\\');
                body.extend(chars.next());
            }
            ('`', None) => current = Some(String::new()),
            ('`', Some(_)) => bodies.extend(current.take().map(|body| unescape_backticks(&body, false))),
            (c, Some(body)) => body.push(c),
            (_, None) => {}
        }
    }
    current.is_none().then_some(bodies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backticks_in_heredoc_text() {
        assert_eq!(backtick_bodies("a `rm x` b `ls`"), Some(vec!["rm x".to_owned(), "ls".to_owned()]));
        assert_eq!(backtick_bodies("a \\`not\\` b"), Some(vec![]));
        assert_eq!(backtick_bodies("`echo \\`x\\``"), Some(vec!["echo `x`".to_owned()]));
        assert_eq!(backtick_bodies("a `open"), None);
    }

    #[test]
    fn the_parser_reads_high_characters_as_letters_at_the_same_offsets() {
        assert!(matches!(parser_safe("rm -rf 'café' ÿ"), std::borrow::Cow::Borrowed(_)));
        let source = "rm {\u{e0114} 修复.txt 🕴";
        let safe = parser_safe(source);
        assert_eq!(safe, "rm {xxxx xxxxxx.txt xxxx");
        assert_eq!(safe.len(), source.len());
        for (at, _) in source.char_indices() {
            assert!(safe.is_char_boundary(at));
        }
    }
}
