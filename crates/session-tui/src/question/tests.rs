use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use session_core::{QuestionId, SessionId};
use session_runtime::BusEvent;
use session_runtime::questions::{QuestionOption, QuestionPrompt};

use super::*;
use crate::app::{App, Effect};

fn prompt(question: &str, multiple: bool) -> QuestionPrompt {
    QuestionPrompt {
        question: question.to_owned(),
        header: "Pick".to_owned(),
        options: ["Red", "Green", "Blue"]
            .iter()
            .map(|label| QuestionOption { label: (*label).to_owned(), description: format!("{label} it is") })
            .collect(),
        multiple: multiple.then_some(true),
    }
}

fn dialog(questions: Vec<QuestionPrompt>) -> QuestionDialog {
    QuestionDialog::new(QuestionRequest {
        id: QuestionId::new_unchecked("que_1"),
        session_id: SessionId::new_unchecked("ses_1"),
        questions,
        tool: None,
    })
}

fn press(dialog: &mut QuestionDialog, code: KeyCode) -> Outcome {
    dialog.key(&KeyEvent::new(code, KeyModifiers::NONE))
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn a_number_answers_a_single_choice_question_and_moves_on() {
    let mut d = dialog(vec![prompt("Colour?", false), prompt("Another?", false)]);
    assert_eq!(press(&mut d, KeyCode::Char('2')), Outcome::Pending);
    assert_eq!(d.index, 1);
    press(&mut d, KeyCode::Down);
    assert_eq!(
        press(&mut d, KeyCode::Enter),
        Outcome::Answered(vec![strings(&["Green"]), strings(&["Green"])])
    );
}

#[test]
fn a_multiple_choice_question_collects_picks_in_option_order() {
    let mut d = dialog(vec![prompt("Colours?", true)]);
    press(&mut d, KeyCode::Char('3'));
    press(&mut d, KeyCode::Char('1'));
    press(&mut d, KeyCode::Char('3'));
    press(&mut d, KeyCode::Char('2'));
    // Space toggles the highlighted option (Green, the last one numbered): off again.
    press(&mut d, KeyCode::Char(' '));
    assert_eq!(press(&mut d, KeyCode::Enter), Outcome::Answered(vec![strings(&["Red"])]));
}

#[test]
fn a_typed_answer_goes_with_the_picks() {
    let mut d = dialog(vec![prompt("Colours?", true)]);
    press(&mut d, KeyCode::Char('1'));
    press(&mut d, KeyCode::Char('4'));
    assert!(d.typing.is_some());
    for c in "teal".chars() {
        press(&mut d, KeyCode::Char(c));
    }
    assert_eq!(press(&mut d, KeyCode::Enter), Outcome::Answered(vec![strings(&["Red", "teal"])]));

    let mut single = dialog(vec![prompt("Colour?", false)]);
    for _ in 0..5 {
        press(&mut single, KeyCode::Down);
    }
    press(&mut single, KeyCode::Enter);
    press(&mut single, KeyCode::Char('x'));
    press(&mut single, KeyCode::Backspace);
    assert_eq!(press(&mut single, KeyCode::Enter), Outcome::Answered(vec![Vec::new()]), "empty: unanswered");
}

#[test]
fn esc_leaves_typing_then_dismisses() {
    let mut d = dialog(vec![prompt("Colour?", false)]);
    press(&mut d, KeyCode::Char('4'));
    assert_eq!(press(&mut d, KeyCode::Esc), Outcome::Pending);
    assert!(d.typing.is_none());
    assert_eq!(press(&mut d, KeyCode::Esc), Outcome::Dismissed);
}

#[test]
fn the_app_opens_answers_and_closes_dialogs_from_the_bus() {
    let transcript =
        crate::transcript::Transcript::new(crate::fixtures::session_id(), crate::fixtures::root());
    let mut app = App::new(Theme { color: false }, transcript, crate::app::Status::default());
    let request = dialog(vec![prompt("Colour?", false)]).request;
    assert!(app.bus(&BusEvent::QuestionAsked(Box::new(request.clone()))));
    assert_eq!(app.questions.len(), 1);
    let effects = app.key(KeyEvent::new(KeyCode::Char('1'), KeyModifiers::NONE), std::path::Path::new("."));
    assert_eq!(effects, [Effect::ReplyQuestion { id: request.id.clone(), answers: vec![strings(&["Red"])] }]);
    assert!(app.questions.is_empty());

    app.bus(&BusEvent::QuestionAsked(Box::new(request.clone())));
    let effects = app.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE), std::path::Path::new("."));
    assert_eq!(effects, [Effect::RejectQuestion(request.id.clone())]);

    // Withdrawn (the run was interrupted): the dialog closes.
    app.bus(&BusEvent::QuestionAsked(Box::new(request.clone())));
    let withdrawn =
        BusEvent::QuestionRejected { session_id: request.session_id.clone(), request_id: request.id };
    assert!(app.bus(&withdrawn));
    assert!(app.questions.is_empty());
}

#[test]
fn escape_sequences_in_a_question_never_reach_the_screen() {
    let mut hostile = prompt("Which?\u{1b}]0;pwned\u{7}\u{1b}[2J", false);
    hostile.header = "\u{1b}[31mPick".to_owned();
    hostile.options[0].label = "Red\u{1b}[8m".to_owned();
    hostile.options[0].description = "\u{9b}31mred".to_owned();
    let shown = dialog(vec![hostile]);
    let text: String = shown
        .lines(&crate::theme::Theme { color: false }, 80, 0)
        .iter()
        .flat_map(|line| line.spans.iter().map(|span| span.content.to_string()))
        .collect();
    assert!(!text.contains(['\u{1b}', '\u{7}', '\u{9b}']), "{text:?}");
    assert!(text.contains("Which?") && text.contains("Red"), "{text:?}");
}
