//! JavaScript's text semantics where OpenCode's behaviour depends on them: which chars are
//! white space, and regex sources compiled so that `\d`, `\s`, `.`, `\b` and case-insensitivity
//! mean exactly what they mean in JavaScript.

use std::fmt::Write as _;

/// Whether JavaScript's `parseFloat` and `String.prototype.trim` treat this char as white space.
pub(crate) fn is_js_whitespace(ch: char) -> bool {
    matches!(
        ch,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// Compiles JavaScript regex sources (flag `i`, no `u`) into one Rust regex that matches
/// where any of them matches; `None` when a source is outside the translator's subset (the
/// unit tests check that every constant list compiles).
///
/// One compilation with `regex-lite`, not one per source with `regex`: these run on a few
/// short error messages per process, where `regex`'s literal prefilters and DFAs only cost
/// time to build (twenty separate regexes took about 27 M instructions, some 6 ms of CPU, at a
/// process's first provider error).
pub(crate) fn compile_js_alternation(sources: &[&str]) -> Option<regex_lite::Regex> {
    let mut joined = String::new();
    for source in sources {
        if !joined.is_empty() {
            joined.push('|');
        }
        joined.push_str("(?:");
        joined.push_str(&translate_js_regex(source)?);
        joined.push(')');
    }
    regex_lite::Regex::new(&joined).ok()
}

/// Compiles JavaScript regex sources (flag `i`, no `u`) into equivalent `regex` regexes, one
/// each, for the tests to check [`compile_js_alternation`] against another engine; a source
/// this translator does not support is left out.
#[cfg(test)]
pub(crate) fn compile_js_patterns(sources: &[&str]) -> Vec<regex::Regex> {
    sources
        .iter()
        .filter_map(|source| translate_js_regex(source))
        .filter_map(|rust| regex::Regex::new(&rust).ok())
        .collect()
}

/// Asserts that `joined` ([`compile_js_alternation`] of `sources`) matches each of `texts`
/// exactly when one of the sources, compiled alone by `regex`, does.
#[cfg(test)]
pub(crate) fn assert_joined_agrees(sources: &[&str], joined: Option<&regex_lite::Regex>, texts: &[&str]) {
    let each = compile_js_patterns(sources);
    assert_eq!(each.len(), sources.len(), "every source compiles alone");
    let joined = joined.expect("the joined regex compiles");
    for text in texts {
        let any = each.iter().any(|regex| regex.is_match(text));
        assert_eq!(joined.is_match(text), any, "{text:?}");
    }
}

/// Chars JavaScript's `\s` matches.
const JS_SPACE: &[(char, char)] = &[
    ('\t', '\r'),
    (' ', ' '),
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{feff}', '\u{feff}'),
];
/// Chars JavaScript's `\d` matches (ASCII only, unlike Rust's Unicode `\d`).
const JS_DIGIT: &[(char, char)] = &[('0', '9')];
/// Chars JavaScript's `\w` matches.
const JS_WORD: &[(char, char)] = &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];
/// Chars JavaScript's `.` does not match.
const JS_LINE_TERMINATORS: &[(char, char)] = &[('\n', '\n'), ('\r', '\r'), ('\u{2028}', '\u{2029}')];

/// Translates an ASCII JavaScript regex source, read with flag `i` and without `u`, into a Rust
/// regex with the same meaning; `None` for syntax outside the supported subset (lookaround,
/// backreferences, `\c`/`\x`/`\u` escapes, empty classes, non-ASCII text).
///
/// Rust's Unicode `\d`, `\s`, `\b`, `.` and case folding differ from JavaScript's, so every
/// class is spelled out and letters get both ASCII cases explicitly.
fn translate_js_regex(source: &str) -> Option<String> {
    if !source.is_ascii() {
        return None;
    }
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::new();
    let mut index = 0;
    while let Some(&ch) = chars.get(index) {
        index += 1;
        match ch {
            '\\' => {
                let escaped = *chars.get(index)?;
                index += 1;
                match escaped {
                    'd' | 'D' | 's' | 'S' | 'w' | 'W' => {
                        push_class(
                            &mut out,
                            shorthand(escaped.to_ascii_lowercase())?,
                            escaped.is_ascii_uppercase(),
                        );
                    }
                    // JavaScript's word boundary uses its ASCII `\w`.
                    'b' => out.push_str(r"(?-u:\b)"),
                    'B' => out.push_str(r"(?-u:\B)"),
                    other => push_literal(&mut out, control_escape(other)?),
                }
            }
            '.' => push_class(&mut out, JS_LINE_TERMINATORS, true),
            '[' => {
                let class = parse_class(&chars, index)?;
                index = class.end;
                push_class(&mut out, &fold_ascii_case(&class.ranges), class.negated);
            }
            '(' => {
                if chars.get(index) == Some(&'?') {
                    // Only non-capturing groups; lookaround has no Rust equivalent.
                    (chars.get(index + 1) == Some(&':')).then_some(())?;
                    index += 2;
                    out.push_str("(?:");
                } else {
                    out.push('(');
                }
            }
            '{' => match quantifier_len(&chars[index..]) {
                // JavaScript without `u` reads a `{` that starts no quantifier as a literal.
                Some(len) => {
                    out.push('{');
                    out.extend(&chars[index..index + len]);
                    index += len;
                }
                None => push_literal(&mut out, '{'),
            },
            ')' | '|' | '*' | '+' | '?' | '^' | '$' => out.push(ch),
            letter if letter.is_ascii_alphabetic() => {
                push_class(&mut out, &fold_ascii_case(&[(letter, letter)]), false);
            }
            other => push_literal(&mut out, other),
        }
    }
    Some(out)
}

/// The ranges of `\d`, `\s` or `\w`.
fn shorthand(name: char) -> Option<&'static [(char, char)]> {
    match name {
        'd' => Some(JS_DIGIT),
        's' => Some(JS_SPACE),
        'w' => Some(JS_WORD),
        _ => None,
    }
}

/// The char an escape other than a class shorthand or boundary stands for.
fn control_escape(escaped: char) -> Option<char> {
    match escaped {
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'f' => Some('\u{c}'),
        'v' => Some('\u{b}'),
        '0' => Some('\0'),
        // Backreferences and the remaining letter escapes are not supported.
        other if other.is_ascii_alphanumeric() => None,
        other => Some(other),
    }
}

/// One element of a class: a char (perhaps the start of a range) or a shorthand set.
enum ClassAtom {
    Char(char),
    Set(&'static [(char, char)]),
}

/// Reads the class element at `index`, returning it and the index after it.
fn class_atom(chars: &[char], index: usize) -> Option<(ClassAtom, usize)> {
    let ch = *chars.get(index)?;
    if ch != '\\' {
        return Some((ClassAtom::Char(ch), index + 1));
    }
    let escaped = *chars.get(index + 1)?;
    let atom = match shorthand(escaped) {
        Some(set) => ClassAtom::Set(set),
        // Inside a class `\b` is a backspace.
        None if escaped == 'b' => ClassAtom::Char('\u{8}'),
        None => ClassAtom::Char(control_escape(escaped)?),
    };
    Some((atom, index + 2))
}

/// A parsed `[...]` class.
struct ParsedClass {
    /// The chars listed, before case folding.
    ranges: Vec<(char, char)>,
    /// Whether it starts with `^`.
    negated: bool,
    /// The index after its `]`.
    end: usize,
}

/// Parses a class body starting after `[`.
fn parse_class(chars: &[char], start: usize) -> Option<ParsedClass> {
    let mut index = start;
    let negated = chars.get(index) == Some(&'^');
    if negated {
        index += 1;
    }
    let mut ranges = Vec::new();
    while *chars.get(index)? != ']' {
        let (atom, next) = class_atom(chars, index)?;
        index = next;
        match atom {
            ClassAtom::Set(set) => ranges.extend_from_slice(set),
            // `a-z` is a range unless the `-` ends the class.
            ClassAtom::Char(low) if chars.get(index) == Some(&'-') && chars.get(index + 1) != Some(&']') => {
                let (ClassAtom::Char(high), next) = class_atom(chars, index + 1)? else {
                    return None;
                };
                index = next;
                (low <= high).then_some(())?;
                ranges.push((low, high));
            }
            ClassAtom::Char(low) => ranges.push((low, low)),
        }
    }
    // `[]` matches nothing in JavaScript; Rust has no empty class.
    (!ranges.is_empty()).then_some(ParsedClass { ranges, negated, end: index + 1 })
}

/// Adds the other ASCII case of every letter in the ranges (JavaScript's `i` flag without `u`
/// folds no non-ASCII char onto an ASCII one).
fn fold_ascii_case(ranges: &[(char, char)]) -> Vec<(char, char)> {
    let mut folded = ranges.to_vec();
    for &(low, high) in ranges {
        for (from, to, shift) in [('a', 'z', -32i32), ('A', 'Z', 32)] {
            let (start, end) = (low.max(from), high.min(to));
            if start <= end {
                let moved = |ch: char| char::from_u32((u32::from(ch) as i32 + shift) as u32);
                if let (Some(start), Some(end)) = (moved(start), moved(end)) {
                    folded.push((start, end));
                }
            }
        }
    }
    folded
}

/// The length of `n}`, `n,}` or `n,m}` at the start of `chars` (after a `{`), if it is one.
fn quantifier_len(chars: &[char]) -> Option<usize> {
    let digits = |from: usize| chars.iter().skip(from).take_while(|ch| ch.is_ascii_digit()).count();
    let first = digits(0);
    if first == 0 {
        return None;
    }
    let mut len = first;
    if chars.get(len) == Some(&',') {
        len += 1 + digits(len + 1);
    }
    (chars.get(len) == Some(&'}')).then_some(len + 1)
}

fn push_literal(out: &mut String, ch: char) {
    let _ = write!(out, r"\x{{{:x}}}", u32::from(ch));
}

fn push_class(out: &mut String, ranges: &[(char, char)], negated: bool) {
    out.push('[');
    if negated {
        out.push('^');
    }
    for &(low, high) in ranges {
        let _ = write!(out, r"\x{{{:x}}}", u32::from(low));
        if high != low {
            let _ = write!(out, r"-\x{{{:x}}}", u32::from(high));
        }
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider_error::NO_BODY_PATTERN;

    /// The translated source as production compiles it.
    fn js(source: &str) -> regex_lite::Regex {
        compile_js_alternation(&[source]).unwrap()
    }

    #[test]
    fn translated_regexes_mean_what_javascript_means() {
        let no_body = js(NO_BODY_PATTERN);
        assert!(no_body.is_match("400 status code (no body)"));
        assert!(no_body.is_match("413\u{a0}(No Body)"));
        assert!(no_body.is_match("400\u{feff}(no body)"));
        assert!(!no_body.is_match("x400 (no body)"));
        assert!(!no_body.is_match("400\u{85}(no body)"), "NEL is no JavaScript white space");
        let digits = js(r"maximum prompt length is \d+");
        assert!(digits.is_match("MAXIMUM PROMPT LENGTH IS 5"));
        assert!(!digits.is_match("maximum prompt length is \u{663}"), "\\d is ASCII in JavaScript");
        let dot = js(r"input token count.*exceeds the maximum");
        assert!(dot.is_match("Input Token Count (5) exceeds the maximum"));
        assert!(!dot.is_match("input token count\r exceeds the maximum"));
        assert!(!dot.is_match("input token count\u{2028} exceeds the maximum"));
        // The Kelvin sign folds onto `k` in Unicode but not in JavaScript without `u`.
        assert!(!js("token").is_match("to\u{212a}en"));
        let class = js(r"context[_ ]length[_ ]exceeded");
        assert!(class.is_match("CONTEXT_LENGTH EXCEEDED"));
        let boundary = js(r"\btry again (?:later|in\b)");
        assert!(boundary.is_match("Please TRY AGAIN later"));
        assert!(boundary.is_match("\u{e9}try again in 5s"), "\\b is an ASCII boundary");
        assert!(!boundary.is_match("retry again later"));
        assert!(!boundary.is_match("try again inside"));
        let ranges = js(r"[a-c]{2}x{1,}[^d-f]");
        assert!(ranges.is_match("ABxxG"));
        assert!(!ranges.is_match("ABxD"));
        assert!(js(r"a{").is_match("A{"));
        assert!(js(r"[-_\s]").is_match("\u{3000}"));
    }

    #[test]
    fn unsupported_syntax_is_refused() {
        for source in [r"(?=a)", r"(a)\1", r"\x41", r"\u0041", r"[]", r"é", r"[z-a]", "a\\"] {
            assert_eq!(translate_js_regex(source), None, "{source}");
        }
    }
}
