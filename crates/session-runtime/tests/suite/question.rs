//! The `question` tool through the runtime: a scripted model asks, the test answers (or
//! dismisses) through the runtime's API, and the next request carries OpenCode's output.

use serde_json::json;
use session_core::{PartKind, ToolStatus};
use session_runtime::BusEvent;
use session_runtime::questions::QuestionRequest;
use session_testkit::TestServer;

use super::support::{Rig, Setup, eventually, history, http, rig, say, script, tool_states};

const ASKS: &str = r#"{"turns": [
    {"calls": [{"name": "question", "arguments": {"questions": [
        {"question": "Which colour?", "header": "Colour", "multiple": true,
         "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cold"}]},
        {"question": "Which size?", "header": "Size",
         "options": [{"label": "S", "description": "small"}]}]}}]},
    {"text": "Noted."}]}"#;

async fn questioned(server: &TestServer) -> Rig {
    let mut setup = Setup::new(http(server));
    setup.questions = true;
    rig(setup).await
}

/// The one question waiting, once it is there.
async fn waiting(rig: &Rig) -> QuestionRequest {
    eventually("a question", async || rig.runtime.questions().len() == 1).await;
    rig.runtime.questions().remove(0)
}

#[tokio::test]
async fn an_answered_question_reaches_the_model_in_opencodes_words() {
    let server = TestServer::start(script(ASKS)).await.unwrap();
    let rig = questioned(&server).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let mut events = rig.runtime.bus().subscribe();
    let answer = async {
        let question = waiting(&rig).await;
        assert_eq!(question.session_id, session.id);
        assert_eq!(question.questions.len(), 2);
        assert!(question.questions[0].is_multiple());
        assert!(question.tool.is_some());
        let answers = vec![vec!["Red".to_owned(), "Blue".to_owned()], vec!["extra large".to_owned()]];
        rig.runtime.reply_question(&question.id, answers).unwrap();
        question
    };
    let (reply, question) = tokio::join!(rig.runtime.prompt(&session.id, say("pick for me")), answer);
    let reply = reply.unwrap();
    assert_eq!(reply.error, None);
    assert!(rig.runtime.questions().is_empty());

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].tool_names.iter().any(|name| name == "question"), "{:?}", requests[0].tool_names);
    let output = "User has answered your questions: \"Which colour?\"=\"Red, Blue\", \"Which size?\"=\"extra large\". You can now continue with the user's answers in mind.";
    // The body holds the output as a JSON string: quotes escaped.
    let escaped = serde_json::to_string(output).unwrap();
    let body = requests[1].body.to_string();
    assert!(body.contains(&escaped[1..escaped.len() - 1]), "{body}");
    let messages = history(&rig.store, &session.id).await;
    assert_eq!(tool_states(&messages), [("question".to_owned(), ToolStatus::Completed)]);
    let part = messages.iter().flat_map(|m| m.parts.iter()).find_map(|p| match &p.kind {
        PartKind::Tool(tool) => Some(serde_json::to_value(&tool.state).unwrap()),
        _ => None,
    });
    let state = part.unwrap();
    assert_eq!(state["title"], "Asked 2 questions");
    assert_eq!(state["output"], output);
    assert_eq!(state["metadata"]["answers"], json!([["Red", "Blue"], ["extra large"]]));

    let mut names = Vec::new();
    while let Ok(event) = events.try_recv() {
        match &event {
            BusEvent::QuestionAsked(asked) => assert_eq!(asked.id, question.id),
            BusEvent::QuestionReplied { request_id, answers, .. } => {
                assert_eq!(request_id, &question.id);
                assert_eq!(answers[1], ["extra large"]);
            }
            _ => continue,
        }
        names.push(event.name());
    }
    assert_eq!(names, ["question.asked", "question.replied"]);
    server.assert_invariants();
    server.shutdown().await;
}

#[tokio::test]
async fn a_dismissed_question_fails_the_call_and_stops_the_loop() {
    let server = TestServer::start(script(ASKS)).await.unwrap();
    let rig = questioned(&server).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let dismiss = async {
        let question = waiting(&rig).await;
        rig.runtime.reject_question(&question.id).unwrap();
        assert!(rig.runtime.reject_question(&question.id).is_err(), "settled once");
    };
    let (reply, ()) = tokio::join!(rig.runtime.prompt(&session.id, say("pick for me")), dismiss);
    reply.unwrap();
    // As a rejected permission: no further request.
    assert_eq!(server.requests().len(), 1);
    let messages = history(&rig.store, &session.id).await;
    assert_eq!(tool_states(&messages), [("question".to_owned(), ToolStatus::Error)]);
    let error = messages.iter().flat_map(|m| m.parts.iter()).find_map(|p| match &p.kind {
        PartKind::Tool(tool) => {
            serde_json::to_value(&tool.state).unwrap()["error"].as_str().map(str::to_owned)
        }
        _ => None,
    });
    assert_eq!(error.as_deref(), Some("The user dismissed this question"));
    server.shutdown().await;
}

#[tokio::test]
async fn an_abort_withdraws_the_waiting_question() {
    let server = TestServer::start(script(ASKS)).await.unwrap();
    let rig = questioned(&server).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let mut events = rig.runtime.bus().subscribe();
    let abort = async {
        let question = waiting(&rig).await;
        assert!(rig.runtime.cancel(&session.id));
        question
    };
    let (reply, question) = tokio::join!(rig.runtime.prompt(&session.id, say("pick for me")), abort);
    let _ = reply;
    assert!(rig.runtime.questions().is_empty());
    let mut rejected = false;
    while let Ok(event) = events.try_recv() {
        if let BusEvent::QuestionRejected { request_id, .. } = event {
            assert_eq!(request_id, question.id);
            rejected = true;
        }
    }
    assert!(rejected, "the withdrawn question is published as rejected");
    assert!(rig.runtime.reply_question(&question.id, Vec::new()).is_err());
    server.shutdown().await;
}
