//! The scripted work both agents do: the behaviours a model, a client or a user notices. Every
//! turn states its usage (an estimate would count each agent's own prompt wording).

use std::path::Path;
use std::process::Command;

use bytes::Bytes;
use serde_json::{Value, json};
use session_llm::Script;

/// One piece of scripted work.
pub(crate) struct Case {
    /// Its name, as the allow lists name it.
    pub name: &'static str,
    /// The behaviour it shows.
    pub about: &'static str,
    /// The first prompt: one word (`opencode run` quotes words that hold spaces).
    pub prompt: &'static str,
    /// A second prompt, run with `--continue`.
    pub then: Option<&'static str>,
    script: Value,
    recorded: Vec<(usize, String)>,
    files: Vec<(&'static str, String)>,
    config: Value,
    /// Path patterns whose differences no allowance explains in this case.
    pub exact: Vec<&'static str>,
    /// The HTTP calls to make through `opencode serve` and `session serve` instead of `run`.
    pub serve: Option<ServeSteps>,
}

/// What a case does through each agent's HTTP server: create a session, post the prompt, and
/// maybe revert it.
pub(crate) struct ServeSteps {
    /// Fields added to the body of `POST /session/{id}/message` (e.g. `format`).
    pub message: Value,
    /// Then `POST /session/{id}/revert` to the prompt's user message.
    pub revert: bool,
}

impl Case {
    fn new(name: &'static str, about: &'static str, prompt: &'static str, turns: Value) -> Self {
        Self {
            name,
            about,
            prompt,
            then: None,
            script: json!({"chunk_chars": 16, "title": "Oracle title", "turns": turns}),
            recorded: Vec::new(),
            files: Vec::new(),
            config: json!({}),
            exact: Vec::new(),
            serve: None,
        }
    }

    /// Runs the case through the HTTP servers (see [`ServeSteps`]).
    fn serve(mut self, message: Value, revert: bool) -> Self {
        self.serve = Some(ServeSteps { message, revert });
        self
    }

    /// Differences under `pattern` fail this case even where an allowance lists them for
    /// every case (what the case is about must agree).
    fn exact(mut self, pattern: &'static str) -> Self {
        self.exact.push(pattern);
        self
    }

    /// Turn `turn` (0-based) streams `sse` (OpenAI Chat chunks) as recorded.
    fn sse(mut self, turn: usize, sse: String) -> Self {
        self.recorded.push((turn, sse));
        self
    }

    fn file(mut self, path: &'static str, text: impl Into<String>) -> Self {
        self.files.push((path, text.into()));
        self
    }

    /// Top-level config keys laid over the base config (objects merged one level deep).
    fn config(mut self, extra: Value) -> Self {
        self.config = extra;
        self
    }

    fn then(mut self, prompt: &'static str) -> Self {
        self.then = Some(prompt);
        self
    }

    /// Every chunk of every turn `seconds` after the one before (a model's pace).
    fn paced(mut self, seconds: f64) -> Self {
        self.script["chunk_delay"] = json!(seconds);
        self
    }

    fn faults(mut self, faults: Value) -> Self {
        self.script["faults"] = faults;
        self
    }

    /// The script as JSON, every turn given a usage when it has none.
    pub(crate) fn script_json(&self) -> String {
        let mut script = self.script.clone();
        if let Some(turns) = script["turns"].as_array_mut() {
            for turn in turns.iter_mut().filter(|t| t.get("usage").is_none()) {
                turn["usage"] = json!({"prompt_tokens": 1000, "completion_tokens": 20});
            }
        }
        script.to_string()
    }

    /// `script` with the recorded turns in place.
    pub(crate) fn with_recorded(&self, mut script: Script) -> Script {
        for (turn, sse) in &self.recorded {
            script.turns[*turn].recorded = Some(Bytes::from(sse.clone()));
        }
        script
    }

    /// The project: the case's files, committed to a fresh git repository.
    pub(crate) fn write_project(&self, project: &Path) {
        std::fs::create_dir_all(project).unwrap();
        std::fs::write(project.join("README.md"), "# Oracle project\n\nA project both agents work in.\n")
            .unwrap();
        for (path, text) in &self.files {
            let path = project.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .args(["-c", "user.email=oracle@example.invalid", "-c", "user.name=oracle"])
                .args(args)
                .current_dir(project)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-qm", "init"]);
    }

    /// The config both agents read (OpenCode's schema), pointing at `base_url`.
    pub(crate) fn config_for(&self, base_url: &str) -> Value {
        let mut config = json!({
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": false,
            "share": "disabled",
            "lsp": false,
            "formatter": false,
            "model": "mock/m",
            "small_model": "mock/m",
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": base_url, "apiKey": "test-key"},
                "models": {"m": {"name": "M", "tool_call": true, "limit": {"context": 32000, "output": 4000}}}
            }},
            "permission": {"bash": "allow", "edit": "allow", "external_directory": "allow", "webfetch": "deny"}
        });
        if let Some(extra) = self.config.as_object() {
            for (key, value) in extra {
                match (config.get_mut(key), value) {
                    (Some(Value::Object(base)), Value::Object(more)) if key != "provider" => {
                        base.extend(more.clone());
                    }
                    _ => config[key] = value.clone(),
                }
            }
        }
        let text = config.to_string().replace("{base_url}", base_url);
        serde_json::from_str(&text).unwrap()
    }
}

/// An OpenAI Chat stream chunk with `delta` and `finish`.
fn chunk(delta: Value, finish: Option<&str>) -> String {
    let body = json!({"id": "chatcmpl-oracle", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {body}\n\n")
}

/// The end of a stream: a usage chunk and `[DONE]`.
fn done(prompt: u64, completion: u64) -> String {
    let body = json!({"id": "chatcmpl-oracle", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": prompt + completion}});
    format!("data: {body}\n\ndata: [DONE]\n\n")
}

/// The end of a stream whose usage gives its own `total_tokens`.
fn done_with_total(prompt: u64, completion: u64, total: u64) -> String {
    let body = json!({"id": "chatcmpl-oracle", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": total}});
    format!("data: {body}\n\ndata: [DONE]\n\n")
}

/// A recorded stream of text ending with `finish`.
fn text_stream(text: &str, finish: &str) -> String {
    chunk(json!({"role": "assistant", "content": text}), None)
        + &chunk(json!({}), Some(finish))
        + &done(1000, 20)
}

/// A recorded stream of one tool call (arguments given as raw text) ending with `finish`.
fn call_stream(name: &str, arguments: &str, finish: &str) -> String {
    chunk(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_r", "type": "function",
        "function": {"name": name, "arguments": ""}}]}),
        None,
    ) + &chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}), None)
        + &chunk(json!({}), Some(finish))
        + &done(1000, 20)
}

fn bash(command: &str) -> Value {
    json!({"name": "bash", "arguments": {"command": command, "description": "Run it"}})
}

fn done_turn() -> Value {
    json!({"text": "Done."})
}

/// Every case, in a fixed order.
pub(crate) fn all() -> Vec<Case> {
    let interleaved = chunk(json!({"role": "assistant", "reasoning_content": "First thought. "}), None)
        + &chunk(json!({"content": "Part one. "}), None)
        + &chunk(json!({"reasoning_content": "Second thought."}), None)
        + &chunk(json!({"content": "Part two."}), None)
        + &chunk(json!({}), Some("stop"))
        + &done(1000, 20);
    let parallel = chunk(
        json!({"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "bash", "arguments": ""}}]}),
        None,
    ) + &chunk(
        json!({"tool_calls": [
            {"index": 1, "id": "call_b", "type": "function", "function": {"name": "bash", "arguments": ""}}]}),
        None,
    ) + &chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\": \"echo a"}}]}),
        None,
    ) + &chunk(
        json!({"tool_calls": [{"index": 1, "function": {"arguments": "{\"command\": \"echo b"}}]}),
        None,
    ) + &chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "\", \"description\": \"A\"}"}}]}),
        None,
    ) + &chunk(
        json!({"tool_calls": [{"index": 1, "function": {"arguments": "\", \"description\": \"B\"}"}}]}),
        None,
    ) + &chunk(json!({}), Some("tool_calls"))
        + &done(1000, 20);
    let reasoning_call = chunk(
        json!({"role": "assistant", "reasoning_content": "I should list the files."}),
        None,
    ) + &chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_t", "type": "function",
            "function": {"name": "bash", "arguments": "{\"command\": \"echo x\", \"description\": \"X\"}"}}]}),
        None,
    ) + &chunk(json!({}), Some("tool_calls"))
        + &done(1000, 20);
    let big_lines: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    vec![
        // A first request that fails.
        Case::new("first_request_401", "item 1: a 401 on the first request, then --continue", "Hello", json!([
            {"text": "Hello again."}
        ]))
        .faults(json!([{"at": 1, "kind": "status", "status": 401,
            "body": {"error": {"message": "Invalid API key", "type": "invalid_request_error"}}}]))
        .then("Again"),
        Case::new("first_request_400", "item 1: a 400 on the first request", "Hello", json!([{"text": "Hi."}]))
            .faults(json!([{"at": 1, "kind": "status", "status": 400,
                "body": {"error": {"message": "Bad request: unsupported parameter", "type": "invalid_request_error"}}}])),
        // Item 2: command output limits.
        Case::new("bash_big_output", "item 2: 3,000 lines of output", "Count", json!([
            {"calls": [bash("cat big.txt")]}, done_turn()
        ]))
        .file("big.txt", big_lines),
        Case::new("bash_no_output", "item 2: a command with no output", "Quiet", json!([
            {"calls": [bash("true")]}, done_turn()
        ])),
        // Item 3: invalid arguments and schemas.
        Case::new("invalid_json_arguments", "item 3: arguments that are not JSON", "Break", json!([
            {"text": "x"}, done_turn()
        ]))
        .sse(0, call_stream("bash", "{\"command\": \"echo hi\"", "tool_calls")),
        Case::new("bash_without_description", "item 3: bash with no description", "Run", json!([
            {"calls": [{"name": "bash", "arguments": {"command": "echo plain"}}]}, done_turn()
        ])),
        Case::new("read_offset_zero", "item 3: read with offset 0", "Read", json!([
            {"calls": [{"name": "read", "arguments": {"filePath": "{cwd}/notes.txt", "offset": 0}}]}, done_turn()
        ]))
        .file("notes.txt", "alpha\nbeta\n"),
        // Item 4: reasoning.
        Case::new("reasoning_interleaved", "item 4: reasoning, text, reasoning, text in one step", "Think", json!([
            {"text": "x"}
        ]))
        .sse(0, interleaved),
        Case::new("reasoning_sent_back", "item 4: reasoning of a turn with tool calls goes back", "Act", json!([
            {"text": "x"}, done_turn()
        ]))
        .sse(0, reasoning_call),
        Case::new("reasoning_continued", "item 4: reasoning of a plain answer goes back on --continue", "Muse", json!([
            {"reasoning": "Weighing it up.", "text": "An answer."}, {"text": "Another answer."}
        ]))
        .then("More"),
        // Item 5: finish reasons.
        Case::new("finish_stop_with_tool_call", "item 5: finish `stop` with a tool call", "Stop", json!([
            {"text": "x"}, done_turn()
        ]))
        .sse(0, call_stream("bash", "{\"command\": \"echo s\", \"description\": \"S\"}", "stop")),
        Case::new("finish_unknown", "item 5: a finish reason nobody knows", "Odd", json!([
            {"text": "x"}, done_turn()
        ]))
        .sse(0, text_stream("Odd ending.", "weird_reason")),
        Case::new("finish_content_filter", "item 5: content_filter", "Filter", json!([{"text": "x"}]))
            .sse(0, text_stream("Partial", "content_filter")),
        Case::new("finish_length", "finish `length` (output limit)", "Long", json!([{"text": "x"}]))
            .sse(0, text_stream("Cut off", "length")),
        // Item 6: cost and tokens.
        Case::new("cost_over_200k", "item 6: the context_over_200k price", "Big", json!([
            {"text": "Big context.", "usage": {"prompt_tokens": 250_000, "completion_tokens": 1000}}
        ]))
        .config(json!({"provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": "{base_url}", "apiKey": "test-key"},
            "models": {"m": {"name": "M", "tool_call": true, "limit": {"context": 1_000_000, "output": 4000},
                "cost": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75,
                    "context_over_200k": {"input": 6, "output": 22.5, "cache_read": 0.6, "cache_write": 7.5}}}}
        }}})),
        Case::new("tokens_with_cache", "item 6: tokens.total with cache reads", "Cache", json!([
            {"text": "Cached.", "usage": {"prompt_tokens": 5000, "completion_tokens": 50, "cached_tokens": 4000,
                "reasoning_tokens": 10}}
        ])),
        Case::new("tokens_total_reported", "item 6: a provider total that is not input + output", "Total", json!([
            {"text": "x"}
        ]))
        .sse(0, chunk(json!({"role": "assistant", "content": "Counted."}), None)
            + &chunk(json!({}), Some("stop"))
            + &done_with_total(1000, 20, 5000)),
        Case::new("cost_priced_model", "cost of a priced model", "Price", json!([
            {"calls": [bash("echo priced")], "usage": {"prompt_tokens": 2000, "completion_tokens": 100}},
            {"text": "Priced.", "usage": {"prompt_tokens": 2100, "completion_tokens": 30, "cached_tokens": 2000}}
        ]))
        .config(json!({"provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": "{base_url}", "apiKey": "test-key"},
            "models": {"m": {"name": "M", "tool_call": true, "limit": {"context": 32000, "output": 4000},
                "cost": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}}}
        }}})),
        // Item 7: request shape (every case's requests show it; this one is the plainest).
        Case::new("text_only", "item 7: request shape of a plain answer", "Greet", json!([
            {"text": "Hi there."}
        ])),
        // Item 8: tool outputs and metadata.
        Case::new("grep_matches", "item 8: grep output", "Find", json!([
            {"calls": [{"name": "grep", "arguments": {"pattern": "needle"}}]}, done_turn()
        ]))
        .file("a.txt", "hay\nneedle one\nhay\n")
        .file("sub/b.txt", "needle two\n"),
        Case::new("glob_files", "item 8: glob output and title", "Glob", json!([
            {"calls": [{"name": "glob", "arguments": {"pattern": "**/*.txt"}}]}, done_turn()
        ]))
        .file("a.txt", "a\n")
        .file("sub/b.txt", "b\n"),
        Case::new("grep_no_match", "grep that finds nothing", "Find", json!([
            {"calls": [{"name": "grep", "arguments": {"pattern": "absent-word"}}]}, done_turn()
        ]))
        .file("a.txt", "hay\n"),
        Case::new("glob_no_match", "glob that finds nothing", "Glob", json!([
            {"calls": [{"name": "glob", "arguments": {"pattern": "**/*.rs"}}]}, done_turn()
        ]))
        .file("a.txt", "a\n"),
        Case::new("read_range", "read of two lines from the middle", "Read", json!([
            {"calls": [{"name": "read", "arguments": {"filePath": "{cwd}/notes.txt", "offset": 2, "limit": 2}}]},
            done_turn()
        ]))
        .file("notes.txt", "alpha\nbeta\ngamma\ndelta\n"),
        Case::new("bash_title", "item 8: bash title and metadata", "Echo", json!([
            {"calls": [bash("echo titled")]}, done_turn()
        ])),
        Case::new("read_file", "item 8: read output and metadata", "Read", json!([
            {"calls": [{"name": "read", "arguments": {"filePath": "{cwd}/notes.txt"}}]}, done_turn()
        ]))
        .file("notes.txt", "alpha\nbeta\ngamma\n"),
        Case::new("write_file", "item 8: write metadata and the user message's diffs", "Write", json!([
            {"calls": [{"name": "write", "arguments": {"filePath": "{cwd}/new.txt", "content": "fresh\n"}}]},
            done_turn()
        ])),
        Case::new("edit_file", "item 8: edit metadata and diffs", "Edit", json!([
            {"calls": [{"name": "read", "arguments": {"filePath": "{cwd}/notes.txt"}}]},
            {"calls": [{"name": "edit", "arguments": {"filePath": "{cwd}/notes.txt", "oldString": "beta",
                "newString": "BETA"}}]},
            done_turn()
        ]))
        .file("notes.txt", "alpha\nbeta\ngamma\n"),
        Case::new("permission_denied", "item 8: a denied call's DeniedError", "Deny", json!([
            {"calls": [bash("echo nope")]}, done_turn()
        ]))
        .config(json!({"permission": {"bash": "deny"}})),
        // Item 9: parallel calls whose argument chunks interleave.
        Case::new("parallel_interleaved", "item 9: two calls streamed alternately", "Both", json!([
            {"text": "x"}, done_turn()
        ]))
        .sse(0, parallel),
        // Our own.
        Case::new("parallel_calls", "two calls in one step", "Two", json!([
            {"calls": [bash("echo one"), bash("echo two")]}, done_turn()
        ])),
        Case::new("paced_text_and_call", "text, then a call whose tool ends before the model's stream", "Pace", json!([
            {"text": "x"}, done_turn()
        ]))
        .sse(0, chunk(json!({"role": "assistant", "content": "Checking."}), None)
            + &chunk(json!({"tool_calls": [{"index": 0, "id": "call_p", "type": "function",
                "function": {"name": "bash", "arguments": "{\"command\": \"echo paced\", \"description\": \"P\"}"}}]}), None)
            + &(0..25).map(|_| chunk(json!({}), None)).collect::<String>()
            + &chunk(json!({}), Some("tool_calls"))
            + &done(1000, 20))
        .paced(0.04),
        Case::new("multi_step", "three tool steps", "Steps", json!([
            {"text": "Step one.", "calls": [bash("echo 1")]},
            {"text": "Step two.", "calls": [{"name": "read", "arguments": {"filePath": "{cwd}/README.md"}}]},
            {"calls": [{"name": "glob", "arguments": {"pattern": "*.md"}}]},
            {"text": "All done."}
        ])),
        Case::new("bash_exit_nonzero", "a failing command", "Fail", json!([
            {"calls": [bash("echo out; echo err >&2; exit 3")]}, done_turn()
        ])),
        Case::new("read_missing", "read of a missing file (tool error)", "Missing", json!([
            {"calls": [{"name": "read", "arguments": {"filePath": "{cwd}/absent.txt"}}]}, done_turn()
        ])),
        Case::new("unknown_tool", "a call to a tool nobody offers", "Unknown", json!([
            {"calls": [{"name": "teleport", "arguments": {"to": "mars"}}]}, done_turn()
        ])),
        Case::new("list_tool", "a call to `list`, which 1.18.34 no longer offers", "List", json!([
            {"calls": [{"name": "list", "arguments": {"path": "{cwd}"}}]}, done_turn()
        ])),
        Case::new("schema_violation", "a call missing a required argument", "Bad", json!([
            {"calls": [{"name": "read", "arguments": {}}]}, done_turn()
        ])),
        Case::new("todowrite", "the todo list tool", "Plan", json!([
            {"calls": [{"name": "todowrite", "arguments": {"todos": [
                {"content": "First", "status": "pending", "priority": "high"}]}}]},
            done_turn()
        ])),
        Case::new("retry_500", "a 500 then success", "Retry", json!([{"text": "Recovered."}]))
            .faults(json!([{"at": 1, "kind": "500"}])),
        Case::new("rate_limited_429", "a 429 with retry-after-ms", "Slow", json!([{"text": "After the wait."}]))
            .faults(json!([{"at": 1, "kind": "429", "retry_after_ms": 200}])),
        Case::new("continue_session", "a second prompt with --continue", "First", json!([
            {"text": "First answer."}, {"text": "Second answer."}
        ]))
        .then("Second"),
        Case::new("unicode_markdown", "markdown and non-ASCII text", "Fancy", json!([
            {"text": "# Título\n\n- ünïcödé ✓\n- `code` → 🚀\n\n```rust\nfn main() {}\n```"}
        ])),
        Case::new("webfetch_denied", "a tool the config denies outright", "Fetch", json!([
            {"calls": [{"name": "webfetch", "arguments": {"url": "http://127.0.0.1:9/", "format": "text"}}]},
            done_turn()
        ])),
        Case::new("reasoning_plain", "reasoning before text", "Reason", json!([
            {"reasoning": "Let me think.", "text": "Answer.",
                "usage": {"prompt_tokens": 1000, "completion_tokens": 30, "reasoning_tokens": 8}}
        ])),
        Case::new("empty_reply", "a step with no text and no calls", "Nothing", json!([
            {"text": ""}
        ])),
        // Through the HTTP API: the session summary right after a revert.
        Case::new("revert_after_write", "item 8 (serve): a write, then a revert of its prompt", "Write", json!([
            {"calls": [{"name": "write", "arguments": {"filePath": "{cwd}/new.txt", "content": "fresh\n"}}]},
            done_turn()
        ]))
        .serve(json!({}), true),
        Case::new("structured_output", "serve: a json_schema format answered by StructuredOutput", "Extract", json!([
            {"calls": [{"name": "StructuredOutput", "arguments": {"name": "Ada", "age": 36}}]},
            done_turn()
        ]))
        .serve(json!({"format": {"type": "json_schema", "schema": {"type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name", "age"], "additionalProperties": false}}}), false),
        // Skills of `.opencode/skills` and `.claude/skills`, one denied.
        Case::new("skills", "skills listed, loaded, one denied", "Skills", json!([
            {"calls": [{"name": "skill", "arguments": {"name": "pdf"}}]},
            {"calls": [{"name": "skill", "arguments": {"name": "release"}}]},
            {"calls": [{"name": "skill", "arguments": {"name": "secret"}}]},
            done_turn()
        ]))
        .file(".opencode/skills/release/SKILL.md", "---\nname: release\ndescription: Cuts a release\nlicense: MIT\n---\n\n# Release\n\nRun scripts/tag.sh, then push.\n\n")
        .file(".opencode/skills/release/scripts/tag.sh", "git tag v1\n")
        .file(".claude/skills/pdf/SKILL.md", "---\nname: pdf\ndescription: Fills <PDF> forms & more\n---\nUse forms.py.\n")
        .file(".claude/skills/pdf/forms.py", "print('fill')\n")
        .file(".opencode/skills/secret/SKILL.md", "---\nname: secret\ndescription: Never offered\n---\nHidden.\n")
        .config(json!({"permission": {"skill": {"secret": "deny"}}}))
        .exact("sent/main/*/body/skills/pdf/**")
        .exact("sent/main/*/body/skills/release/**")
        .exact("sent/main/*/body/skills/secret/**")
        .exact("sent/main/*/body/tools/skill/type")
        .exact("sent/main/*/body/tools/skill/properties/**")
        .exact("sent/main/*/body/tools/skill/required")
        .exact("stored/messages/*/parts/*/state/output")
        .exact("stored/messages/*/parts/*/state/title")
        .exact("stored/messages/*/parts/*/state/error")
        .exact("stored/messages/*/parts/*/state/metadata/name")
        .exact("stored/messages/*/parts/*/state/metadata/dir")
        .exact("printed/*/lines/*/part/state/output"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_has_a_unique_name_and_a_script_that_parses() {
        let cases = all();
        let mut names: Vec<&str> = cases.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), cases.len());
        for case in &cases {
            let script =
                Script::from_json(&case.script_json()).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let script = case.with_recorded(script);
            assert!(!script.turns.is_empty(), "{}", case.name);
        }
    }
}
