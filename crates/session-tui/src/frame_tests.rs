//! Snapshots of whole frames on ratatui's `TestBackend`, and the keys' effects.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use session_core::permission::{PermissionAsk, PermissionRequest};
use session_core::{Message, PermissionId};
use session_runtime::BusEvent;
use session_runtime::sessions::SessionStatus;

use crate::app::{App, Effect, PendingAsk, PickerItem, PickerKind, Status};
use crate::fixtures::{self, NOW};
use crate::theme::Theme;
use crate::transcript::Transcript;

fn status() -> Status {
    Status {
        model: "mock/m".to_owned(),
        context_limit: Some(32_000),
        agent: "build".to_owned(),
        title: "Fix the answer".to_owned(),
        state: Some(SessionStatus::Idle),
        flash: None,
    }
}

fn app(history: Vec<session_core::MessageWithParts>) -> App {
    let mut transcript = Transcript::new(fixtures::session_id(), fixtures::root());
    transcript.load(history, None);
    App::new(Theme { color: false }, transcript, status())
}

fn frame(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| crate::view::draw(f, app, NOW)).unwrap();
    terminal.backend().to_string()
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        app.key(key(KeyCode::Char(c)), &fixtures::root());
    }
}

#[test]
fn an_empty_session() {
    let mut app = app(Vec::new());
    insta::assert_snapshot!(frame(&mut app, 80, 12));
}

#[test]
fn a_streamed_answer_with_markdown_and_code() {
    let mut app = app(vec![fixtures::user(1, "How does it work?")]);
    let info = Message::Assistant(fixtures::assistant_info(2, 1, rust_decimal::Decimal::ZERO));
    app.bus(&BusEvent::MessageUpdated { info: Box::new(info) });
    app.bus(&BusEvent::SessionStatus { session_id: fixtures::session_id(), status: SessionStatus::Busy });
    let part = fixtures::part(2, 0, fixtures::text_kind(""));
    app.bus(&BusEvent::PartUpdated { part: Box::new(part.clone()) });
    // The answer arrives in pieces, cut inside the code fence.
    for piece in fixtures::ANSWER.as_bytes().chunks(17) {
        let delta = String::from_utf8_lossy(piece).into_owned();
        app.bus(&BusEvent::PartDelta {
            session_id: fixtures::session_id(),
            message_id: part.message_id.clone(),
            part_id: part.id.clone(),
            field: "text".to_owned(),
            delta,
        });
    }
    insta::assert_snapshot!(frame(&mut app, 70, 30));
}

#[test]
fn a_running_and_a_finished_tool_with_a_diff() {
    let mut history = fixtures::sample_history();
    history[1].parts.insert(4, fixtures::part(2, 3, fixtures::running_bash("cargo test", NOW - 4_200)));
    history[1].parts[4].id = fixtures::part_id(2, 9);
    let mut app = app(history);
    insta::assert_snapshot!(frame(&mut app, 80, 40));
    // Ctrl-O shows every call's input and output.
    app.key(ctrl('o'), &fixtures::root());
    let expanded = frame(&mut app, 80, 60);
    assert!(expanded.contains("output:") && expanded.contains("\"command\": \"cargo test\""), "{expanded}");
    assert!(expanded.contains("The test expects 42."), "reasoning expands too: {expanded}");
}

#[test]
fn a_permission_dialog_in_its_own_area() {
    let mut app = app(fixtures::sample_history());
    let (answer, mut answered) = tokio::sync::oneshot::channel();
    let diff = "--- NOTES.md\n+++ NOTES.md\n@@ -0,0 +1,2 @@\n+one\n+two\n";
    let metadata = serde_json::json!({"diff": diff});
    let serde_json::Value::Object(metadata) = metadata else { unreachable!() };
    app.asks.push_back(PendingAsk {
        ask: PermissionAsk {
            id: PermissionId::new_unchecked("per_1"),
            session_id: fixtures::session_id(),
            request: PermissionRequest {
                permission: "edit".to_owned(),
                patterns: vec!["NOTES.md".to_owned()],
                always: vec!["*".to_owned()],
                metadata,
            },
            tool: None,
        },
        answer: Some(answer),
    });
    let shown = frame(&mut app, 80, 30);
    insta::assert_snapshot!(shown);
    // The transcript's last rows stay visible above the dialog.
    assert!(shown.contains("unit") && shown.contains("Allow edit?"), "{shown}");
    app.key(key(KeyCode::Char('a')), &fixtures::root());
    let reply = answered.try_recv().unwrap();
    assert_eq!(reply.reply, session_core::permission::Reply::Always);
    assert!(app.asks.is_empty());
}

#[test]
fn reject_with_feedback_sends_the_typed_reason() {
    let mut app = app(Vec::new());
    let (answer, mut answered) = tokio::sync::oneshot::channel();
    app.asks.push_back(PendingAsk {
        ask: PermissionAsk {
            id: PermissionId::new_unchecked("per_2"),
            session_id: fixtures::session_id(),
            request: PermissionRequest {
                permission: "doom_loop".to_owned(),
                patterns: vec!["read".to_owned()],
                always: Vec::new(),
                metadata: serde_json::Map::new(),
            },
            tool: None,
        },
        answer: Some(answer),
    });
    assert!(frame(&mut app, 80, 20).contains("keeps repeating the same tool call"));
    app.key(key(KeyCode::Char('f')), &fixtures::root());
    typed(&mut app, "try another file");
    app.key(key(KeyCode::Enter), &fixtures::root());
    let reply = answered.try_recv().unwrap();
    assert_eq!(reply.reply, session_core::permission::Reply::Reject);
    assert_eq!(reply.message.as_deref(), Some("try another file"));
}

#[test]
fn the_status_line_shows_model_agent_context_cost_title_and_state() {
    let mut app = app(fixtures::sample_history());
    insta::assert_snapshot!("status_idle", crate::view::status_text(&app, NOW));
    app.status.state =
        Some(SessionStatus::Retry { attempt: 2, message: "rate limited".to_owned(), next: NOW + 4_500 });
    insta::assert_snapshot!("status_retry", crate::view::status_text(&app, NOW));
    app.status.state = Some(SessionStatus::Busy);
    assert!(crate::view::status_text(&app, NOW).contains("working · Esc interrupts"));
}

#[test]
fn the_session_picker() {
    let mut app = app(fixtures::sample_history());
    let items = vec![
        PickerItem {
            label: "Fix the answer".into(),
            detail: "2026-12-02 06:10  ses_b".into(),
            value: "ses_b".into(),
        },
        PickerItem {
            label: "Write the notes".into(),
            detail: "2026-12-01 18:44  ses_a".into(),
            value: "ses_a".into(),
        },
    ];
    app.open_picker(PickerKind::Sessions, items);
    insta::assert_snapshot!(frame(&mut app, 80, 24));
    typed(&mut app, "notes");
    assert_eq!(app.key(key(KeyCode::Enter), &fixtures::root()), vec![Effect::OpenSession("ses_a".into())]);
}

#[test]
fn keys_send_interrupt_quit_undo_and_recall_history() {
    let mut app = app(fixtures::sample_history());
    let root = fixtures::root();
    typed(&mut app, "hello");
    assert_eq!(
        app.key(key(KeyCode::Enter), &root),
        vec![Effect::Prompt { text: "hello".into(), context: vec![] }]
    );
    // Up recalls it.
    app.key(key(KeyCode::Up), &root);
    assert_eq!(app.prompt_text(), "hello");
    // Esc interrupts only while busy.
    app.status.state = Some(SessionStatus::Busy);
    assert_eq!(app.key(key(KeyCode::Esc), &root), vec![Effect::Interrupt]);
    // Ctrl-C clears the prompt first; then twice quits.
    assert!(app.key(ctrl('c'), &root).is_empty());
    assert_eq!(app.prompt_text(), "");
    assert!(app.key(ctrl('c'), &root).is_empty());
    assert_eq!(app.status.flash.as_deref(), Some("press Ctrl-C again to quit"));
    assert_eq!(app.key(ctrl('c'), &root), vec![Effect::Quit]);
    // /undo reverts the last prompt and puts its text back.
    app.input = crate::app::prompt_editor();
    typed(&mut app, "/undo");
    assert_eq!(app.key(key(KeyCode::Enter), &root), vec![Effect::Revert(fixtures::message_id(1))]);
    assert_eq!(app.prompt_text(), "Fix the answer in src/lib.rs");
}

#[test]
fn the_skills_list() {
    use session_runtime::config::{LoadedSkill, Skill, SkillProblem, SkillScope, SkillSet};
    use std::path::PathBuf;
    let skill = |name: &str, description: &str, location: &str, scope, slash| LoadedSkill {
        skill: Skill {
            name: name.to_owned(),
            description: description.to_owned(),
            location: PathBuf::from(location),
            content: "Steps.".into(),
        },
        scope,
        license: None,
        allowed_tools: Vec::new(),
        metadata: Default::default(),
        slash,
    };
    let set = SkillSet::new(
        vec![
            skill(
                "release",
                "Cuts a release",
                "/p/.opencode/skills/release/SKILL.md",
                SkillScope::Project,
                true,
            ),
            skill("pdf", "Fills PDF forms", "/home/me/.claude/skills/pdf/SKILL.md", SkillScope::User, false),
        ],
        vec![SkillProblem::new(
            std::path::Path::new("/p/.claude/skills/bad/SKILL.md"),
            "no `name` in the front matter",
        )],
    );
    let mut app = app(Vec::new());
    app.skills = set.report();
    typed(&mut app, "/skills");
    assert!(app.key(key(KeyCode::Enter), &fixtures::root()).is_empty());
    insta::assert_snapshot!(frame(&mut app, 80, 16));
}

#[test]
fn a_large_paste_is_kept_aside_and_sent_whole() {
    let mut app = app(Vec::new());
    let big: String = (0..50).map(|i| format!("line {i}\n")).collect();
    app.paste(&big);
    assert_eq!(app.prompt_text(), "[paste #1: 50 lines]");
    match app.key(key(KeyCode::Enter), &fixtures::root()).as_slice() {
        [Effect::Prompt { text, .. }] => assert_eq!(text, &big),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_long_transcript_lays_out_once_and_copies_only_the_visible_rows() {
    let mut transcript = Transcript::new(fixtures::session_id(), fixtures::root());
    transcript.load(fixtures::long_history(10_000), None);
    let theme = Theme { color: true };
    let total = transcript.layout(100, &theme, NOW, false);
    assert!(total >= 10_000, "{total}");
    assert_eq!(transcript.rows(total - 30, 30).len(), 30);
    assert_eq!(transcript.rows(5_000, 40).len(), 40);
    // Scrolling up keeps the view still while new rows arrive below.
    let mut app = App::new(theme, transcript, status());
    app.scroll = 100;
    let before: Vec<String> = frame(&mut app, 100, 30).lines().take(20).map(str::to_owned).collect();
    assert!(!before.iter().any(|l| l.contains("Question 0")), "100 rows above the bottom, not the top");
    app.transcript.note(crate::transcript::NoteKind::Info, "one more line");
    let after: Vec<String> = frame(&mut app, 100, 30).lines().take(20).map(str::to_owned).collect();
    assert_eq!(after, before);
}

/// A write's result has OpenCode's metadata keys, no diff: the transcript shows the content
/// it wrote instead.
#[test]
fn a_write_shows_the_content_it_wrote() {
    let mut history = fixtures::sample_history();
    let write = fixtures::completed(
        "write",
        serde_json::json!({"filePath": "/work/NOTES.md", "content": "first note line\nsecond note line\n"}),
        "Wrote file successfully.",
        serde_json::json!({"diagnostics": {}, "filepath": "/work/NOTES.md", "exists": false, "truncated": false}),
    );
    if let Some(answer) = history.last_mut() {
        answer.parts.insert(3, fixtures::part(2, 9, write));
    }
    let shown = frame(&mut app(history), 80, 50);
    assert!(shown.contains("first note line") && shown.contains("second note line"), "{shown}");
}

#[test]
fn a_question_dialog_in_its_own_area() {
    use session_runtime::questions::{QuestionOption, QuestionPrompt, QuestionRequest};
    let mut app = app(fixtures::sample_history());
    let option = |label: &str, description: &str| QuestionOption {
        label: label.to_owned(),
        description: description.to_owned(),
    };
    let request = QuestionRequest {
        id: session_core::QuestionId::new_unchecked("que_1"),
        session_id: fixtures::session_id(),
        questions: vec![
            QuestionPrompt {
                question: "Which checks should run before the commit?".to_owned(),
                header: "Checks".to_owned(),
                options: vec![
                    option("Tests (Recommended)", "cargo test for the crates touched"),
                    option("Clippy", "lints, warnings denied"),
                    option("Format", "cargo fmt --check"),
                ],
                multiple: Some(true),
            },
            QuestionPrompt {
                question: "Push afterwards?".to_owned(),
                header: "Push".to_owned(),
                options: vec![option("Yes", "to origin"), option("No", "keep it local")],
                multiple: None,
            },
        ],
        tool: None,
    };
    app.bus(&BusEvent::QuestionAsked(Box::new(request.clone())));
    app.key(key(KeyCode::Char('1')), &fixtures::root());
    app.key(key(KeyCode::Down), &fixtures::root());
    let shown = frame(&mut app, 80, 24);
    insta::assert_snapshot!(shown);
    assert!(
        shown.contains("[x] Tests (Recommended)") && shown.contains("4. Type your own answer"),
        "{shown}"
    );
    app.key(key(KeyCode::Enter), &fixtures::root());
    let second = frame(&mut app, 80, 24);
    assert!(second.contains("Push (2/2)") && second.contains("1. Yes"), "{second}");
    let effects = app.key(key(KeyCode::Char('2')), &fixtures::root());
    let answers = vec![vec!["Tests (Recommended)".to_owned()], vec!["No".to_owned()]];
    assert_eq!(effects, [Effect::ReplyQuestion { id: request.id, answers }]);
    assert!(!frame(&mut app, 80, 24).contains(" question "), "the dialog closed");
}
