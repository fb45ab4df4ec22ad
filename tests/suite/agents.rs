//! Agents and instructions as OpenCode users configure them, through `session run` against
//! the loopback provider: an agent's model in the request, the default agent's rules, markdown
//! agents in each folder, and instruction files from parent folders, the user's global file and
//! the `instructions` key.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use session_e2e::session_binary;
use session_llm::{Api, RequestKind, Script};
use session_testkit::{RecordedRequest, TestServer};

/// A trusted project at `root/project` whose `session.json` is the mock provider (models `m`
/// and `big`) with `extra` laid over it.
fn project(root: &Path, base_url: &str, extra: Value) -> PathBuf {
    let dir = root.join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("README.md"), "# app\n").unwrap();
    let mut config = json!({
        "model": "mock/m",
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": base_url, "apiKey": "test-key"},
            "models": {"m": {"limit": {"context": 32000, "output": 4000}},
                       "big": {"limit": {"context": 64000, "output": 4000}}}
        }}
    });
    if let (Value::Object(config), Value::Object(extra)) = (&mut config, extra) {
        config.extend(extra);
    }
    std::fs::write(dir.join("session.json"), config.to_string()).unwrap();
    session_testkit::trust_folder(root, &dir).unwrap();
    // The runs read the user's folder from XDG_CONFIG_HOME: the trust list goes there too.
    let trusted = std::fs::read(root.join(".config/session/trusted.json")).unwrap();
    std::fs::create_dir_all(root.join("xdg/session")).unwrap();
    std::fs::write(root.join("xdg/session/trusted.json"), trusted).unwrap();
    dir
}

/// Runs `session` in `cwd` with `HOME=root` and `XDG_CONFIG_HOME=root/xdg`.
async fn run_in(root: &Path, cwd: &Path, args: &[&str]) -> Output {
    let binary = session_binary().unwrap();
    let (root, cwd) = (root.to_path_buf(), cwd.to_path_buf());
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .args(&args)
            .current_dir(cwd)
            .env("HOME", &root)
            .env("XDG_CONFIG_HOME", root.join("xdg"))
            .env("XDG_DATA_HOME", root.join("data"))
            .env_remove("SESSION_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn main_requests(server: &TestServer) -> Vec<RecordedRequest> {
    server.requests().into_iter().filter(|r| r.kind == RequestKind::Main).collect()
}

/// The system prompt of an OpenAI Chat request.
fn system_prompt(request: &RecordedRequest) -> String {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_model_is_the_one_requested() {
    let server = TestServer::start(Script::from_json(r#"{"turns": [{"text": "Big answer."}]}"#).unwrap())
        .await
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = project(
        root.path(),
        &server.base_url(Api::OpenAiChat),
        json!({"agent": {"build": {"model": "mock/big", "temperature": 0.25}}}),
    );
    let out = run_in(root.path(), &dir, &["run", "hi"]).await;
    assert_ok(&out);
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].model.as_deref(), Some("big"));
    assert_eq!(requests[0].body["temperature"], json!(0.25));
    // --model still beats the agent's model.
    let out = run_in(root.path(), &dir, &["run", "--model", "mock/m", "hi"]).await;
    assert_ok(&out);
    assert_eq!(main_requests(&server).last().and_then(|r| r.model.clone()).as_deref(), Some("m"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_agents_rules_apply_and_agent_overrides_it() {
    let script = r#"{"turns": [{"text": "Locked."}, {"text": "Built."}]}"#;
    let server = TestServer::start(Script::from_json(script).unwrap()).await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let config = json!({
        "default_agent": "locked",
        "agent": {"locked": {"mode": "primary", "prompt": "You are locked.",
                             "permission": {"bash": "deny", "edit": "deny", "webfetch": "deny"}}}
    });
    let dir = project(root.path(), &server.base_url(Api::OpenAiChat), config);
    assert_ok(&run_in(root.path(), &dir, &["run", "hi"]).await);
    assert_ok(&run_in(root.path(), &dir, &["run", "--agent", "build", "hi"]).await);
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 2);
    let locked = &requests[0].tool_names;
    assert!(locked.contains(&"read".to_owned()), "{locked:?}");
    for denied in ["bash", "edit", "write", "webfetch"] {
        assert!(!locked.contains(&denied.to_owned()), "{denied} offered: {locked:?}");
    }
    assert!(system_prompt(&requests[0]).starts_with("You are locked."));
    let build = &requests[1].tool_names;
    assert!(build.contains(&"bash".to_owned()) && build.contains(&"edit".to_owned()), "{build:?}");

    // A default agent that cannot be a main agent is one clear error.
    let server2 = TestServer::start(Script::from_json(script).unwrap()).await.unwrap();
    let dir = project(root.path(), &server2.base_url(Api::OpenAiChat), json!({"default_agent": "explore"}));
    let out = run_in(root.path(), &dir, &["run", "hi"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("default_agent \"explore\"") && stderr.contains("subagent"), "{stderr}");
    server.shutdown().await;
    server2.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_markdown_agent_is_found_in_each_folder() {
    let turns = r#"{"turns": [{"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"}]}"#;
    let server = TestServer::start(Script::from_json(turns).unwrap()).await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = project(root.path(), &server.base_url(Api::OpenAiChat), json!({}));
    let agent = |marker: &str| {
        format!("---\ndescription: {marker}\nmodel: mock/big\n---\nYou are the {marker} agent.\n")
    };
    write(&dir.join(".session/agents/ours.md"), &agent("ours"));
    write(&dir.join(".opencode/agents/theirs.md"), &agent("theirs"));
    write(&dir.join(".opencode/agent/singular.md"), &agent("singular"));
    write(&root.path().join("xdg/session/agents/mine.md"), &agent("mine"));
    for name in ["ours", "theirs", "singular", "mine"] {
        assert_ok(&run_in(root.path(), &dir, &["run", "--agent", name, "hi"]).await);
    }
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 4);
    for (request, name) in requests.iter().zip(["ours", "theirs", "singular", "mine"]) {
        assert!(system_prompt(request).starts_with(&format!("You are the {name} agent.")), "{name}");
        assert_eq!(request.model.as_deref(), Some("big"), "{name}");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_markdown_agent_loses_its_allow_rules() {
    let server =
        TestServer::start(Script::from_json(r#"{"turns": [{"text": "ok"}]}"#).unwrap()).await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = project(root.path(), &server.base_url(Api::OpenAiChat), json!({}));
    // The user's own config is elsewhere; this project is not trusted.
    std::fs::remove_file(root.path().join("xdg/session/trusted.json")).ok();
    let config = std::fs::read_to_string(dir.join("session.json")).unwrap();
    std::fs::remove_file(dir.join("session.json")).unwrap();
    write(&root.path().join("xdg/session/config.json"), &config);
    write(&dir.join(".session/agents/sneaky.md"), "---\npermission:\n  bash: allow\n---\nRun anything.\n");
    let out = run_in(root.path(), &dir, &["run", "--agent", "sneaky", "hi"]).await;
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("agent.sneaky.permission.bash") && stderr.contains("not trusted"), "{stderr}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_come_from_parent_folders_the_global_file_and_the_key() {
    let server =
        TestServer::start(Script::from_json(r#"{"turns": [{"text": "ok"}]}"#).unwrap()).await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = project(
        root.path(),
        &server.base_url(Api::OpenAiChat),
        json!({"instructions": ["docs/*.md", "~/team-rules.md"]}),
    );
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let cwd = dir.join("crates/app");
    write(&dir.join("AGENTS.md"), "ROOT-RULES");
    write(&dir.join("crates/CLAUDE.md"), "CRATES-CLAUDE");
    write(&cwd.join("AGENTS.md"), "APP-RULES");
    write(&root.path().join("xdg/session/AGENTS.md"), "GLOBAL-RULES");
    write(&dir.join("docs/style.md"), "STYLE-GUIDE");
    write(&root.path().join("team-rules.md"), "TEAM-RULES");
    assert_ok(&run_in(root.path(), &cwd, &["run", "hi"]).await);
    let system = system_prompt(&main_requests(&server)[0]);
    let order: Vec<usize> =
        ["ROOT-RULES", "CRATES-CLAUDE", "APP-RULES", "GLOBAL-RULES", "STYLE-GUIDE", "TEAM-RULES"]
            .iter()
            .map(|marker| system.find(marker).unwrap_or_else(|| panic!("{marker} missing from:\n{system}")))
            .collect();
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{order:?}\n{system}");
    let root_agents = dir.join("AGENTS.md").canonicalize().unwrap_or_else(|_| dir.join("AGENTS.md"));
    assert!(
        system.contains(&format!("Instructions from: {}", dir.join("AGENTS.md").display()))
            || system.contains(&format!("Instructions from: {}", root_agents.display())),
        "{system}"
    );
    assert_eq!(system.matches("ROOT-RULES").count(), 1);
    server.shutdown().await;
}

/// The text of the last user message of an OpenAI Chat request.
fn last_user_text(request: &RecordedRequest) -> String {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let Some(user) = messages.iter().rev().find(|m| m["role"] == "user") else { return String::new() };
    match &user["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        other => other.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_runs_its_template_with_the_arguments() {
    let turns = r#"{"turns": [{"text": "Reviewed."}, {"text": "Hello."}, {"text": "Unused."}]}"#;
    let server = TestServer::start(Script::from_json(turns).unwrap()).await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let config =
        json!({"command": {"review": {"template": "Review $1 carefully, then $2.", "agent": "plan"}}});
    let dir = project(root.path(), &server.base_url(Api::OpenAiChat), config);
    write(
        &dir.join(".session/commands/hello.md"),
        "---\ndescription: Greets\nmodel: mock/big\n---\nSay hello to $ARGUMENTS.\n",
    );
    let out = run_in(root.path(), &dir, &["run", "--command", "review", "src/a.rs", "the tests"]).await;
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Reviewed."));
    assert_ok(&run_in(root.path(), &dir, &["run", "--command", "hello", "world"]).await);
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 2);
    assert_eq!(last_user_text(&requests[0]), "Review src/a.rs carefully, then the tests.");
    assert!(system_prompt(&requests[0]).starts_with("You are a planning agent."), "the plan agent ran");
    assert_eq!(last_user_text(&requests[1]), "Say hello to world.");
    assert_eq!(requests[1].model.as_deref(), Some("big"));
    // An unknown command is one clear error naming the ones there are.
    let out = run_in(root.path(), &dir, &["run", "--command", "nope"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Command not found: \"nope\"") && stderr.contains("review, hello"), "{stderr}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variant_reaches_each_providers_request_as_its_own_knob() {
    let server =
        TestServer::start(Script::from_json(r#"{"turns": [{"text": "Thought."}]}"#).unwrap()).await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let provider = |npm: &str, api: Api| {
        json!({"npm": npm, "options": {"baseURL": server.base_url(api), "apiKey": "test-key"},
               "models": {"r": {"reasoning": true, "limit": {"context": 64000, "output": 32000}},
                          "plain": {"limit": {"context": 64000, "output": 4000}}}})
    };
    let config = json!({
        "model": "chat/r",
        "provider": {
            "chat": provider("@ai-sdk/openai-compatible", Api::OpenAiChat),
            "responses": provider("@ai-sdk/openai", Api::OpenAiResponses),
            "claude": provider("@ai-sdk/anthropic", Api::Anthropic),
            "gem": provider("@ai-sdk/google", Api::Gemini)
        },
        "agent": {"deep": {"mode": "primary", "variant": "max", "model": "claude/r"}}
    });
    let dir = project(root.path(), &server.base_url(Api::OpenAiChat), config);
    for model in ["chat/r", "responses/r", "claude/r", "gem/r"] {
        assert_ok(&run_in(root.path(), &dir, &["run", "--model", model, "--variant", "high", "think"]).await);
    }
    // An agent's own variant.
    assert_ok(&run_in(root.path(), &dir, &["run", "--agent", "deep", "think"]).await);
    let bodies: Vec<Value> = main_requests(&server).into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 5);
    assert_eq!(bodies[0]["reasoning_effort"], "high", "{}", bodies[0]);
    assert_eq!(bodies[1]["reasoning"]["effort"], "high", "{}", bodies[1]);
    assert_eq!(bodies[2]["thinking"]["budget_tokens"], 16_000, "{}", bodies[2]);
    assert_eq!(bodies[3]["generationConfig"]["thinkingConfig"]["thinkingBudget"], 16_000, "{}", bodies[3]);
    assert_eq!(bodies[4]["thinking"]["budget_tokens"], 31_999, "{}", bodies[4]);

    // A model that does not reason, or a variant the provider does not take, is one clear error
    // and sends nothing.
    let out =
        run_in(root.path(), &dir, &["run", "--model", "chat/plain", "--variant", "high", "think"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a reasoning model"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out =
        run_in(root.path(), &dir, &["run", "--model", "claude/r", "--variant", "minimal", "think"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("low, medium, high, max"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(main_requests(&server).len(), 5);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_without_effect_warn_once_each_unless_silenced() {
    let server =
        TestServer::start(Script::from_json(r#"{"turns": [{"text": "a"}, {"text": "b"}]}"#).unwrap())
            .await
            .unwrap();
    let root = tempfile::tempdir().unwrap();
    let config = json!({"theme": "tokyonight", "lsp": {"rust": {"command": ["rust-analyzer"]}}, "plugin": ["x"],
                        "mcp": {}, "default_agent": "build", "instructions": []});
    let dir = project(root.path(), &server.base_url(Api::OpenAiChat), config);
    let out = run_in(root.path(), &dir, &["run", "hi"]).await;
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for key in ["theme", "lsp", "plugin"] {
        let line = format!("{key} is not supported here and has no effect");
        assert_eq!(stderr.matches(&line).count(), 1, "{key}: {stderr}");
    }
    for honoured in ["default_agent", "instructions", "mcp"] {
        assert!(!stderr.contains(honoured), "{honoured}: {stderr}");
    }
    let config = std::fs::read_to_string(dir.join("session.json")).unwrap();
    let mut config: Value = serde_json::from_str(&config).unwrap();
    config["warn_unsupported"] = json!(false);
    std::fs::write(dir.join("session.json"), config.to_string()).unwrap();
    let out = run_in(root.path(), &dir, &["run", "hi"]).await;
    assert_ok(&out);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("not supported"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.shutdown().await;
}
