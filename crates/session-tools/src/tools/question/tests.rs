use std::sync::Mutex;

use serde_json::json;
use session_core::MessageId;
use session_core::permission::PermissionAsk;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::permission::{PermissionAnswer, PermissionAsker, PermissionEngine};
use crate::registry::ToolRegistry;
use crate::workspace::Workspace;
use crate::{CallScope, ProgressSink, ToolExecutor, ToolInvocation};

/// Answers with fixed answers (or rejects, or never answers) and records the asks.
struct Scripted {
    answers: Option<Vec<QuestionAnswer>>,
    hang: bool,
    asked: Mutex<Vec<QuestionAsk>>,
}

#[async_trait]
impl QuestionAsker for Scripted {
    async fn ask(&self, ask: QuestionAsk) -> Result<Vec<QuestionAnswer>, QuestionRejectedError> {
        self.asked.lock().unwrap().push(ask);
        if self.hang {
            std::future::pending::<()>().await;
        }
        self.answers.clone().ok_or(QuestionRejectedError)
    }
}

struct NoAsks;

#[async_trait]
impl PermissionAsker for NoAsks {
    async fn ask(&self, _ask: &PermissionAsk) -> Option<PermissionAnswer> {
        None
    }
}

fn prompt(question: &str, multiple: Option<bool>) -> QuestionPrompt {
    QuestionPrompt {
        question: question.to_owned(),
        header: "H".to_owned(),
        options: vec![QuestionOption { label: "A".to_owned(), description: "first".to_owned() }],
        multiple,
    }
}

async fn call(
    asker: Arc<Scripted>,
    input: Value,
    abort: CancellationToken,
) -> Result<ToolSuccess, ToolError> {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = ToolRegistry::new();
    registry.register_builtin(Arc::new(QuestionTool::new(asker)));
    let executor = ToolExecutor::new(
        registry,
        Workspace::new(dir.path()).unwrap(),
        Arc::new(PermissionEngine::new(Arc::new(NoAsks))),
    );
    let Value::Object(input) = input else { panic!("an object") };
    let call = ToolInvocation { call_id: "call_q".into(), tool: QUESTION_TOOL.into(), input };
    let scope = CallScope {
        session_id: SessionId::new_unchecked("ses_q"),
        message_id: MessageId::new_unchecked("msg_q"),
        agent: "build".into(),
        ruleset: Arc::default(),
        abort: abort.clone(),
    };
    executor.run(&call, &scope, abort, ProgressSink::none()).await
}

fn two_questions() -> Value {
    json!({"questions": [
        {"question": "Which colour?", "header": "Colour", "multiple": true,
         "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cold"}]},
        {"question": "Which size?", "header": "Size",
         "options": [{"label": "S", "description": "small"}]}
    ]})
}

#[test]
fn the_output_and_title_are_opencodes() {
    let questions = [prompt("Q1", Some(true)), prompt("Q2", None)];
    let answers = vec![vec!["A".to_owned(), "B".to_owned()], vec![]];
    assert_eq!(
        question_output(&questions, &answers),
        "User has answered your questions: \"Q1\"=\"A, B\", \"Q2\"=\"Unanswered\". You can now continue with the user's answers in mind."
    );
    assert_eq!(
        question_output(&questions[..1], &[]),
        "User has answered your questions: \"Q1\"=\"Unanswered\". You can now continue with the user's answers in mind."
    );
    assert_eq!(question_title(1), "Asked 1 question");
    assert_eq!(question_title(2), "Asked 2 questions");
}

#[test]
fn a_prompt_serializes_as_opencodes_question_prompt() {
    assert_eq!(
        serde_json::to_value(prompt("Q", None)).unwrap(),
        json!({"question": "Q", "header": "H", "options": [{"label": "A", "description": "first"}]})
    );
    assert_eq!(serde_json::to_value(prompt("Q", Some(true))).unwrap()["multiple"], json!(true));
    assert!(prompt("Q", Some(true)).is_multiple() && !prompt("Q", None).is_multiple());
}

#[tokio::test]
async fn answers_become_the_result_and_its_metadata() {
    let answers = vec![vec!["Red".to_owned(), "Blue".to_owned()], vec!["a custom size".to_owned()]];
    let asker = Arc::new(Scripted { answers: Some(answers), hang: false, asked: Mutex::default() });
    let result = call(asker.clone(), two_questions(), CancellationToken::new()).await.unwrap();
    assert_eq!(result.title, "Asked 2 questions");
    assert_eq!(
        result.output,
        "User has answered your questions: \"Which colour?\"=\"Red, Blue\", \"Which size?\"=\"a custom size\". You can now continue with the user's answers in mind."
    );
    assert_eq!(result.metadata["answers"], json!([["Red", "Blue"], ["a custom size"]]));
    let asked = asker.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].session_id.as_str(), "ses_q");
    assert_eq!(asked[0].questions.len(), 2);
    assert!(asked[0].questions[0].is_multiple());
    let tool = asked[0].tool.clone().unwrap();
    assert_eq!((tool.message_id.as_str(), tool.call_id.as_str()), ("msg_q", "call_q"));
}

#[tokio::test]
async fn a_dismissal_fails_the_call_and_blocks_the_loop() {
    let asker = Arc::new(Scripted { answers: None, hang: false, asked: Mutex::default() });
    let error = call(asker, two_questions(), CancellationToken::new()).await.unwrap_err();
    assert_eq!(error.to_string(), "The user dismissed this question");
    assert!(error.blocks_loop(false));
    assert!(!error.blocks_loop(true));
}

#[tokio::test]
async fn an_abort_withdraws_the_question() {
    let asker = Arc::new(Scripted { answers: None, hang: true, asked: Mutex::default() });
    let abort = CancellationToken::new();
    let cancel = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let error = call(asker.clone(), two_questions(), abort).await.unwrap_err();
    assert!(matches!(error, ToolError::Aborted), "{error}");
    assert_eq!(asker.asked.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn arguments_outside_the_schema_never_reach_the_asker() {
    let asker = Arc::new(Scripted { answers: Some(vec![]), hang: false, asked: Mutex::default() });
    let missing_header = json!({"questions": [{"question": "Q", "options": []}]});
    let error = call(asker.clone(), missing_header, CancellationToken::new()).await.unwrap_err();
    assert!(matches!(error, ToolError::InvalidArguments { .. }), "{error}");
    assert!(asker.asked.lock().unwrap().is_empty());
}

#[test]
fn the_schema_is_opencodes() {
    let tool = QuestionTool::new(Arc::new(NoAnswers));
    let mut schema = crate::tool::Tool::parameters(&tool);
    jsonschema::draft7::meta::validate(&schema).unwrap();
    assert!(jsonschema::draft7::new(&schema).is_ok());
    blank_descriptions(&mut schema);
    // As the differential suite captured OpenCode 1.18.34's, but for `$schema` (SPEC 17).
    let opencode = json!({"type": "object", "properties": {"questions": {"type": "array", "items": {
        "type": "object", "properties": {
            "question": {"type": "string", "description": "-"},
            "header": {"type": "string", "description": "-"},
            "options": {"type": "array", "items": {"type": "object", "properties": {
                "label": {"type": "string", "description": "-"},
                "description": {"type": "string", "description": "-"}},
                "required": ["label", "description"]}, "description": "-"},
            "multiple": {"type": "boolean", "description": "-"}},
        "required": ["question", "header", "options"]}, "description": "-"}},
        "required": ["questions"]});
    assert_eq!(schema, opencode, "{}", serde_json::to_string_pretty(&schema).unwrap());
}

struct NoAnswers;

#[async_trait]
impl QuestionAsker for NoAnswers {
    async fn ask(&self, _ask: QuestionAsk) -> Result<Vec<QuestionAnswer>, QuestionRejectedError> {
        Err(QuestionRejectedError)
    }
}

/// Every `description` text replaced by "-" (the option's `description` property stays).
fn blank_descriptions(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (key, item) in object.iter_mut() {
                if key == "description" && item.is_string() {
                    *item = Value::String("-".into());
                } else {
                    blank_descriptions(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(blank_descriptions),
        _ => {}
    }
}

#[tokio::test]
async fn an_oversized_question_fails_without_reaching_the_user() {
    let asker = Arc::new(Scripted {
        answers: Some(vec![vec!["A".to_owned()]]),
        hang: false,
        asked: Mutex::default(),
    });
    let many_options: Vec<Value> =
        (0..=MAX_OPTIONS).map(|i| json!({"label": format!("o{i}"), "description": "d"})).collect();
    let too_many_questions: Vec<Value> =
        (0..=MAX_QUESTIONS).map(|_| json!({"question": "Q", "header": "H", "options": []})).collect();
    let cases = [
        (json!({"questions": too_many_questions}), "at most 16 questions"),
        (
            json!({"questions": [{"question": "Q", "header": "H", "options": many_options}]}),
            "at most 64 options",
        ),
        (
            json!({"questions": [{"question": "Q".repeat(MAX_TEXT_CHARS + 1), "header": "H", "options": []}]}),
            "at most 4000 characters",
        ),
    ];
    for (input, expected) in cases {
        let error = call(asker.clone(), input, CancellationToken::new()).await.unwrap_err();
        assert!(error.to_string().contains(expected), "{error}");
    }
    assert!(asker.asked.lock().unwrap().is_empty(), "no oversized question reached the user");
    // The control: a question within the bounds is asked.
    let within = json!({"questions": [{"question": "Q", "header": "H", "options": [{"label": "A", "description": "d"}]}]});
    call(asker.clone(), within, CancellationToken::new()).await.unwrap();
    assert_eq!(asker.asked.lock().unwrap().len(), 1);
}
