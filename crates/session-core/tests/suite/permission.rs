//! Permission rules: wildcards, evaluation, configuration, agents, disabled tools and asks.

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;
use session_core::{
    PermissionId, SessionId, permission::Action, permission::AgentPaths, permission::AskOutcome,
    permission::BuiltinAgent, permission::PERMISSION_DENIED_PREFIX, permission::PermissionAsks,
    permission::PermissionConfigError, permission::PermissionError, permission::PermissionRequest,
    permission::QuestionRejectedError, permission::Reply, permission::Resolution, permission::Rule,
    permission::agent_ruleset, permission::default_rules, permission::disabled_tools,
    permission::doom_loop_request, permission::evaluate, permission::matching_rule,
    permission::rules_from_config, permission::wildcard_match,
};

fn rule(permission: &str, pattern: &str, action: Action) -> Rule {
    Rule::new(permission, pattern, action)
}

/// OpenCode's own construction: a regex with `*` as `.*`, `?` as `.`, the rest literal, and a
/// trailing " *" made optional.
fn reference_match(text: &str, pattern: &str) -> bool {
    let text = text.replace('\\', "/");
    let pattern = pattern.replace('\\', "/");
    let mut regex = String::from("^");
    for ch in pattern.chars() {
        match ch {
            '*' => regex.push_str(".*"),
            '?' => regex.push('.'),
            other => regex.push_str(&regex::escape(&other.to_string())),
        }
    }
    if regex.ends_with(" .*") {
        regex.truncate(regex.len() - 3);
        regex.push_str("( .*)?");
    }
    regex.push('$');
    let regex = regex::RegexBuilder::new(&regex).dot_matches_new_line(true).build();
    regex.unwrap_or_else(|e| panic!("{e}")).is_match(&text)
}

proptest! {
    #[test]
    fn star_matches_everything(text in any::<String>()) {
        prop_assert!(wildcard_match(&text, "*"));
        prop_assert!(wildcard_match(&text, "**"));
        prop_assert!(wildcard_match(&text, &text.replace(['*', '?'], "?")));
    }

    #[test]
    fn never_panics(text in any::<String>(), pattern in any::<String>()) {
        let _ = wildcard_match(&text, &pattern);
    }

    #[test]
    fn agrees_with_the_regex_construction(
        text in "[ab/\\\\ .*?\n]{0,10}",
        pattern in "[ab/\\\\ .*?\n]{0,8}",
    ) {
        prop_assert_eq!(wildcard_match(&text, &pattern), reference_match(&text, &pattern), "{:?} {:?}", text, pattern);
    }

    #[test]
    fn literal_patterns_match_only_themselves(text in "[a-z./ -]{0,12}", other in "[a-z./ -]{0,12}") {
        prop_assume!(!text.ends_with(" *"));
        prop_assert!(wildcard_match(&text, &text));
        prop_assert_eq!(wildcard_match(&other, &text), other == text);
    }
}

#[test]
fn wildcard_table() {
    let table: &[(&str, &str, bool)] = &[
        ("/home/u/.env", "*.env", true),
        ("/home/u/.env.local", "*.env.*", true),
        ("/home/u/.env.example", "*.env.example", true),
        ("C:\\work\\a.ts", "C:/work/*", true),
        ("git status", "git *", true),
        ("git", "git *", true),
        ("gitk", "git *", false),
        ("read", "rea?", true),
        ("read", "r?", false),
        ("READ", "read", false),
        ("a/b/c", "a/*", true),
        ("", "", true),
        ("x", "", false),
        ("", "?", false),
        ("é", "?", true),
    ];
    for (text, pattern, expected) in table {
        assert_eq!(wildcard_match(text, pattern), *expected, "{text:?} ~ {pattern:?}");
    }
}

#[test]
fn last_match_wins_and_no_match_asks() {
    let base = vec![
        rule("*", "*", Action::Allow),
        rule("bash", "*", Action::Ask),
        rule("bash", "git *", Action::Allow),
    ];
    let approved = vec![rule("bash", "rm *", Action::Deny)];
    let table: &[(&str, &str, Action)] = &[
        ("read", "/a", Action::Allow),
        ("bash", "ls", Action::Ask),
        ("bash", "git log", Action::Allow),
        ("bash", "git", Action::Allow),
        ("bash", "rm -rf /", Action::Deny),
    ];
    for (permission, pattern, expected) in table {
        assert_eq!(evaluate(permission, pattern, &[&base, &approved]), *expected, "{permission} {pattern}");
    }
    assert_eq!(evaluate("read", "/a", &[]), Action::Ask);
    assert_eq!(evaluate("read", "/a", &[&[rule("edit", "*", Action::Allow)]]), Action::Ask);
    assert_eq!(matching_rule("bash", "git x", &[&base, &approved]), Some(&base[2]));
}

#[test]
fn config_converts_in_written_order() {
    let config = serde_json::from_str(
        r#"{"edit": {"*": "deny", "src/*": "allow", "~/notes/*": "ask"}, "*": "allow", "bash": "ask"}"#,
    )
    .unwrap();
    assert_eq!(
        rules_from_config(&config, Some("/home/u")).unwrap(),
        vec![
            rule("edit", "*", Action::Deny),
            rule("edit", "src/*", Action::Allow),
            rule("edit", "/home/u/notes/*", Action::Ask),
            rule("*", "*", Action::Allow),
            rule("bash", "*", Action::Ask),
        ]
    );
    assert_eq!(rules_from_config(&json!("deny"), None).unwrap(), vec![rule("*", "*", Action::Deny)]);
    assert_eq!(
        rules_from_config(&json!({"read": {"$HOME/x": "allow", "~": "ask"}}), Some("/h")).unwrap(),
        vec![rule("read", "/h/x", Action::Allow), rule("read", "/h", Action::Ask)]
    );
    assert_eq!(
        rules_from_config(&json!({"read": {"~/x": "allow"}}), None).unwrap(),
        vec![rule("read", "~/x", Action::Allow)]
    );
}

#[test]
fn invalid_config_names_the_key() {
    assert_eq!(
        rules_from_config(&json!({"bash": "maybe"}), None),
        Err(PermissionConfigError::InvalidRule { key: "bash".into(), found: "\"maybe\"".into() })
    );
    assert_eq!(
        rules_from_config(&json!({"bash": 3}), None),
        Err(PermissionConfigError::InvalidRule { key: "bash".into(), found: "number".into() })
    );
    assert_eq!(
        rules_from_config(&json!({"edit": {"*": true}}), None),
        Err(PermissionConfigError::InvalidAction {
            key: "edit".into(),
            pattern: "*".into(),
            found: "boolean".into()
        })
    );
    assert!(matches!(rules_from_config(&json!([1]), None), Err(PermissionConfigError::NotAnObject { .. })));
    let message = rules_from_config(&json!({"webfetch": null}), None).unwrap_err().to_string();
    assert!(message.contains("\"webfetch\""), "{message}");
}

#[test]
fn builtin_agents_and_doom_loop() {
    let paths = AgentPaths::default();
    let table: &[(BuiltinAgent, Action)] = &[
        (BuiltinAgent::Build, Action::Ask),
        (BuiltinAgent::Plan, Action::Ask),
        (BuiltinAgent::General, Action::Ask),
        (BuiltinAgent::Explore, Action::Deny),
        (BuiltinAgent::Compaction, Action::Deny),
        (BuiltinAgent::Title, Action::Deny),
        (BuiltinAgent::Summary, Action::Deny),
    ];
    for (agent, expected) in table {
        let rules = agent_ruleset(Some(*agent), &paths, &[], &[]);
        assert_eq!(evaluate("doom_loop", "read", &[&rules]), *expected, "{}", agent.name());
        assert_eq!(BuiltinAgent::from_name(agent.name()), Some(*agent));
    }
    assert_eq!(BuiltinAgent::from_name("nope"), None);
    // The user's "*": "allow" comes after the defaults and silences doom_loop...
    let user = rules_from_config(&json!({"*": "allow"}), None).unwrap();
    assert_eq!(
        evaluate("doom_loop", "x", &[&agent_ruleset(Some(BuiltinAgent::Build), &paths, &user, &[])]),
        Action::Allow
    );
    // ...unless doom_loop is listed again after it.
    let user = rules_from_config(&json!({"*": "allow", "doom_loop": "ask"}), None).unwrap();
    assert_eq!(
        evaluate("doom_loop", "x", &[&agent_ruleset(Some(BuiltinAgent::Build), &paths, &user, &[])]),
        Action::Ask
    );
    // A configured agent has only the defaults before the user's rules.
    assert_eq!(agent_ruleset(None, &paths, &[], &[]), default_rules(&paths));
}

#[test]
fn builtin_agent_rules_for_tools_and_paths() {
    let paths = AgentPaths {
        tool_output_glob: Some("/data/tool-output/*".into()),
        skill_globs: vec!["/skills/a/*".into()],
        plans_glob: Some("/data/plans/*".into()),
        plans_relative_glob: Some("../data/plans/*.md".into()),
    };
    let build = agent_ruleset(Some(BuiltinAgent::Build), &paths, &[], &[]);
    let plan = agent_ruleset(Some(BuiltinAgent::Plan), &paths, &[], &[]);
    let explore = agent_ruleset(Some(BuiltinAgent::Explore), &paths, &[], &[]);
    let general = agent_ruleset(Some(BuiltinAgent::General), &paths, &[], &[]);
    let table: &[(&str, &Vec<Rule>, &str, &str, Action)] = &[
        ("build", &build, "edit", "src/a.ts", Action::Allow),
        ("build", &build, "read", "/w/.env", Action::Ask),
        ("build", &build, "read", "/w/.env.production", Action::Ask),
        ("build", &build, "read", "/w/.env.example", Action::Allow),
        ("build", &build, "question", "*", Action::Allow),
        ("build", &build, "plan_enter", "*", Action::Allow),
        ("build", &build, "plan_exit", "*", Action::Deny),
        ("build", &build, "external_directory", "/etc/x", Action::Ask),
        ("build", &build, "external_directory", "/data/tool-output/t1", Action::Allow),
        ("build", &build, "external_directory", "/skills/a/SKILL.md", Action::Allow),
        ("plan", &plan, "edit", "src/a.ts", Action::Deny),
        ("plan", &plan, "edit", ".opencode/plans/p.md", Action::Allow),
        ("plan", &plan, "edit", "../data/plans/p.md", Action::Allow),
        ("plan", &plan, "external_directory", "/data/plans/p.md", Action::Allow),
        ("plan", &plan, "plan_exit", "*", Action::Allow),
        ("explore", &explore, "edit", "a", Action::Deny),
        ("explore", &explore, "bash", "ls", Action::Allow),
        ("explore", &explore, "read", "/w/.env", Action::Allow),
        ("explore", &explore, "todowrite", "*", Action::Deny),
        ("explore", &explore, "external_directory", "/etc/x", Action::Ask),
        ("explore", &explore, "external_directory", "/data/tool-output/t1", Action::Allow),
        ("general", &general, "todowrite", "*", Action::Deny),
        ("general", &general, "question", "*", Action::Deny),
    ];
    for (name, rules, permission, pattern, expected) in table {
        assert_eq!(evaluate(permission, pattern, &[rules]), *expected, "{name}: {permission} {pattern}");
    }
    // The tool-output allow comes last unless a rule denies exactly that folder.
    assert_eq!(build.last(), Some(&rule("external_directory", "/data/tool-output/*", Action::Allow)));
    let user = vec![rule("external_directory", "/data/tool-output/*", Action::Deny)];
    let denied = agent_ruleset(Some(BuiltinAgent::Build), &paths, &user, &[]);
    assert_eq!(denied.last(), Some(&user[0]));
}

#[test]
fn disabled_tools_follow_the_last_rule_for_the_permission() {
    let rules = vec![
        rule("*", "*", Action::Allow),
        rule("edit", "*", Action::Deny),
        rule("bash", "*", Action::Deny),
        rule("bash", "ls", Action::Allow),
        rule("web*", "*", Action::Deny),
    ];
    let disabled =
        disabled_tools(["read", "edit", "write", "apply_patch", "bash", "webfetch", "grep"], &rules);
    let expected: Vec<&str> = vec!["apply_patch", "edit", "webfetch", "write"];
    assert_eq!(disabled.iter().map(String::as_str).collect::<Vec<_>>(), expected);
    let plan = agent_ruleset(Some(BuiltinAgent::Plan), &AgentPaths::default(), &[], &[]);
    // plan's last edit rule allows plan files, so edit stays available.
    assert!(disabled_tools(["edit"], &plan).is_empty());
    let title = agent_ruleset(Some(BuiltinAgent::Title), &AgentPaths::default(), &[], &[]);
    assert_eq!(disabled_tools(vec!["read".to_owned()], &title).len(), 1);
}

fn id(n: u32) -> PermissionId {
    PermissionId::new_unchecked(format!("per_{n}"))
}

fn session(name: &str) -> SessionId {
    SessionId::new_unchecked(format!("ses_{name}"))
}

fn request(permission: &str, patterns: &[&str], always: &[&str]) -> PermissionRequest {
    PermissionRequest {
        permission: permission.into(),
        patterns: patterns.iter().map(|p| p.to_string()).collect(),
        always: always.iter().map(|p| p.to_string()).collect(),
        metadata: Default::default(),
    }
}

#[test]
fn ask_allows_denies_or_waits() {
    let ruleset = vec![
        rule("*", "*", Action::Allow),
        rule("bash", "*", Action::Ask),
        rule("bash", "rm *", Action::Deny),
    ];
    let mut asks = PermissionAsks::new(vec![rule("bash", "ls", Action::Allow)]);
    assert_eq!(
        asks.ask(id(1), session("a"), request("read", &["/a"], &[]), None, &ruleset),
        Ok(AskOutcome::Allowed)
    );
    assert_eq!(
        asks.ask(id(2), session("a"), request("bash", &["ls"], &[]), None, &ruleset),
        Ok(AskOutcome::Allowed)
    );
    assert_eq!(
        asks.ask(id(3), session("a"), request("bash", &[], &[]), None, &ruleset),
        Ok(AskOutcome::Allowed)
    );
    let denied = asks.ask(id(4), session("a"), request("bash", &["ls", "rm -rf x"], &[]), None, &ruleset);
    let expected_rules = vec![ruleset[0].clone(), ruleset[1].clone(), ruleset[2].clone()];
    assert_eq!(denied, Err(PermissionError::Denied { rules: expected_rules }));
    assert!(asks.pending().is_empty());
    assert_eq!(
        asks.ask(id(5), session("a"), request("bash", &["pwd"], &["pwd"]), None, &ruleset),
        Ok(AskOutcome::Pending)
    );
    assert_eq!(asks.pending().len(), 1);
    assert_eq!(asks.pending()[0].id, id(5));
}

#[test]
fn reply_always_approves_and_settles_other_allowed_asks_of_the_session() {
    let ruleset = vec![rule("*", "*", Action::Ask)];
    let mut asks = PermissionAsks::default();
    for (n, who, tool) in [(1, "a", "read"), (2, "a", "read"), (3, "a", "bash"), (4, "b", "read")] {
        let outcome =
            asks.ask(id(n), session(who), doom_loop_request(tool, &Default::default()), None, &ruleset);
        assert_eq!(outcome, Ok(AskOutcome::Pending));
    }
    let resolutions = asks.reply(&id(1), Reply::Always, None);
    assert_eq!(
        resolutions,
        vec![
            Resolution { request_id: id(1), session_id: session("a"), reply: Reply::Always, result: Ok(()) },
            Resolution { request_id: id(2), session_id: session("a"), reply: Reply::Always, result: Ok(()) },
        ]
    );
    assert_eq!(asks.approved(), &[rule("doom_loop", "read", Action::Allow)]);
    assert_eq!(asks.pending().iter().map(|a| a.id.clone()).collect::<Vec<_>>(), vec![id(3), id(4)]);
    // The approved rule now answers later asks silently.
    let again = asks.ask(id(5), session("a"), doom_loop_request("read", &Default::default()), None, &ruleset);
    assert_eq!(again, Ok(AskOutcome::Allowed));
    // A reply to an unknown or settled ask does nothing.
    assert!(asks.reply(&id(1), Reply::Once, None).is_empty());
    assert_eq!(
        asks.reply(&id(3), Reply::Once, None),
        vec![Resolution { request_id: id(3), session_id: session("a"), reply: Reply::Once, result: Ok(()) }]
    );
    assert_eq!(asks.approved().len(), 1);
}

#[test]
fn reply_reject_rejects_every_pending_ask_of_the_session() {
    let ruleset = vec![rule("*", "*", Action::Ask)];
    let mut asks = PermissionAsks::default();
    for (n, who) in [(1, "a"), (2, "b"), (3, "a")] {
        asks.ask(id(n), session(who), request("edit", &["x"], &["x"]), None, &ruleset).unwrap();
    }
    let resolutions = asks.reply(&id(3), Reply::Reject, Some("use the other file"));
    assert_eq!(
        resolutions,
        vec![
            Resolution {
                request_id: id(3),
                session_id: session("a"),
                reply: Reply::Reject,
                result: Err(PermissionError::Corrected { feedback: "use the other file".into() }),
            },
            Resolution {
                request_id: id(1),
                session_id: session("a"),
                reply: Reply::Reject,
                result: Err(PermissionError::Rejected),
            },
        ]
    );
    assert_eq!(asks.pending().len(), 1);
    let last = asks.reply(&id(2), Reply::Reject, Some(""));
    assert_eq!(last[0].result, Err(PermissionError::Rejected));
    assert!(asks.pending().is_empty());
    asks.ask(id(9), session("c"), request("edit", &["x"], &[]), None, &ruleset).unwrap();
    assert_eq!(asks.cancel(&id(9)).map(|a| a.id), Some(id(9)));
    assert_eq!(asks.cancel(&id(9)), None);
}

#[test]
fn error_texts() {
    assert_eq!(
        PermissionError::Rejected.to_string(),
        "The user rejected permission to use this specific tool call."
    );
    assert_eq!(
        PermissionError::Corrected { feedback: "no".into() }.to_string(),
        "The user rejected permission to use this specific tool call with the following feedback: no"
    );
    let denied = PermissionError::Denied {
        rules: vec![rule("*", "*", Action::Allow), rule("doom_loop", "*", Action::Deny)],
    };
    assert_eq!(
        denied.to_string(),
        "The user has specified a rule which prevents you from using this specific tool call. Here are some of the \
         relevant rules [{\"permission\":\"*\",\"pattern\":\"*\",\"action\":\"allow\"},\
         {\"permission\":\"doom_loop\",\"pattern\":\"*\",\"action\":\"deny\"}]"
    );
    assert!(denied.to_string().starts_with(PERMISSION_DENIED_PREFIX));
    assert_eq!(QuestionRejectedError.to_string(), "The user dismissed this question");
}

#[test]
fn ask_serializes_like_opencode() {
    let ask = session_core::permission::PermissionAsk {
        id: id(1),
        session_id: session("a"),
        request: doom_loop_request("read", &serde_json::from_value(json!({"filePath": "/a"})).unwrap()),
        tool: Some(session_core::permission::ToolCallRef {
            message_id: session_core::MessageId::new_unchecked("msg_1"),
            call_id: "call_1".into(),
        }),
    };
    assert_eq!(
        serde_json::to_value(&ask).unwrap(),
        json!({"id": "per_1", "sessionID": "ses_a", "permission": "doom_loop", "patterns": ["read"],
               "always": ["read"], "metadata": {"tool": "read", "input": {"filePath": "/a"}},
               "tool": {"messageID": "msg_1", "callID": "call_1"}})
    );
    assert_eq!(serde_json::to_value(Reply::Always).unwrap(), json!("always"));
    assert_eq!(
        serde_json::to_value(rule("a", "b", Action::Deny)).unwrap(),
        json!({"permission": "a", "pattern": "b", "action": "deny"})
    );
}

#[test]
fn ask_anyway_records_an_allowed_ask_that_approved_rules_never_settle() {
    let ruleset = vec![rule("*", "*", Action::Allow), rule("bash", "rm *", Action::Deny)];
    let mut asks = PermissionAsks::default();
    assert!(matches!(
        asks.ask_anyway(id(1), session("a"), request("bash", &["ls", "rm x"], &[]), None, &ruleset),
        Err(PermissionError::Denied { .. })
    ));
    assert_eq!(
        asks.check_denied(&request("bash", &["ls", "rm x"], &[]), &ruleset),
        Err(PermissionError::Denied { rules: ruleset.clone() })
    );
    assert_eq!(asks.check_denied(&request("bash", &["ls"], &[]), &ruleset), Ok(()));
    assert_eq!(asks.deciding_rule("bash", "rm -rf x", &ruleset), Some(&ruleset[1]));
    assert_eq!(
        asks.ask_anyway(id(2), session("a"), request("bash", &["ls"], &["ls *"]), None, &ruleset),
        Ok(AskOutcome::Pending)
    );
    assert!(asks.is_insisted(&id(2)));
    let ask_all = vec![rule("*", "*", Action::Ask)];
    assert_eq!(
        asks.ask(id(3), session("a"), request("bash", &["ls"], &["ls *"]), None, &ask_all),
        Ok(AskOutcome::Pending)
    );
    // "always" on the ordinary ask settles only itself.
    assert_eq!(asks.reply(&id(3), Reply::Always, None).len(), 1);
    assert_eq!(asks.pending().len(), 1);
    assert_eq!(
        asks.reply(&id(2), Reply::Once, None),
        vec![Resolution { request_id: id(2), session_id: session("a"), reply: Reply::Once, result: Ok(()) }]
    );
    assert!(!asks.is_insisted(&id(2)));
}
