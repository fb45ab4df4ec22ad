//! Skills end to end through `session run`: the `.opencode/skills` and
//! `.claude/skills` folders listed in the request, the `skill` tool's answer, a denied skill
//! kept out of sight, a skill's output surviving the prune, an invalid SKILL.md reported.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use session_e2e::session_binary;
use session_llm::{Api, RequestKind, Script};
use session_testkit::{RecordedRequest, TestServer};

/// `dir/project`, its config pointing at `base_url` with `extra` keys, two skills (one per
/// folder kind) and one of the user's in `dir/.agents/skills` (the tests' home is `dir`).
fn project(dir: &Path, base_url: &str, extra: Value) {
    let project = dir.join("project");
    let extra = extra.as_object().cloned().unwrap_or_default();
    session_e2e::mock_project_with(&project, base_url, 200_000, 4_000, extra).unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    write(
        &project.join(".opencode/skills/release/SKILL.md"),
        "---\nname: release\ndescription: Cuts a release of the app\n---\n\n# Release\n\nRun scripts/tag.sh.\n",
    );
    write(&project.join(".opencode/skills/release/scripts/tag.sh"), "git tag v1\n");
    write(
        &project.join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Fills PDF forms\nlicense: MIT\n---\n\nUse forms.py to fill the form.\n",
    );
    write(&project.join(".claude/skills/pdf/forms.py"), "print('fill')\n");
    write(
        &dir.join(".agents/skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: Takes notes the user's way\n---\nWrite notes tersely.\n",
    );
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

async fn run(dir: &Path, args: &[&str]) -> Output {
    let binary = session_binary().unwrap();
    let dir = dir.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .args(&args)
            .current_dir(dir.join("project"))
            .env("HOME", &dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("SESSION_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

fn main_requests(server: &TestServer) -> Vec<RecordedRequest> {
    server.requests().into_iter().filter(|r| r.kind == RequestKind::Main).collect()
}

fn system_text(request: &RecordedRequest) -> String {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The tool results the request sends back, in order.
fn tool_results(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

fn skill_call(name: &str) -> Value {
    json!({"name": "skill", "arguments": {"name": name}})
}

fn script(turns: Value) -> Script {
    Script::from_json(&json!({"turns": turns}).to_string()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_folders_are_listed_and_a_skill_call_returns_its_body_and_base_directory() {
    let server = TestServer::start(script(json!([{"calls": [skill_call("pdf")]}, {"text": "Filled."}])))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    project(&dir, &server.base_url(Api::OpenAiChat), json!({}));
    let stdout = ok(&run(&dir, &["run", "--model", "mock/m", "--format", "json", "fill the form"]).await);
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 2);
    let system = system_text(&requests[0]);
    let project = dir.join("project");
    for (name, file) in [
        ("notes", dir.join(".agents/skills/notes/SKILL.md")),
        ("pdf", project.join(".claude/skills/pdf/SKILL.md")),
        ("release", project.join(".opencode/skills/release/SKILL.md")),
    ] {
        assert!(system.contains(&format!("    <name>{name}</name>\n")), "{name}: {system}");
        assert!(system.contains(&format!("<location>{}</location>", file.display())), "{system}");
    }
    // By name, after the environment.
    let at = |name: &str| system.find(&format!("<name>{name}</name>")).unwrap();
    assert!(at("notes") < at("pdf") && at("pdf") < at("release"));
    assert!(system.find("<env>").unwrap() < system.find("<available_skills>").unwrap());
    assert!(tool_names(&requests[0]).contains(&"skill".to_owned()));
    let base = project.join(".claude/skills/pdf");
    assert_eq!(
        tool_results(&requests[1]),
        [format!(
            "<skill_content name=\"pdf\">\n# Skill: pdf\n\nUse forms.py to fill the form.\n\n\
             Base directory for this skill: {}\n\
             Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\n\
             Note: file list is sampled.\n\n<skill_files>\n<file>{}</file>\n</skill_files>\n</skill_content>",
            base.display(),
            base.join("forms.py").display()
        )]
    );
    let call = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["type"] == "tool_use")
        .unwrap();
    assert_eq!(call["part"]["state"]["title"], "Loaded skill: pdf");
    assert_eq!(call["part"]["state"]["metadata"]["name"], "pdf");
    assert_eq!(call["part"]["state"]["metadata"]["dir"], base.display().to_string());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_skill_is_neither_listed_nor_loadable() {
    let turns = json!([
        {"calls": [skill_call("release")]},
        {"calls": [skill_call("nope")]},
        {"text": "Done."}
    ]);
    let server = TestServer::start(script(turns)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let rules = json!({"permission": {"skill": {"release": "deny"}}});
    project(&dir, &server.base_url(Api::OpenAiChat), rules);
    ok(&run(&dir, &["run", "--model", "mock/m", "release it"]).await);
    let requests = main_requests(&server);
    let system = system_text(&requests[0]);
    assert!(system.contains("<name>pdf</name>") && !system.contains("release"), "{system}");
    let results = tool_results(&requests[2]);
    assert!(results[0].contains("prevents you from using this specific tool call"), "{results:?}");
    assert!(!results[0].contains("Release"), "{results:?}");
    assert_eq!(results[1], "Skill \"nope\" not found. Available skills: notes, pdf");
    server.shutdown().await;

    // `skill: deny` takes the tool away with the list.
    let server = TestServer::start(script(json!([{"text": "No skills."}]))).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), &server.base_url(Api::OpenAiChat), json!({"permission": {"skill": "deny"}}));
    ok(&run(dir.path(), &["run", "--model", "mock/m", "hi"]).await);
    let requests = main_requests(&server);
    assert!(!tool_names(&requests[0]).contains(&"skill".to_owned()));
    assert!(!system_text(&requests[0]).contains("available_skills"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_skill_file_is_reported_and_the_run_goes_on() {
    let server = TestServer::start(script(json!([{"text": "Fine."}]))).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    project(&dir, &server.base_url(Api::OpenAiChat), json!({}));
    let bad = dir.join("project/.opencode/skills/broken/SKILL.md");
    write(&bad, "---\nname: Broken Skill\ndescription: d\n---\nBody\n");
    let out = run(&dir, &["run", "--model", "mock/m", "hi"]).await;
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warning = format!("session: warning: {}: skill: the name \"Broken Skill\"", bad.display());
    assert_eq!(stderr.matches(&warning).count(), 1, "{stderr}");
    let system = system_text(&main_requests(&server)[0]);
    assert!(!system.contains("Broken"), "{system}");
    // `session skills list` shows the skills, where they came from, and the problem.
    let listed = ok(&run(&dir, &["skills", "list"]).await);
    assert!(listed.contains("pdf (project)\n  Fills PDF forms\n"), "{listed}");
    assert!(listed.contains("notes (yours)\n"), "{listed}");
    assert!(listed.contains(&format!("problems:\n  {}: the name", bad.display())), "{listed}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prune_clears_old_reads_but_keeps_the_skill_output() {
    let mut calls = vec![skill_call("release")];
    for i in 0..7 {
        calls.push(json!({"op": "read", "path": format!("big{i}.txt")}));
    }
    let turns = json!([
        {"calls": calls},
        {"text": "Read them all."},
        {"text": "Second."},
        {"text": "Third."},
        {"text": "Fourth."}
    ]);
    let server = TestServer::start(script(turns)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    project(&dir, &server.base_url(Api::OpenAiChat), json!({"compaction": {"prune": true}}));
    for i in 0..7 {
        // About 10 000 tokens each: the last four fill the protected 40 000.
        let line = |n: usize| format!("{i}{n:04} {}\n", "z".repeat(74));
        write(&dir.join(format!("project/big{i}.txt")), &(0..500).map(line).collect::<String>());
    }
    let first = ok(&run(&dir, &["run", "--model", "mock/m", "--format", "json", "read everything"]).await);
    let session = first
        .lines()
        .find_map(|l| serde_json::from_str::<Value>(l).ok()?["sessionID"].as_str().map(str::to_owned))
        .unwrap();
    for prompt in ["second", "third", "fourth"] {
        ok(&run(&dir, &["run", "--model", "mock/m", "--continue", prompt]).await);
    }
    let exported: Value =
        serde_json::from_str(&ok(&run(&dir, &["sessions", "export", &session]).await)).unwrap();
    let tools: Vec<&Value> = exported["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .filter(|p| p["type"] == "tool")
        .collect();
    let compacted = |tool: &Value| tool["state"]["time"]["compacted"].is_number();
    assert_eq!(tools[0]["tool"], "skill");
    assert!(!compacted(tools[0]), "{}", tools[0]);
    assert!(tools.iter().filter(|t| t["tool"] == "read").any(|t| compacted(t)), "nothing was pruned");
    // The last request sends old reads cleared and the skill's output whole.
    let requests = main_requests(&server);
    let results = tool_results(requests.last().unwrap());
    assert!(
        results[0].starts_with("<skill_content name=\"release\">\n# Skill: release\n\n# Release"),
        "{results:?}"
    );
    assert!(results.iter().any(|r| r == "[Old tool result content cleared]"), "{results:?}");
    server.shutdown().await;
}
