//! Cases of `doomloop.json`: `cases` run the doom-loop check over the given parts,
//! `permission_cases` run the resulting `doom_loop` ask against the agent's ruleset.

use rust_decimal::Decimal;
use serde_json::{Value, json};
use session_core::{
    CompletedTime, ErrorTime, FinishReason, JsonObject, MessageId, Part, PartId, PartKind, PartTime,
    PermissionId, ReasoningPart, RunningTime, SessionId, StepFinishPart, StepStartPart, TextPart, TokenUsage,
    ToolPart, ToolState, message::normalize_tool_input, permission::AgentPaths, permission::AskOutcome,
    permission::BuiltinAgent, permission::PermissionAsks, permission::PermissionError, permission::Rule,
    permission::check_doom_loop, permission::doom_loop_request, permission::rules_from_config,
};

use crate::{Report, case_name, cases};

/// Runs every case of both lists.
pub fn run(doc: &Value, report: &mut Report) {
    for case in cases(doc, "cases") {
        let name = case_name(case);
        match run_check(case) {
            Ok(actual) => report.compare(&name, &case["expected"], &actual),
            Err(error) => report.record(&name, Err(format!("unmappable case: {error}"))),
        }
    }
    for case in cases(doc, "permission_cases") {
        let name = case_name(case);
        match run_permission(case) {
            Ok(actual) => report.compare(&name, &case["expected"], &actual),
            Err(error) => report.record(&name, Err(format!("unmappable case: {error}"))),
        }
    }
}

fn input_object(value: &Value) -> Result<JsonObject, String> {
    match value {
        Value::Object(object) => Ok(object.clone()),
        Value::Null => Ok(JsonObject::new()),
        other => Err(format!("part input must be an object, got {other}")),
    }
}

fn tool_state(status: &str, input: JsonObject) -> Result<ToolState, String> {
    Ok(match status {
        "pending" => ToolState::Pending { input, raw: String::new() },
        "running" => {
            ToolState::Running { input, title: None, metadata: None, time: RunningTime { start: 1 } }
        }
        "completed" => ToolState::Completed {
            input,
            output: String::new(),
            title: String::new(),
            metadata: JsonObject::new(),
            time: CompletedTime { start: 1, end: 2, compacted: None },
            attachments: None,
        },
        "error" => ToolState::Error {
            input,
            error: "failed".to_owned(),
            metadata: None,
            time: ErrorTime { start: 1, end: 2 },
            raw: None,
            title: None,
        },
        other => return Err(format!("unknown tool status {other:?}")),
    })
}

/// Builds a stored part from the vector's short form `{type, tool?, status?, input?}`.
fn part(index: usize, short: &Value) -> Result<Part, String> {
    let kind = match short["type"].as_str() {
        Some("tool") => {
            let tool = short["tool"].as_str().ok_or("tool part without tool")?.to_owned();
            let status = short["status"].as_str().ok_or("tool part without status")?;
            let state = tool_state(status, input_object(&short["input"])?)?;
            PartKind::Tool(ToolPart { call_id: format!("call_{index}"), tool, state, metadata: None })
        }
        Some("text") => PartKind::Text(TextPart::default()),
        Some("reasoning") => PartKind::Reasoning(ReasoningPart {
            text: String::new(),
            metadata: None,
            time: PartTime { start: 1, end: Some(2) },
        }),
        Some("step-start") => PartKind::StepStart(StepStartPart::default()),
        Some("step-finish") => PartKind::StepFinish(StepFinishPart {
            reason: FinishReason::ToolCalls,
            snapshot: None,
            cost: Decimal::ZERO,
            tokens: TokenUsage::default(),
        }),
        other => return Err(format!("unknown part type {other:?}")),
    };
    Ok(Part {
        // Zero-padded so that id order is list order, as the vector's parts are.
        id: PartId::new_unchecked(format!("prt_{index:06}")),
        session_id: SessionId::new_unchecked("ses_doomloop"),
        message_id: MessageId::new_unchecked("msg_doomloop"),
        kind,
    })
}

fn run_check(case: &Value) -> Result<Value, String> {
    let input = &case["input"];
    let parts = input["parts"]
        .as_array()
        .ok_or("input.parts is not a list")?
        .iter()
        .enumerate()
        .map(|(index, short)| part(index, short))
        .collect::<Result<Vec<_>, _>>()?;
    let call = &input["call"];
    let name = call["name"].as_str().ok_or("input.call.name is not a string")?;
    let call_input = call.get("input").cloned().ok_or("input.call has no input")?;
    let normalized = normalize_tool_input(call_input);
    let request = check_doom_loop(&parts, name, &normalized);
    let mut actual = json!({
        "normalized_input": Value::Object(normalized.clone()),
        "trigger": request.is_some(),
    });
    if let Some(request) = request {
        actual["permission_request"] = serde_json::to_value(&request).map_err(|e| e.to_string())?;
    }
    Ok(actual)
}

fn run_permission(case: &Value) -> Result<Value, String> {
    let input = &case["input"];
    let agent_name = input["agent"].as_str().ok_or("input.agent is not a string")?;
    let agent = BuiltinAgent::from_name(agent_name).ok_or_else(|| format!("unknown agent {agent_name:?}"))?;
    let user = rules_from_config(&input["user_permission_config"], None).map_err(|e| e.to_string())?;
    let tool = input["tool"].as_str().ok_or("input.tool is not a string")?;
    let approved: Vec<Rule> = match input.get("approved") {
        Some(value) => serde_json::from_value(value.clone()).map_err(|e| format!("input.approved: {e}"))?,
        None => Vec::new(),
    };
    // The ask uses the agent's ruleset only (no session rules), followed by the approved rules.
    let ruleset = session_core::permission::agent_ruleset(Some(agent), &AgentPaths::default(), &user, &[]);
    let mut asks = PermissionAsks::new(approved);
    let request = doom_loop_request(tool, &JsonObject::new());
    let outcome = asks.ask(
        PermissionId::new_unchecked("per_doomloop"),
        SessionId::new_unchecked("ses_doomloop"),
        request,
        None,
        &ruleset,
    );
    let action = match outcome {
        Ok(AskOutcome::Allowed) => "allow",
        Ok(AskOutcome::Pending) => "ask",
        Err(PermissionError::Denied { .. }) => "deny",
        Err(other) => return Err(format!("an ask cannot fail with {other}")),
    };
    Ok(json!({ "action": action }))
}
