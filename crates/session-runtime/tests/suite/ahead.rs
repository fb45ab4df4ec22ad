//! A new session's first request sent ahead (`Runtime::send_ahead`, `Runtime::prompt_with`)
//! against the loopback test server: it leaves before the session exists, the first step uses
//! its stream when it would send the same request, and drops it when it would not. The
//! request names its session (as OpenCode's do): the session is created with the id it was sent with.

use session_core::{FinishReason, Message, SessionId, permission::Action, permission::Rule};
use session_llm::RequestKind;
use session_runtime::sessions::RequestAhead;
use session_testkit::TestServer;

use super::support::{Rig, Setup, eventually, history, http, rig, say, script, text_of};

const READ_THEN_ANSWER: &str = r#"{"turns": [
    {"text": "Reading.", "calls": [{"op": "read", "path": "notes.txt"}]},
    {"text": "Carried on."}]}"#;
const ONE_ANSWER: &str = r#"{"turns": [{"text": "First answer."}]}"#;

fn main_requests(server: &TestServer) -> usize {
    server.requests().iter().filter(|r| r.kind == RequestKind::Main).count()
}

/// The session the `n`th request (0-based) named in each of its two session headers.
fn named_session(server: &TestServer, n: usize) -> [Option<String>; 2] {
    let request = &server.requests()[n];
    session_llm::SESSION_HEADERS.map(|name| request.headers.get(name).cloned())
}

/// Creates the session with the id the request sent ahead named, so that its first step can
/// adopt the request.
async fn session_for(rig: &Rig, ahead: &RequestAhead, rules: Vec<Rule>) -> SessionId {
    rig.runtime.create_session_as(Some(ahead.session_id().clone()), None, rules).await.unwrap().id
}

/// A server playing `turns`, a runtime on it, and `prompt`'s first request sent ahead and
/// received by the server.
async fn sent_ahead(turns: &str, prompt: &str) -> (TestServer, Rig, RequestAhead) {
    let server = TestServer::start(script(turns)).await.unwrap();
    let rig = rig(Setup::new(http(&server))).await;
    let ahead = rig.runtime.send_ahead(&say(prompt)).await.unwrap();
    eventually("the request sent ahead", async || main_requests(&server) == 1).await;
    (server, rig, ahead)
}

#[tokio::test]
async fn the_first_step_uses_the_request_sent_before_the_session_existed() {
    // The request is at the server while nothing is stored yet.
    let (server, rig, ahead) = sent_ahead(READ_THEN_ANSWER, "read the notes").await;
    let listed = rig.store.list_sessions(&session_store::ListSessions::default()).await.unwrap();
    assert!(listed.sessions.is_empty(), "nothing is stored before the session is created");

    let session = session_for(&rig, &ahead, Vec::new()).await;
    let reply = rig.runtime.prompt_with(&session, say("read the notes"), Some(ahead)).await.unwrap();
    assert_eq!(reply.finish, Some(FinishReason::Stop), "{reply:?}");
    // Two steps, two requests: the first step sent nothing of its own.
    assert_eq!(main_requests(&server), 2);
    let first = server.requests()[0].body.to_string();
    assert!(first.contains("read the notes"), "{first}");
    let messages = history(&rig.store, &session).await;
    assert_eq!(messages.len(), 3, "the prompt and one assistant message per step");
    assert_eq!(text_of(&messages[0]), "read the notes");
    assert_eq!(text_of(&messages[1]), "Reading.");
    assert_eq!(text_of(&messages[2]), "Carried on.");
    server.assert_invariants();
    server.shutdown().await;
}

#[tokio::test]
async fn a_request_sent_ahead_for_another_prompt_is_dropped_and_the_step_sends_its_own() {
    let (server, rig, ahead) = sent_ahead(ONE_ANSWER, "something else").await;
    let session = session_for(&rig, &ahead, Vec::new()).await;
    let reply = rig.runtime.prompt_with(&session, say("the real prompt"), Some(ahead)).await.unwrap();
    assert_eq!(reply.finish, Some(FinishReason::Stop), "{reply:?}");
    assert_eq!(main_requests(&server), 2, "the step sent its own request");
    assert!(server.requests()[1].body.to_string().contains("the real prompt"));
    // One answer is stored, the step's own (the server answers a conversation's first turn
    // with the script's first turn, whoever asks).
    let messages = history(&rig.store, &session).await;
    assert_eq!(messages.len(), 2);
    assert_eq!(text_of(&messages[0]), "the real prompt");
    assert_eq!(text_of(&messages[1]), "First answer.");
    server.shutdown().await;
}

#[tokio::test]
async fn a_session_whose_rules_change_the_tools_does_not_take_the_request_sent_ahead() {
    let (server, rig, ahead) = sent_ahead(ONE_ANSWER, "hi").await;
    // The session's own rules disable a tool: the first step offers fewer tools than the
    // request sent ahead, which assumed a session without rules.
    let deny_read = Rule::new("read", "*", Action::Deny);
    let session = session_for(&rig, &ahead, vec![deny_read]).await;
    let reply = rig.runtime.prompt_with(&session, say("hi"), Some(ahead)).await.unwrap();
    assert!(reply.error.is_none(), "{reply:?}");
    assert_eq!(main_requests(&server), 2);
    let own = server.requests()[1].body.to_string();
    assert!(!own.contains(r#""name":"read""#), "the step's request leaves the denied tool out: {own}");
    let messages = history(&rig.store, &session).await;
    assert_eq!(messages.len(), 2);
    assert!(matches!(&messages[1].info, Message::Assistant(_)));
    assert_eq!(text_of(&messages[1]), "First answer.");
    server.shutdown().await;
}

#[tokio::test]
async fn the_request_sent_ahead_and_every_later_one_name_the_stored_session() {
    let (server, rig, ahead) = sent_ahead(READ_THEN_ANSWER, "read the notes").await;
    // The request left before any session was stored, and already named the session.
    let named_early = named_session(&server, 0);
    let session = session_for(&rig, &ahead, Vec::new()).await;
    assert_eq!(named_early, [Some(session.to_string()), Some(session.to_string())]);
    rig.runtime.prompt_with(&session, say("read the notes"), Some(ahead)).await.unwrap();
    assert_eq!(main_requests(&server), 2, "the first step adopted the request sent ahead");
    let stored = rig.store.get_session(&session).await.unwrap().id;
    for n in 0..2 {
        assert_eq!(
            named_session(&server, n),
            [Some(stored.to_string()), Some(stored.to_string())],
            "request {n}"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_session_created_with_another_id_sends_its_own_request_naming_itself() {
    // The control of the test above: the request sent ahead named an id no session got, so
    // the step does not adopt it, and its own request names the session that exists.
    let (server, rig, ahead) = sent_ahead(ONE_ANSWER, "hi").await;
    let minted = ahead.session_id().clone();
    let session = rig.runtime.create_session(None).await.unwrap().id;
    assert_ne!(session, minted);
    rig.runtime.prompt_with(&session, say("hi"), Some(ahead)).await.unwrap();
    assert_eq!(main_requests(&server), 2, "the step sent its own request");
    assert_eq!(named_session(&server, 0), [Some(minted.to_string()), Some(minted.to_string())]);
    assert_eq!(named_session(&server, 1), [Some(session.to_string()), Some(session.to_string())]);
    server.shutdown().await;
}
