//! The permission engine: rules, waiting, "always" per session, reject cascades, feedback,
//! replies from outside, cancellation.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use session_core::{
    JsonObject, SessionId, permission::Action, permission::PERMISSION_CORRECTED_PREFIX,
    permission::PERMISSION_REJECTED_TEXT, permission::PermissionError, permission::PermissionRequest,
    permission::Reply, permission::Rule,
};
use session_tools::{PermissionAnswer, PermissionEngine, ReplyLater, ToolError};
use tokio_util::sync::CancellationToken;

use super::support::ScriptedAsker;

fn request(permission: &str, pattern: &str) -> PermissionRequest {
    PermissionRequest {
        permission: permission.into(),
        patterns: vec![pattern.into()],
        always: vec![pattern.into()],
        metadata: JsonObject::new(),
    }
}

fn ask_rules() -> Vec<Rule> {
    vec![
        Rule::new("*", "*", Action::Ask),
        Rule::new("read", "*", Action::Allow),
        Rule::new("rm", "*", Action::Deny),
    ]
}

fn session(name: &str) -> SessionId {
    SessionId::new_unchecked(format!("ses_{name}"))
}

#[tokio::test]
async fn allow_and_deny_need_no_answer() {
    let asker = ScriptedAsker::rejecting();
    let engine = PermissionEngine::new(asker.clone());
    let abort = CancellationToken::new();
    engine.ask(&session("a"), request("read", "x"), None, &ask_rules(), &abort).await.unwrap();
    let error = engine.ask(&session("a"), request("rm", "x"), None, &ask_rules(), &abort).await.unwrap_err();
    assert!(matches!(error, ToolError::Permission(PermissionError::Denied { .. })), "{error:?}");
    assert!(error.to_string().contains(r#"{"permission":"rm","pattern":"*","action":"deny"}"#), "{error}");
    assert!(asker.asked().is_empty());
}

#[tokio::test]
async fn once_goes_ahead_and_always_is_remembered_per_session() {
    let asker = ScriptedAsker::new(|ask| {
        Some(if ask.request.patterns[0] == "first" {
            PermissionAnswer::always()
        } else {
            PermissionAnswer::once()
        })
    });
    let engine = PermissionEngine::new(asker.clone());
    let abort = CancellationToken::new();
    engine.ask(&session("a"), request("edit", "first"), None, &ask_rules(), &abort).await.unwrap();
    assert_eq!(engine.approved(&session("a")), vec![Rule::new("edit", "first", Action::Allow)]);
    engine.ask(&session("a"), request("edit", "first"), None, &ask_rules(), &abort).await.unwrap();
    assert_eq!(asker.asked().len(), 1, "the second ask of session a passed silently");
    engine.ask(&session("b"), request("edit", "first"), None, &ask_rules(), &abort).await.unwrap();
    assert_eq!(asker.asked().len(), 2, "session b was asked: answers are per session");
    assert_eq!(
        asker.replies.lock().unwrap().iter().map(|r| r.reply).collect::<Vec<_>>(),
        vec![Reply::Always, Reply::Always]
    );
}

#[tokio::test]
async fn reject_rejects_the_other_pending_asks_of_the_session() {
    let engine = Arc::new(PermissionEngine::new(Arc::new(ReplyLater)));
    let abort = CancellationToken::new();
    let spawn_ask = |s: &str, pattern: &str| {
        let (engine, abort, s, pattern) = (engine.clone(), abort.clone(), session(s), pattern.to_owned());
        tokio::spawn(
            async move { engine.ask(&s, request("edit", &pattern), None, &ask_rules(), &abort).await },
        )
    };
    let first = spawn_ask("a", "one");
    let second = spawn_ask("a", "two");
    let other = spawn_ask("b", "three");
    while engine.pending(None).len() < 3 {
        tokio::task::yield_now().await;
    }
    assert_eq!(engine.pending(Some(&session("a"))).len(), 2);
    let target = engine.pending(Some(&session("a")))[0].id.clone();
    let resolutions = engine.reply(&target, Reply::Reject, None);
    assert_eq!(resolutions.len(), 2);
    assert_eq!(first.await.unwrap().unwrap_err().to_string(), PERMISSION_REJECTED_TEXT);
    assert_eq!(second.await.unwrap().unwrap_err().to_string(), PERMISSION_REJECTED_TEXT);
    assert_eq!(engine.pending(None).len(), 1, "session b's ask is untouched");
    let remaining = engine.pending(None)[0].id.clone();
    engine.reply(&remaining, Reply::Once, None);
    other.await.unwrap().unwrap();
    assert!(engine.reply(&remaining, Reply::Once, None).is_empty(), "a second reply settles nothing");
}

#[tokio::test]
async fn always_settles_other_asks_it_now_allows() {
    let engine = Arc::new(PermissionEngine::new(Arc::new(ReplyLater)));
    let abort = CancellationToken::new();
    let a = {
        let (engine, abort) = (engine.clone(), abort.clone());
        tokio::spawn(async move {
            engine.ask(&session("a"), request("edit", "f.txt"), None, &ask_rules(), &abort).await
        })
    };
    let b = {
        let (engine, abort) = (engine.clone(), abort.clone());
        tokio::spawn(async move {
            engine.ask(&session("a"), request("edit", "f.txt"), None, &ask_rules(), &abort).await
        })
    };
    while engine.pending(None).len() < 2 {
        tokio::task::yield_now().await;
    }
    let first = engine.pending(None)[0].id.clone();
    let resolutions = engine.reply(&first, Reply::Always, None);
    assert_eq!(resolutions.len(), 2);
    a.await.unwrap().unwrap();
    b.await.unwrap().unwrap();
}

#[tokio::test]
async fn reject_with_feedback_is_a_correction_that_does_not_block() {
    let asker = ScriptedAsker::new(|_| Some(PermissionAnswer::correct("use the other file")));
    let engine = PermissionEngine::new(asker);
    let error = engine
        .ask(&session("a"), request("edit", "x"), None, &ask_rules(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), format!("{PERMISSION_CORRECTED_PREFIX}use the other file"));
    assert!(!error.blocks_loop(false));
    let rejected = ToolError::Permission(PermissionError::Rejected);
    assert!(rejected.blocks_loop(false));
    assert!(!rejected.blocks_loop(true), "experimental.continue_loop_on_deny keeps the loop going");
}

#[tokio::test]
async fn cancelling_a_waiting_ask_forgets_it() {
    let engine = Arc::new(PermissionEngine::new(Arc::new(ReplyLater)));
    let abort = CancellationToken::new();
    let waiting = {
        let (engine, abort) = (engine.clone(), abort.clone());
        tokio::spawn(async move {
            engine.ask(&session("a"), request("edit", "x"), None, &ask_rules(), &abort).await
        })
    };
    while engine.pending(None).is_empty() {
        tokio::task::yield_now().await;
    }
    abort.cancel();
    let error = tokio::time::timeout(Duration::from_secs(2), waiting).await.unwrap().unwrap().unwrap_err();
    assert!(matches!(error, ToolError::Aborted));
    assert!(engine.pending(None).is_empty());
    // A dropped ask (its task aborted) is forgotten too.
    let dropped = {
        let engine = engine.clone();
        tokio::spawn(async move {
            engine
                .ask(&session("a"), request("edit", "y"), None, &ask_rules(), &CancellationToken::new())
                .await
        })
    };
    while engine.pending(None).is_empty() {
        tokio::task::yield_now().await;
    }
    dropped.abort();
    let _ = dropped.await;
    assert!(engine.pending(None).is_empty());
}

#[tokio::test]
async fn rejecting_a_session_and_loading_approved_rules() {
    let engine = Arc::new(PermissionEngine::new(Arc::new(ReplyLater)));
    let waiting = {
        let engine = engine.clone();
        tokio::spawn(async move {
            engine
                .ask(&session("a"), request("edit", "x"), None, &ask_rules(), &CancellationToken::new())
                .await
        })
    };
    while engine.pending(None).is_empty() {
        tokio::task::yield_now().await;
    }
    engine.load_approved(&session("a"), [Rule::new("edit", "x", Action::Allow)]);
    waiting.await.unwrap().unwrap();
    assert_eq!(engine.approved(&session("a")), vec![Rule::new("edit", "x", Action::Allow)]);
    let waiting = {
        let engine = engine.clone();
        tokio::spawn(async move {
            engine
                .ask(&session("a"), request("bash", "ls"), None, &ask_rules(), &CancellationToken::new())
                .await
        })
    };
    while engine.pending(None).is_empty() {
        tokio::task::yield_now().await;
    }
    assert_eq!(engine.reject_session(&session("a")).len(), 1);
    assert_eq!(waiting.await.unwrap().unwrap_err().to_string(), PERMISSION_REJECTED_TEXT);
}

#[tokio::test]
async fn ask_anyway_asks_what_the_rules_allow_and_only_a_reply_settles_it() {
    let engine = Arc::new(PermissionEngine::new(Arc::new(ReplyLater)));
    let allow_all = vec![Rule::new("*", "*", Action::Allow), Rule::new("rm", "*", Action::Deny)];
    let abort = CancellationToken::new();
    // A deny still refuses at once, and check_denied says so without asking.
    let denied = engine.ask_anyway(&session("a"), request("rm", "x"), None, &allow_all, &abort).await;
    assert!(matches!(denied, Err(ToolError::Permission(PermissionError::Denied { .. }))), "{denied:?}");
    assert!(engine.check_denied(&session("a"), &request("rm", "x"), &allow_all).is_err());
    assert!(engine.check_denied(&session("a"), &request("edit", "x"), &allow_all).is_ok());
    assert_eq!(
        engine.deciding_rule(&session("a"), "rm", "x", &allow_all),
        Some(Rule::new("rm", "*", Action::Deny))
    );
    let marked = |marker: &str| {
        let mut request = request("bash", "x");
        request.metadata.insert("marker".into(), marker.into());
        request
    };
    let insisted = {
        let (engine, abort, rules, request) =
            (engine.clone(), abort.clone(), allow_all.clone(), marked("anyway"));
        tokio::spawn(async move { engine.ask_anyway(&session("a"), request, None, &rules, &abort).await })
    };
    let ordinary = {
        let (engine, abort, request) = (engine.clone(), abort.clone(), marked("ordinary"));
        tokio::spawn(async move { engine.ask(&session("a"), request, None, &ask_rules(), &abort).await })
    };
    while engine.pending(None).len() < 2 {
        tokio::task::yield_now().await;
    }
    let ordinary_id =
        engine.pending(None).into_iter().find(|ask| ask.request.metadata["marker"] == "ordinary").unwrap().id;
    // "always" on the ordinary ask approves `bash x`, which does not settle the insisted ask.
    assert_eq!(engine.reply(&ordinary_id, Reply::Always, None).len(), 1);
    assert_eq!(engine.pending(None).len(), 1);
    ordinary.await.unwrap().unwrap();
    // Loading approved rules does not settle it either; a reply does.
    engine.load_approved(&session("a"), [Rule::new("bash", "*", Action::Allow)]);
    let remaining = engine.pending(None);
    assert_eq!(remaining.len(), 1);
    engine.reply(&remaining[0].id, Reply::Once, None);
    insisted.await.unwrap().unwrap();
}
