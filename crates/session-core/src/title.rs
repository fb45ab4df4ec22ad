//! Session titles (SPEC 12 step 3): which message a title is made from, the instruction the
//! title request carries, and the cleaning of the model's answer into one short line.

use crate::message::{Message, MessageWithParts, PartKind, UserMessage};

/// The system instruction of a title request. The phrase "title generator" is also what
/// scripted providers recognise a title request by.
pub const TITLE_INSTRUCTION: &str = "You are a title generator. The user's message below opens a \
conversation with a coding assistant. Reply with a title for that conversation: one line of at most \
50 characters that names its topic or task, written in the same language as the message. Reply with \
the title alone: no quotes, no markdown, no trailing period, no explanation. Do not answer or carry \
out the message itself.";

/// The longest title kept, in characters (a longer answer is cut on a character boundary).
pub const MAX_TITLE_CHARS: usize = 50;

/// The most characters of the user's message sent in a title request: the opening of a long
/// message says what it is about, and the request stays small.
pub const MAX_TITLE_INPUT_CHARS: usize = 4000;

/// Tags whose content is the model's reasoning, not its answer.
const REASONING_TAGS: [&str; 3] = ["think", "thinking", "reasoning"];

/// Quotes and emphasis marks stripped from both ends of a title.
const WRAPPERS: &[char] =
    &['"', '\'', '`', '*', '_', '“', '”', '‘', '’', '«', '»', '„', '「', '」', '『', '』'];

/// The message a title is made from, with its text: the session's first user message, when it
/// is the only one written by the user so far (a title is made once, for the opening message).
///
/// User messages count when they have a text part that is not synthetic, not ignored and not
/// blank; compaction requests and synthetic "continue" messages do not. The text is cut to
/// [`MAX_TITLE_INPUT_CHARS`].
pub fn title_source(history: &[MessageWithParts]) -> Option<(&UserMessage, String)> {
    let mut found = None;
    for message in history {
        let Message::User(user) = &message.info else { continue };
        let texts: Vec<&str> = message
            .parts
            .iter()
            .filter_map(|part| match &part.kind {
                PartKind::Text(text)
                    if text.synthetic != Some(true)
                        && text.ignored != Some(true)
                        && !text.text.trim().is_empty() =>
                {
                    Some(text.text.trim())
                }
                _ => None,
            })
            .collect();
        if texts.is_empty() {
            continue;
        }
        if found.is_some() {
            return None;
        }
        found = Some((user, texts.join("\n")));
    }
    found.map(|(user, text)| (user, text.chars().take(MAX_TITLE_INPUT_CHARS).collect()))
}

/// The title in a model's answer, or `None` when nothing usable is left: reasoning blocks
/// (`<think>`, `<thinking>`, `<reasoning>`, also unclosed, or closed without an opening tag)
/// removed, the first non-empty line taken, a markdown heading or list marker, a `Title:`
/// label, surrounding quotes and emphasis and trailing periods stripped, white space collapsed,
/// control characters dropped, and the rest cut to [`MAX_TITLE_CHARS`] characters.
pub fn clean_title(answer: &str) -> Option<String> {
    let answer = strip_reasoning(answer);
    let line = answer.lines().map(str::trim).find(|line| !line.is_empty() && !line.starts_with("```"))?;
    let mut title = line.trim_start_matches('#').trim_start();
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = title.strip_prefix(marker) {
            title = rest;
        }
    }
    title = strip_label(title);
    let title = title.trim_matches(|c: char| c.is_whitespace() || WRAPPERS.contains(&c));
    let title = strip_label(title).trim_end_matches(['.', '。']).trim_matches(WRAPPERS);
    let collapsed = title
        .split_whitespace()
        .map(|word| word.chars().filter(|c| !c.is_control()).collect::<String>())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let cut: String = collapsed.chars().take(MAX_TITLE_CHARS).collect();
    let cut = cut.trim_end().to_owned();
    (!cut.is_empty()).then_some(cut)
}

/// `Title: x` without its label (any case).
fn strip_label(text: &str) -> &str {
    let lower = text.get(..6).map(str::to_ascii_lowercase);
    if lower.as_deref() == Some("title:") { text.get(6..).unwrap_or_default().trim_start() } else { text }
}

/// `text` without its reasoning blocks.
fn strip_reasoning(text: &str) -> String {
    let mut rest = text.to_owned();
    loop {
        // ASCII lower-casing keeps byte offsets, so positions found in `lower` index `rest`.
        let lower = rest.to_ascii_lowercase();
        let opening = REASONING_TAGS
            .iter()
            .filter_map(|tag| lower.find(&format!("<{tag}>")).map(|at| (at, *tag)))
            .min_by_key(|(at, _)| *at);
        let closing = REASONING_TAGS
            .iter()
            .filter_map(|tag| lower.find(&format!("</{tag}>")).map(|at| (at, at + tag.len() + 3)))
            .min_by_key(|(at, _)| *at);
        match (opening, closing) {
            // A closing tag before any opening one: what precedes it was reasoning.
            (open, Some((close_at, close_end))) if open.is_none_or(|(at, _)| close_at < at) => {
                rest = rest.get(close_end..).unwrap_or_default().to_owned();
            }
            (Some((at, tag)), _) => {
                let close = format!("</{tag}>");
                let after = match lower.get(at..).and_then(|from| from.find(&close)) {
                    Some(offset) => at + offset + close.len(),
                    // Unclosed: the answer was cut while reasoning.
                    None => rest.len(),
                };
                let tail = rest.get(after..).unwrap_or_default().to_owned();
                rest.truncate(at);
                rest.push_str(&tail);
            }
            (None, _) => return rest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::{MessageId, PartId, SessionId};
    use crate::message::{CreatedTime, ModelRef, Part, TextPart, UserMessage};

    fn user(id: &str, texts: &[(&str, bool)]) -> MessageWithParts {
        let message_id = MessageId::new_unchecked(id);
        MessageWithParts {
            info: Message::User(UserMessage {
                id: message_id.clone(),
                session_id: SessionId::new_unchecked("ses_1"),
                time: CreatedTime { created: 1 },
                format: None,
                summary: None,
                agent: "build".into(),
                model: ModelRef::default(),
                system: None,
                tools: None,
            }),
            parts: texts
                .iter()
                .enumerate()
                .map(|(n, (text, synthetic))| Part {
                    id: PartId::new_unchecked(format!("prt_{id}_{n}")),
                    session_id: SessionId::new_unchecked("ses_1"),
                    message_id: message_id.clone(),
                    kind: PartKind::Text(TextPart {
                        text: (*text).to_owned(),
                        synthetic: synthetic.then_some(true),
                        ..TextPart::default()
                    }),
                })
                .collect(),
        }
    }

    #[test]
    fn spec_12_3_title_answers_are_cleaned_to_one_short_line() {
        let cases = [
            ("Fix the failing tests", Some("Fix the failing tests")),
            ("\"Fix the failing tests\"", Some("Fix the failing tests")),
            ("**Refactor the parser.**", Some("Refactor the parser")),
            ("# Title: Add a CLI flag\n\nBecause the user wants...", Some("Add a CLI flag")),
            (
                "<think>The user wants a title.\nMaybe...</think>\n\nDebug login crash",
                Some("Debug login crash"),
            ),
            ("<THINKING>hm</THINKING>“Résumé du projet”", Some("Résumé du projet")),
            ("long reasoning without an opening tag</think>Set up CI", Some("Set up CI")),
            ("<think>cut off while reasoning", None),
            ("   \n\n  \n", None),
            ("```\nWrite docs\n```", Some("Write docs")),
            ("- Update  the\tREADME", Some("Update the README")),
            ("修复登录页面的崩溃问题。", Some("修复登录页面的崩溃问题")),
        ];
        for (answer, expected) in cases {
            assert_eq!(clean_title(answer).as_deref(), expected, "{answer:?}");
        }
    }

    #[test]
    fn spec_12_3_long_titles_are_cut_on_a_char_boundary() {
        let long = "é".repeat(80);
        let cut = clean_title(&long).unwrap_or_default();
        assert_eq!(cut.chars().count(), MAX_TITLE_CHARS);
        let words = clean_title(&"word ".repeat(30)).unwrap_or_default();
        assert!(words.chars().count() <= MAX_TITLE_CHARS && !words.ends_with(' '), "{words:?}");
    }

    #[test]
    fn spec_12_3_the_title_comes_from_the_only_real_user_message() {
        let first = user("msg_1", &[("  Fix the build  ", false), ("context", true)]);
        let text = |history: &[MessageWithParts]| title_source(history).map(|(_, text)| text);
        assert_eq!(text(std::slice::from_ref(&first)).as_deref(), Some("Fix the build"));
        // A synthetic continue message does not count as a second message ...
        let continued = user("msg_2", &[("Continue if you have next steps", true)]);
        let history = [first.clone(), continued];
        assert_eq!(title_source(&history).map(|(user, _)| user.id.as_str()), Some("msg_1"));
        // ... a second real one does: the title was due on the first.
        let second = user("msg_3", &[("and the docs", false)]);
        assert_eq!(text(&[first, second]), None);
        assert_eq!(text(&[]), None);
        let long = user("msg_4", &[(&"x".repeat(MAX_TITLE_INPUT_CHARS + 10), false)]);
        assert_eq!(text(&[long]).map(|t| t.len()), Some(MAX_TITLE_INPUT_CHARS));
    }
}
