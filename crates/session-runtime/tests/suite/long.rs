//! Long sessions: compaction that keeps a tail, tools that finish after an overflow
//! cut, the closing snapshot of a step with slow tools, and the reminder wrap, through the real
//! processor, store and tools with the in-process scripted provider.

use session_core::{FinishReason, Message, PartKind, ToolStatus, overflow::ModelLimit};

use super::support::{Recording, Setup, history, is_user, rig, say, scripted, text_of, tool_states};

/// A line the read tool returns whole (under its per-line limit).
fn long_line(n: usize) -> String {
    format!("{n:04} {}\n", "x".repeat(400))
}

#[tokio::test]
async fn spec_10_2_compaction_with_a_kept_tail_continues_the_run() {
    // usable = 20 000 − 2 000 = 18 000 tokens, so the tail budget is 4 500 tokens. The one user
    // turn holds a ~7 500-token read, so splitTurn keeps the suffix after it as the tail.
    let script = r#"{"turns": [
        {"text": "Reading the big file.", "calls": [{"op": "read", "path": "big.txt"}],
         "usage": {"prompt_tokens": 3000, "completion_tokens": 20}},
        {"text": "Now the notes.", "calls": [{"op": "read", "path": "notes.txt"}],
         "usage": {"prompt_tokens": 11000, "completion_tokens": 20}},
        {"text": "Once more.", "calls": [{"op": "read", "path": "notes.txt"}],
         "usage": {"prompt_tokens": 17990, "completion_tokens": 20}},
        {"text": "All done after the summary."}
    ],
    "exhausted_text": "All done after the summary."}"#;
    // The scripted model counts a summary as covering every turn so far (mockllm's rule), so
    // with a kept tail it answers the next request from `exhausted_text`.
    let provider = Recording::new(scripted(script));
    let mut setup = Setup::new(provider.clone());
    setup.limit = ModelLimit { context: 20_000, input: None, output: 2_000 };
    let rig = rig(setup).await;
    std::fs::write(rig.work.join("big.txt"), (0..70).map(long_line).collect::<String>()).unwrap();
    let session = rig.runtime.create_session(None).await.unwrap();
    let reply = rig.runtime.prompt(&session.id, say("tour the files")).await.unwrap();
    assert_eq!(reply.error, None, "{reply:?}");
    assert_eq!(reply.finish, Some(FinishReason::Stop));

    let messages = history(&rig.store, &session.id).await;
    let tails: Vec<_> = messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            PartKind::Compaction(c) => Some(c.tail_start_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(tails.len(), 1, "one compaction, not a second: {tails:?}");
    assert!(tails[0].is_some(), "the compaction kept a tail");
    let summaries = messages.iter().filter(|m| matches!(&m.info, Message::Assistant(a) if a.is_summary()));
    assert_eq!(summaries.count(), 1);
    let last = messages.last().unwrap();
    assert!(!is_user(last));
    assert_eq!(text_of(last), "All done after the summary.");
    assert_eq!(tool_states(&messages).iter().filter(|(_, s)| *s == ToolStatus::Completed).count(), 3);

    // The request after the summary: the summary pair, the kept tail verbatim, the continue text.
    let requests = provider.requests();
    assert_eq!(requests.len(), 5, "three steps, the summary, the step after it");
    let summary_request = serde_json::to_string(&requests[3].messages).unwrap();
    assert!(summary_request.contains("Reading the big file."), "the head is summarized");
    assert!(!summary_request.contains("Once more."), "the tail is not summarized");
    let after: Vec<String> = requests[4].messages.iter().map(|m| serde_json::to_string(m).unwrap()).collect();
    assert!(after[0].contains("What did we do so far?"), "{after:?}");
    assert!(after[1].contains("[mock-summary turn="), "{after:?}");
    assert!(after[2].contains("Now the notes."), "the tail starts at the split: {after:?}");
    assert!(after.iter().any(|m| m.contains("Once more.")));
    assert!(!after.iter().any(|m| m.contains("Reading the big file.") || m.contains("0001 xxx")));
    assert!(after.last().unwrap().contains("Continue if you have next steps"), "{after:?}");
}

/// The completed output of the first tool part named `tool`.
fn tool_output(messages: &[session_core::MessageWithParts], tool: &str) -> Option<String> {
    messages.iter().flat_map(|m| &m.parts).find_map(|p| match &p.kind {
        PartKind::Tool(t) if t.tool == tool => match &t.state {
            session_core::ToolState::Completed { output, .. } => Some(output.clone()),
            session_core::ToolState::Error { error, .. } => Some(format!("error: {error}")),
            _ => None,
        },
        _ => None,
    })
}

#[tokio::test]
async fn spec_8_a_tool_finishing_after_the_overflow_cut_is_recorded_completed() {
    // The step-finish overflows while the slow command still runs: its result is the tool's
    // output, and the summary request shows it, not "Tool execution aborted".
    let script = r#"{"turns": [
        {"text": "Running the slow check.",
         "calls": [{"op": "bash", "command": "sleep 0.4; echo finished-late", "description": "Slow check"}],
         "usage": {"prompt_tokens": 17990, "completion_tokens": 20}},
        {"text": "Checked."}
    ], "exhausted_text": "Checked."}"#;
    let provider = Recording::new(scripted(script));
    let mut setup = Setup::new(provider.clone());
    setup.limit = ModelLimit { context: 20_000, input: None, output: 2_000 };
    let rig = rig(setup).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let reply = rig.runtime.prompt(&session.id, say("check it")).await.unwrap();
    assert_eq!(reply.error, None, "{reply:?}");
    let messages = history(&rig.store, &session.id).await;
    let output = tool_output(&messages, "bash").expect("the bash call settled");
    assert!(output.contains("finished-late"), "{output}");
    let requests = provider.requests();
    let summary = requests.iter().find(|r| r.tools.is_empty()).expect("a summary request");
    let summary = serde_json::to_string(&summary.messages).unwrap();
    assert!(summary.contains("finished-late"), "{summary}");
    assert!(!summary.contains("Tool execution aborted"), "{summary}");
}

#[tokio::test]
async fn spec_13_the_step_patch_covers_a_file_a_slow_tool_writes() {
    let script = r#"{"turns": [
        {"text": "Writing slowly.",
         "calls": [{"op": "bash", "command": "sleep 0.3; echo late > late.txt", "description": "Slow write"}]},
        {"text": "Wrote it."}
    ]}"#;
    let mut setup = Setup::new(scripted(script));
    setup.snapshots = true;
    let rig = rig(setup).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    rig.runtime.prompt(&session.id, say("write slowly")).await.unwrap();
    assert!(rig.work.join("late.txt").exists());
    let messages = history(&rig.store, &session.id).await;
    let patched: Vec<String> = messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match &p.kind {
            PartKind::Patch(patch) => Some(patch.files.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert!(patched.iter().any(|f| f.ends_with("/late.txt")), "{patched:?}");
    let finish_snapshots = messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(&p.kind, PartKind::StepFinish(f) if f.snapshot.is_some()))
        .count();
    assert_eq!(finish_snapshots, 2, "both steps closed with a snapshot");

    // Reverting the turn removes the file the slow tool wrote.
    let assistant_id = messages[1].info.id().clone();
    rig.runtime.revert(&session.id, &assistant_id, None).await.unwrap();
    assert!(!rig.work.join("late.txt").exists(), "revert removed the slow tool's file");
}

#[tokio::test]
async fn spec_1_1_tool_calls_are_repaired_by_case_and_unknown_ones_run_as_invalid() {
    let script = r#"{"turns": [
        {"text": "Calling tools.", "calls": [
            {"name": "READ", "arguments": {"filePath": "notes.txt"}},
            {"name": "deploy", "arguments": {"env": "prod"}},
            {"name": "read", "arguments": {"offset": 3}}]},
        {"text": "Done."}
    ]}"#;
    let provider = Recording::new(scripted(script));
    let rig = rig(Setup::new(provider.clone())).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    rig.runtime.prompt(&session.id, say("use tools")).await.unwrap();
    let messages = history(&rig.store, &session.id).await;
    let tools: Vec<&session_core::ToolPart> = messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match &p.kind {
            PartKind::Tool(t) => Some(t),
            _ => None,
        })
        .collect();
    let names: Vec<(&str, ToolStatus)> = tools.iter().map(|t| (t.tool.as_str(), t.state.status())).collect();
    assert_eq!(
        names,
        [("read", ToolStatus::Completed), ("invalid", ToolStatus::Completed), ("read", ToolStatus::Error)]
    );
    let session_core::ToolState::Completed { input, output, .. } = &tools[1].state else { unreachable!() };
    assert_eq!(input.get("tool"), Some(&serde_json::json!("deploy")));
    let error = input.get("error").and_then(|e| e.as_str()).unwrap_or_default();
    // Every tool the model may call, `invalid` among them, in code-unit order (OpenCode 1.18.34).
    assert_eq!(
        error,
        "Model tried to call unavailable tool 'deploy'. Available tools: bash, edit, glob, grep, invalid, read, todowrite, write."
    );
    assert!(output.starts_with("The arguments provided to the tool are invalid: Model tried"), "{output}");
    let session_core::ToolState::Error { error, .. } = &tools[2].state else { unreachable!() };
    assert!(error.contains("invalid arguments"), "schema failures stay on the named tool: {error}");

    let requests = provider.requests();
    assert!(requests.iter().all(|r| r.tools.iter().all(|t| t.name != "invalid")), "invalid is never offered");
    let second = serde_json::to_string(&requests[1].messages).unwrap();
    assert!(second.contains(r#""toolName":"invalid""#) || second.contains(r#""name":"invalid""#), "{second}");
}

#[tokio::test]
async fn spec_14_the_todo_tool_publishes_todo_updated() {
    let script = r#"{"turns": [
        {"text": "Planning.", "calls": [{"name": "todowrite", "arguments": {"todos": [
            {"content": "Read the notes", "status": "in_progress", "priority": "high"},
            {"content": "Summarise", "status": "pending", "priority": "low"}]}}]},
        {"text": "Planned."}
    ]}"#;
    let rig = rig(Setup::new(scripted(script))).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let mut events = rig.runtime.bus().subscribe();
    rig.runtime.prompt(&session.id, say("plan it")).await.unwrap();
    let mut updates = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let session_runtime::BusEvent::TodoUpdated { session_id, todos } = &event {
            assert_eq!(session_id, &session.id);
            updates.push(todos.iter().map(|t| (t.content.clone(), t.status.clone())).collect::<Vec<_>>());
            let json = serde_json::to_value(session_runtime::wire::Event::bus(&event)).unwrap();
            assert_eq!(json["type"], "todo.updated");
            assert_eq!(json["properties"]["todos"][1]["priority"], "low");
        }
    }
    assert_eq!(
        updates,
        [vec![
            ("Read the notes".to_owned(), "in_progress".to_owned()),
            ("Summarise".to_owned(), "pending".to_owned())
        ]]
    );
}

#[tokio::test]
async fn spec_10_2_the_compaction_agents_model_writes_the_summary() {
    let script = r#"{"turns": [
        {"text": "Big step.", "usage": {"prompt_tokens": 17990, "completion_tokens": 20}},
        {"text": "After."}
    ], "exhausted_text": "After."}"#;
    let provider = Recording::new(scripted(script));
    let mut setup = Setup::new(provider.clone());
    setup.limit = ModelLimit { context: 20_000, input: None, output: 2_000 };
    setup.compaction_model = Some(session_core::ModelRef {
        provider_id: super::support::PROVIDER.into(),
        model_id: "summary-model".into(),
        variant: None,
    });
    let rig = rig(setup).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    rig.runtime.prompt(&session.id, say("go")).await.unwrap();
    let models: Vec<(bool, String)> =
        provider.requests().iter().map(|r| (r.tools.is_empty(), r.model.clone())).collect();
    assert_eq!(
        models,
        [
            (false, "mock-model".to_owned()),
            (true, "summary-model".to_owned()),
            (false, "mock-model".to_owned())
        ]
    );
    let messages = history(&rig.store, &session.id).await;
    let summary = messages
        .iter()
        .find_map(|m| match &m.info {
            Message::Assistant(a) if a.is_summary() => Some(a.model_id.clone()),
            _ => None,
        })
        .expect("a summary");
    assert_eq!(summary, "summary-model");
}
