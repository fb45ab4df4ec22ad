//! The `permission_cases` of session-core's doomloop.json, run through the engine with its
//! state: the approved rules of a case are loaded into the session, the `doom_loop` request is
//! asked under the agent's ruleset, and the outcome (allowed silently, asked, denied) must be
//! the expected action.

use std::path::PathBuf;

use serde_json::Value;
use session_core::{
    SessionId, permission::AgentPaths, permission::BuiltinAgent, permission::Rule, permission::agent_ruleset,
    permission::doom_loop_request, permission::rules_from_config,
};
use session_tools::{PermissionAnswer, PermissionEngine, ToolError};
use tokio_util::sync::CancellationToken;

use super::support::ScriptedAsker;

fn vectors() -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../session-core/tests/conformance/doomloop.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[tokio::test]
async fn doomloop_permission_cases_pass_through_the_engine() {
    let doc = vectors();
    let cases = doc["permission_cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for (n, case) in cases.iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        let input = &case["input"];
        let agent = BuiltinAgent::from_name(input["agent"].as_str().unwrap()).unwrap();
        let user = rules_from_config(&input["user_permission_config"], None).unwrap();
        let ruleset = agent_ruleset(Some(agent), &AgentPaths::default(), &user, &[]);
        let approved: Vec<Rule> =
            serde_json::from_value(input.get("approved").cloned().unwrap_or(Value::Array(vec![]))).unwrap();
        let asker = ScriptedAsker::new(|_| Some(PermissionAnswer::once()));
        let engine = PermissionEngine::new(asker.clone());
        let session = SessionId::new_unchecked(format!("ses_case{n}"));
        engine.load_approved(&session, approved);
        let tool = input["tool"].as_str().unwrap();
        let request = doom_loop_request(tool, &serde_json::Map::new());
        let outcome = engine.ask(&session, request, None, &ruleset, &CancellationToken::new()).await;
        let action = match (&outcome, asker.asked().len()) {
            (Ok(()), 0) => "allow",
            (Ok(()), 1) => "ask",
            (Err(ToolError::Permission(session_core::permission::PermissionError::Denied { .. })), 0) => {
                "deny"
            }
            other => panic!("{name}: unexpected outcome {other:?}"),
        };
        assert_eq!(action, case["expected"]["action"].as_str().unwrap(), "case {name}");
        if action == "ask" {
            assert_eq!(asker.asked()[0].request.permission, "doom_loop", "case {name}");
        }
    }
}
