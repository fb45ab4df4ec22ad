//! The `question` tool's questions on the terminal of `session run`: each question with its
//! numbered options, one number (several for a multiple-choice question) or a typed answer of
//! one's own; an empty line dismisses the request. Only a run whose stdin and stderr are a
//! terminal offers the tool; any other run dismisses a question at once (a continued session
//! may allow the tool), since nobody is there to answer.

use std::collections::VecDeque;
use std::io::{BufRead, Write};

use session_runtime::BusEvent;
use session_runtime::questions::{QuestionAnswer, QuestionPrompt, QuestionRequest};

use crate::terminal::clean as strip_controls;

/// What one typed line means for a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    /// Nothing typed: the request is dismissed.
    Dismiss,
    /// The answer: picked labels, or the typed text.
    Answer(QuestionAnswer),
    /// The typed-answer row was picked: the next line is the answer.
    Type,
}

/// A question as the terminal shows it.
pub(crate) fn question_text(prompt: &QuestionPrompt, index: usize, total: usize) -> String {
    let count = if total > 1 { format!(" ({}/{total})", index + 1) } else { String::new() };
    let mut text = format!(
        "question{count}: {}: {}\n",
        strip_controls(&prompt.header),
        strip_controls(&prompt.question)
    );
    for (i, option) in prompt.options.iter().enumerate() {
        text.push_str(&format!(
            "  {}. {} - {}\n",
            i + 1,
            strip_controls(&option.label),
            strip_controls(&option.description)
        ));
    }
    text.push_str(&format!("  {}. Type your own answer\n", prompt.options.len() + 1));
    text.push_str(match prompt.is_multiple() {
        true => "  numbers (several: 1,3), your own answer, or Enter to dismiss: ",
        false => "  a number, your own answer, or Enter to dismiss: ",
    });
    text
}

/// What `line` answers to `prompt`: numbers pick options (several only when the question
/// allows it), the number after the options asks for a typed answer, anything else is the
/// answer itself.
pub(crate) fn parse_choice(line: &str, prompt: &QuestionPrompt) -> Choice {
    let line = line.trim();
    if line.is_empty() {
        return Choice::Dismiss;
    }
    let numbers: Option<Vec<usize>> = line
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|token| !token.is_empty())
        .map(|token| token.parse::<usize>().ok())
        .collect();
    let options = prompt.options.len();
    match numbers {
        Some(numbers) if numbers == [options + 1] => Choice::Type,
        Some(numbers)
            if numbers.iter().all(|&n| (1..=options).contains(&n))
                && (numbers.len() == 1 || prompt.is_multiple()) =>
        {
            let mut picked: Vec<usize> = numbers;
            picked.sort_unstable();
            picked.dedup();
            Choice::Answer(picked.into_iter().map(|n| prompt.options[n - 1].label.clone()).collect())
        }
        _ => Choice::Answer(vec![line.to_owned()]),
    }
}

/// Asks every question of `request` on `output`, reading lines from `input`; `None` when the
/// user dismissed it (or the input ended).
pub(crate) fn ask(
    request: &QuestionRequest,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> std::io::Result<Option<Vec<QuestionAnswer>>> {
    let total = request.questions.len();
    let mut answers = Vec::with_capacity(total);
    for (index, prompt) in request.questions.iter().enumerate() {
        write!(output, "{}", question_text(prompt, index, total))?;
        output.flush()?;
        let mut line = String::new();
        input.read_line(&mut line)?;
        let answer = match parse_choice(&line, prompt) {
            Choice::Dismiss => return Ok(None),
            Choice::Answer(answer) => answer,
            Choice::Type => {
                write!(output, "  your answer: ")?;
                output.flush()?;
                let mut typed = String::new();
                input.read_line(&mut typed)?;
                let typed = typed.trim();
                if typed.is_empty() { Vec::new() } else { vec![typed.to_owned()] }
            }
        };
        answers.push(answer);
    }
    Ok(Some(answers))
}

/// Takes `question.*` events out of the run's event stream: asks queue up in `due` (or are
/// dismissed at once when nobody can answer), and a withdrawn one leaves the queue. True when
/// the event was a question asked (nothing to show for it).
pub(crate) fn route(
    event: &BusEvent,
    due: &mut VecDeque<QuestionRequest>,
    on_terminal: bool,
    runtime: &session_runtime::Runtime,
) -> bool {
    match event {
        BusEvent::QuestionAsked(request) if on_terminal => {
            due.push_back(request.as_ref().clone());
            true
        }
        BusEvent::QuestionAsked(request) => {
            let _ = runtime.reject_question(&request.id);
            true
        }
        BusEvent::QuestionRejected { request_id, .. } => {
            due.retain(|request| &request.id != request_id);
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use session_core::{QuestionId, SessionId};
    use session_runtime::questions::QuestionOption;

    use super::*;

    fn prompt(multiple: bool) -> QuestionPrompt {
        QuestionPrompt {
            question: "Which colour?".into(),
            header: "Colour".into(),
            options: ["Red", "Green", "Blue"]
                .iter()
                .map(|l| QuestionOption { label: (*l).into(), description: format!("{l}!") })
                .collect(),
            multiple: multiple.then_some(true),
        }
    }

    fn labels(items: &[&str]) -> Choice {
        Choice::Answer(items.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn numbers_pick_options_and_text_is_an_answer() {
        let single = prompt(false);
        assert_eq!(parse_choice("2\n", &single), labels(&["Green"]));
        assert_eq!(parse_choice("1,3", &single), labels(&["1,3"]), "one pick only: the text itself");
        assert_eq!(parse_choice("4", &single), Choice::Type);
        assert_eq!(parse_choice("  ", &single), Choice::Dismiss);
        assert_eq!(parse_choice("purple please", &single), labels(&["purple please"]));
        assert_eq!(parse_choice("9", &single), labels(&["9"]));
        let multiple = prompt(true);
        assert_eq!(parse_choice("3, 1 3", &multiple), labels(&["Red", "Blue"]));
    }

    #[test]
    fn a_request_is_asked_question_by_question() {
        let request = QuestionRequest {
            id: QuestionId::new_unchecked("que_1"),
            session_id: SessionId::new_unchecked("ses_1"),
            questions: vec![prompt(true), prompt(false)],
            tool: None,
        };
        let mut shown = Vec::new();
        let answers = ask(&request, &mut "1 2\n4\nteal\n".as_bytes(), &mut shown).unwrap();
        assert_eq!(answers, Some(vec![vec!["Red".to_owned(), "Green".to_owned()], vec!["teal".to_owned()]]));
        let shown = String::from_utf8(shown).unwrap();
        assert!(shown.contains("question (1/2): Colour: Which colour?\n  1. Red - Red!\n"), "{shown}");
        assert!(shown.contains("  4. Type your own answer\n") && shown.contains("your answer: "), "{shown}");
        assert_eq!(ask(&request, &mut "\n".as_bytes(), &mut Vec::new()).unwrap(), None);
        assert_eq!(ask(&request, &mut "".as_bytes(), &mut Vec::new()).unwrap(), None, "input ended");
    }

    #[test]
    fn escape_sequences_in_a_question_never_reach_the_terminal() {
        let mut hostile = prompt(false);
        hostile.question = "Which?\u{1b}]0;pwned\u{7}\u{1b}[2J".into();
        hostile.header = "\u{1b}[31mColour".into();
        hostile.options[0].label = "Red\u{1b}[8m".into();
        hostile.options[0].description = "\u{9b}31mred".into();
        let request = QuestionRequest {
            id: QuestionId::new_unchecked("que_1"),
            session_id: SessionId::new_unchecked("ses_1"),
            questions: vec![hostile],
            tool: None,
        };
        let mut shown = Vec::new();
        ask(&request, &mut "2\n".as_bytes(), &mut shown).unwrap();
        let shown = String::from_utf8(shown).unwrap();
        assert!(!shown.contains(['\u{1b}', '\u{7}', '\u{9b}']), "{shown:?}");
        assert!(shown.contains("Which?") && shown.contains("Green"), "{shown}");
    }
}
