//! Configuration through real files: OpenCode users' configs, layering across a temp git
//! repository, substitutions, warnings and errors.

use std::fs;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::json;
use session_core::{ModelCost, overflow::ModelLimit, permission::Action, permission::Rule};
use session_runtime::config::{
    AgentMode, ConfigError, ConfigSources, FsResolver, LoadedConfig, Timeout, discover, load, user_config_dir,
};
use tempfile::TempDir;

/// A temp tree with a home directory and a git repository `repo/` inside it.
struct Tree {
    dir: TempDir,
}

impl Tree {
    fn new() -> Self {
        let tree = Self { dir: tempfile::tempdir().unwrap() };
        fs::create_dir_all(tree.path("home")).unwrap();
        fs::create_dir_all(tree.path("repo/.git")).unwrap();
        tree
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn home(&self) -> PathBuf {
        self.path("home")
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    fn resolver(&self, env: &[(&str, &str)]) -> FsResolver {
        FsResolver::new(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())), Some(self.home()))
    }

    /// Discovers from `cwd` (relative to the tree) and loads.
    fn load(
        &self,
        cwd: &str,
        explicit: Option<&str>,
        env: &[(&str, &str)],
    ) -> Result<LoadedConfig, ConfigError> {
        let start = self.path(cwd);
        fs::create_dir_all(&start).unwrap();
        let mut sources = discover(&start, Some(&self.home()), explicit.map(PathBuf::from));
        // These tests are about layering: the project is one the user trusted.
        sources.trusted = vec![self.root().canonicalize().unwrap()];
        load(&sources, &self.resolver(env))
    }

    /// Text with the temp root replaced, for stable messages.
    fn scrub(&self, text: &str) -> String {
        text.replace(&self.root().display().to_string(), "<tmp>")
    }

    fn warnings(&self, loaded: &LoadedConfig) -> Vec<String> {
        loaded.warnings.iter().map(|w| self.scrub(&w.to_string())).collect()
    }

    fn error(&self, error: &ConfigError) -> String {
        self.scrub(&error.to_string())
    }
}

/// An OpenCode user's global config for the hosted providers, with everything JSONC allows.
const HOSTED: &str = r#"{
  "$schema": "https://opencode.ai/config.json",
  // The main model, and a cheap one for titles.
  "model": "anthropic/claude-sonnet-4-5",
  "small_model": "openai/gpt-4.1-mini",
  "theme": "tokyonight",
  "autoupdate": false,
  "share": "disabled",
  "provider": {
    "openai": {
      "options": {
        "apiKey": "{env:OPENAI_API_KEY}",
        "organization": "org-123", // handed to the SDK as is
      },
    },
    "anthropic": {
      "options": {
        /* the key lives in a file outside the repo */
        "apiKey": "{file:~/.secrets/anthropic-key}",
        "headers": { "anthropic-beta": "context-1m-2025-08-07" },
        "timeout": 600000,
        "chunkTimeout": false,
      },
    },
  },
  "permission": {
    "edit": "ask",
    "bash": {
      "*": "ask",
      "git status": "allow",
      "git diff *": "allow",
      "rm -rf *": "deny",
    },
    "external_directory": { "~/scratch/*": "allow" },
    "webfetch": "deny",
  },
  "agent": {
    "build": {
      "model": "anthropic/claude-opus-4-1",
      "temperature": 0.2,
      "prompt": "{file:./prompts/build.md}",
    },
    "review": {
      "description": "Reviews diffs without touching files",
      "mode": "subagent",
      "model": "openai/gpt-5",
      "reasoningEffort": "high",
      "permission": { "edit": "deny", "bash": { "git *": "allow", "*": "deny" } },
      "maxSteps": 12,
    },
  },
  "keybinds": { "leader": "ctrl+a" },
  "mcp": { "context7": { "type": "remote", "url": "https://mcp.context7.com/mcp" } },
}
"#;

#[test]
fn a_hosted_providers_user_config_loads() {
    let tree = Tree::new();
    tree.write("home/.config/session/config.jsonc", HOSTED);
    tree.write(
        "home/.config/session/prompts/build.md",
        "You are a careful engineer.\n\nWrite \"tests\" first.\n",
    );
    tree.write("home/.secrets/anthropic-key", "sk-ant-123\n");

    let loaded = tree.load("repo", None, &[("OPENAI_API_KEY", "sk-openai-456")]).unwrap();
    // The TUI's keys load, each with one line saying it has no effect here.
    assert_eq!(
        tree.warnings(&loaded),
        unsupported("home/.config/session/config.jsonc", &["theme", "autoupdate", "share", "keybinds"])
    );
    assert_eq!(loaded.files, [user_config_dir(&tree.home()).join("config.jsonc")]);

    let config = &loaded.config;
    assert_eq!(config.model.as_deref(), Some("anthropic/claude-sonnet-4-5"));
    assert_eq!(config.provider["openai"].options.api_key.as_deref(), Some("sk-openai-456"));
    assert_eq!(config.provider["openai"].options.extra["organization"], json!("org-123"));
    let anthropic = &config.provider["anthropic"].options;
    assert_eq!(anthropic.api_key.as_deref(), Some("sk-ant-123"));
    assert_eq!(anthropic.headers["anthropic-beta"], "context-1m-2025-08-07");
    assert_eq!(anthropic.timeout, Some(Timeout::Millis(600_000)));
    assert_eq!(anthropic.chunk_timeout, Some(Timeout::Disabled));

    let build = &config.agent["build"];
    assert_eq!(build.prompt.as_deref(), Some("You are a careful engineer.\n\nWrite \"tests\" first."));
    let review = &config.agent["review"];
    assert_eq!(review.mode, Some(AgentMode::Subagent));
    assert_eq!(review.steps, NonZeroU32::new(12));
    assert_eq!(review.options["reasoningEffort"], json!("high"));

    // Rules come out in written order, with `~` expanded against the home the caller gives.
    let rules = config.permission_rules(Some("/home/me")).unwrap();
    assert_eq!(
        rules,
        [
            Rule::new("edit", "*", Action::Ask),
            Rule::new("bash", "*", Action::Ask),
            Rule::new("bash", "git status", Action::Allow),
            Rule::new("bash", "git diff *", Action::Allow),
            Rule::new("bash", "rm -rf *", Action::Deny),
            Rule::new("external_directory", "/home/me/scratch/*", Action::Allow),
            Rule::new("webfetch", "*", Action::Deny),
        ]
    );
    assert_eq!(
        review.permission_rules(None).unwrap(),
        [
            Rule::new("edit", "*", Action::Deny),
            Rule::new("bash", "git *", Action::Allow),
            Rule::new("bash", "*", Action::Deny),
        ]
    );
    insta::assert_json_snapshot!("hosted_user_config", config);
}

/// A project config for a local Ollama server, as OpenCode's docs show it.
const OLLAMA: &str = r#"{
  "$schema": "https://opencode.ai/config.json",
  "provider": {
    "ollama": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Ollama (local)",
      "options": {
        "baseURL": "http://127.0.0.1:11434/v1",
      },
      "models": {
        "qwen2.5-coder:32b": {
          "name": "Qwen 2.5 Coder 32B",
          "limit": { "context": 32768, "output": 8192 },
          "tool_call": true,
        },
        "llama3.2": { "name": "Llama 3.2" },
      },
    },
    "lmstudio": {
      "npm": "@ai-sdk/openai-compatible",
      "options": { "baseURL": "http://127.0.0.1:1234/v1" },
      "models": { "google/gemma-3n-e4b": {} },
    },
  },
  "model": "ollama/qwen2.5-coder:32b",
}"#;

#[test]
fn a_local_ollama_project_config_loads() {
    let tree = Tree::new();
    tree.write("repo/session.json", OLLAMA);
    let loaded = tree.load("repo", None, &[]).unwrap();
    assert_eq!(tree.warnings(&loaded), Vec::<String>::new());

    let ollama = &loaded.config.provider["ollama"];
    assert_eq!(ollama.api("ollama").unwrap(), Some(session_llm::Api::OpenAiChat));
    assert_eq!(ollama.base_url(), Some("http://127.0.0.1:11434/v1"));
    let qwen = &ollama.models["qwen2.5-coder:32b"];
    assert_eq!(qwen.limit.unwrap().resolve(None), ModelLimit { context: 32768, input: None, output: 8192 });
    assert_eq!(qwen.tool_call, Some(true));
    // Written order is kept, which `session models` shows.
    assert_eq!(ollama.models.keys().collect::<Vec<_>>(), ["qwen2.5-coder:32b", "llama3.2"]);
    assert_eq!(loaded.config.provider.keys().collect::<Vec<_>>(), ["ollama", "lmstudio"]);
    insta::assert_json_snapshot!("ollama_project_config", loaded.config);
}

/// The warnings of OpenCode keys without effect here, in `file` (below the tree).
fn unsupported(file: &str, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .map(|key| {
            format!("<tmp>/{file}: {key} is not supported here and has no effect (\"warn_unsupported\": false hides this)")
        })
        .collect()
}

/// Everything this runtime reads, plus OpenCode keys it loads without implementing them.
const KITCHEN_SINK: &str = r#"// session.jsonc at the repository root
{
  "$schema": "https://opencode.ai/config.json",
  "database": "postgres://session:secret@127.0.0.1:5432/session",
  "snapshot": false,
  "compaction": { "auto": true, "prune": true, "reserved": 10000, "tail_turns": 3, "preserve_recent_tokens": 6000 },
  "experimental": { "continue_loop_on_deny": true, "batch_tool": true },
  "provider": {
    "openai": {
      "options": {
        "retry": { "maxAttempts": 4, "initialDelayMs": 500, "maxDelayMs": 8000, "backoffFactor": 1.5, "retryableStatuses": [429, 503] },
      },
      "models": {
        "gpt-4.1": {
          "limit": { "context": 1047576, "input": 1000000, "output": 32768 },
          "cost": {
            "input": 2, "output": 8, "cache_read": 0.5,
            "tiers": [ { "tier": { "size": 200000 }, "input": 4, "output": 16 } ],
          },
        },
      },
    },
    "groq": { "npm": "@ai-sdk/groq", "env": ["GROQ_API_KEY"] },
  },
  "agent": { "plan": { "disable": true }, "compaction": { "model": "openai/gpt-4.1-mini" } },
  "lsp": { "rust": { "disabled": true } },
  "formatter": false,
  "tui": { "scroll_speed": 2 },
  "server": { "port": 4096, "hostname": "127.0.0.1", "mdns": false, "mdnsDomain": "x.local", "cors": ["http://localhost:5173"] },
  "instructions": ["CONTRIBUTING.md"],
  "plugin": [],
  "layout": "stretch",
  "default_agent": "build",
  "watcher": { "ignore": ["target/**"] },
}
"#;

#[test]
fn every_key_this_runtime_reads_loads_and_the_rest_is_accepted() {
    let tree = Tree::new();
    tree.write("repo/session.jsonc", KITCHEN_SINK);
    let loaded = tree.load("repo/crates/x", None, &[]).unwrap();
    // Price tiers of a configured model load but have no effect, as in OpenCode 1.18.34 (SPEC 5).
    let keys = [
        "experimental.batch_tool",
        "lsp",
        "formatter",
        "tui",
        "plugin",
        "layout",
        "watcher",
        "provider.openai.models.gpt-4.1.cost.tiers",
    ];
    assert_eq!(tree.warnings(&loaded), unsupported("repo/session.jsonc", &keys));
    let config = &loaded.config;

    assert_eq!(config.database.as_deref(), Some("postgres://session:secret@127.0.0.1:5432/session"));
    assert_eq!(config.server.cors, ["http://localhost:5173"]);
    assert!(!config.snapshot_enabled());
    assert!(config.continue_loop_on_deny());
    assert_eq!(config.compaction.tail_turns, Some(3));
    assert_eq!(config.compaction.preserve_recent_tokens, Some(6000));
    let retry = config.provider["openai"].options.retry.clone().unwrap();
    assert_eq!(retry.allowed_retries(), 3);
    assert!(retry.retries_status(503) && !retry.retries_status(500));
    assert_eq!(config.provider["groq"].api("groq").unwrap(), Some(session_llm::Api::OpenAiChat));
    assert_eq!(config.provider["openai"].api("openai").unwrap(), None, "the catalog decides");

    // A configured cost overrides the catalog's field by field; its tiers are not applied.
    let catalog =
        ModelCost::from_catalog(&json!({"input": 3, "output": 12, "cache_read": 1, "cache_write": 4}))
            .unwrap();
    let cost = config.provider["openai"].models["gpt-4.1"].cost.as_ref().unwrap();
    let resolved = cost.resolve(Some(&catalog));
    let expected = ModelCost::from_catalog(&json!({
        "input": 2, "output": 8, "cache_read": 0.5, "cache_write": 4,
    }))
    .unwrap();
    assert_eq!(resolved, expected);
    insta::assert_json_snapshot!("kitchen_sink_config", config);
}

#[test]
fn layers_merge_user_then_project_outermost_first_then_session_config() {
    let tree = Tree::new();
    let user = tree.write(
        "home/.config/session/config.json",
        r#"{
          "model": "anthropic/claude-sonnet-4-5",
          "provider": {"openai": {"options": {"apiKey": "{env:OPENAI_API_KEY}", "headers": {"x-user": "1"}}, "env": ["A", "B"]}},
          "permission": {"*": "allow", "bash": {"*": "ask"}},
          "agent": {"build": {"steps": 50, "temperature": 0.1}},
        }"#,
    );
    // Above the git root: never read.
    tree.write("session.json", r#"{"model": "outside/never"}"#);
    let root = tree.write(
        "repo/session.json",
        r#"{
          "provider": {"openai": {"options": {"headers": {"x-project": "2"}}, "env": ["C"]}},
          "permission": {"bash": {"git *": "allow"}, "edit": "deny"},
          "agent": {"build": {"maxSteps": 20}},
        }"#,
    );
    let nested = tree.write(
        "repo/app/session.jsonc",
        r#"{"small_model": "openai/gpt-4.1-mini", /* nearest */ "snapshot": false}"#,
    );
    let explicit = tree.write("elsewhere/ci.json", r#"{"model": "openai/gpt-4.1", "snapshot": true}"#);

    let mut sources = discover(&tree.path("repo/app/src"), Some(&tree.home()), Some(explicit.clone()));
    assert_eq!(
        sources,
        ConfigSources {
            user: vec![user.clone()],
            project: vec![root.clone(), nested.clone()],
            explicit: Some(explicit.clone()),
            project_root: Some(tree.path("repo")),
            trusted: Vec::new(),
            user_markdown: Vec::new(),
            project_markdown: Vec::new(),
        }
    );
    sources.trusted = vec![tree.path("repo").canonicalize().unwrap()];
    let loaded = load(&sources, &tree.resolver(&[("OPENAI_API_KEY", "sk-1")])).unwrap();
    assert_eq!(loaded.files, [user, root, nested, explicit]);

    let config = &loaded.config;
    assert_eq!(config.model.as_deref(), Some("openai/gpt-4.1"), "SESSION_CONFIG is the highest layer");
    assert_eq!(config.small_model.as_deref(), Some("openai/gpt-4.1-mini"));
    assert_eq!(config.snapshot, Some(true));
    let openai = &config.provider["openai"];
    assert_eq!(openai.options.api_key.as_deref(), Some("sk-1"), "objects merge deeply");
    assert_eq!(
        openai.options.headers.iter().collect::<Vec<_>>(),
        [(&"x-user".to_owned(), &"1".to_owned()), (&"x-project".to_owned(), &"2".to_owned())]
    );
    assert_eq!(openai.env.as_deref(), Some(&["C".to_owned()][..]), "arrays are replaced");
    // A later file's deprecated `maxSteps` overrides an earlier file's `steps`, as in OpenCode.
    assert_eq!(config.agent["build"].steps, NonZeroU32::new(20));
    assert_eq!(config.agent["build"].temperature, Some(0.1));
    // Permission keys keep the position of their first layer; new keys follow.
    assert_eq!(
        config.permission_rules(None).unwrap(),
        [
            Rule::new("*", "*", Action::Allow),
            Rule::new("bash", "*", Action::Ask),
            Rule::new("bash", "git *", Action::Allow),
            Rule::new("edit", "*", Action::Deny),
        ]
    );
}

#[test]
fn without_a_git_root_the_walk_stops_at_home_or_reads_the_start_folder_only() {
    let tree = Tree::new();
    let outer = tree.write("home/plain/session.json", "{}");
    let inner = tree.write("home/plain/a/b/session.json", "{}");
    let above = tree.write("session.json", "{}");
    let sources = discover(&tree.path("home/plain/a/b"), Some(&tree.home()), None);
    assert_eq!(sources.project, [outer.clone(), inner.clone()], "the walk stops at the home folder");
    assert_eq!(sources.project_root, Some(tree.home()));
    // Outside a repository and the home folder: only the start folder, never /tmp or /.
    let sources = discover(&tree.path("home/plain/a/b"), None, None);
    assert_eq!(sources.project, [inner]);
    assert!(!sources.project.contains(&above) && !sources.project.contains(&outer));
    assert!(sources.user.is_empty());
}

#[test]
fn an_opencode_project_config_is_read_where_no_session_json_is() {
    let tree = Tree::new();
    tree.write("repo/.git/HEAD", "ref: refs/heads/main\n");
    let json = tree.write("repo/opencode.json", r#"{"model": "a/json"}"#);
    let dotted = tree.write("repo/app/.opencode/opencode.jsonc", r#"{"small_model": "a/small"}"#);
    let loaded = tree.load("repo/app", None, &[]).unwrap();
    assert_eq!(loaded.files, [json.clone(), dotted.clone()]);
    assert_eq!(loaded.config.model.as_deref(), Some("a/json"));
    assert_eq!(loaded.config.small_model.as_deref(), Some("a/small"));
    // A session.json anywhere in the walk is this runtime's own config: OpenCode's is left alone.
    let own = tree.write("repo/session.json", r#"{"model": "a/own"}"#);
    let loaded = tree.load("repo/app", None, &[]).unwrap();
    assert_eq!(loaded.files, [own]);
    assert!(!loaded.files.contains(&json) && !loaded.files.contains(&dotted));
}

#[test]
fn both_spellings_in_one_directory_load_json_then_jsonc() {
    let tree = Tree::new();
    let json = tree.write("repo/session.json", r#"{"model": "a/json", "small_model": "a/small"}"#);
    let jsonc = tree.write("repo/session.jsonc", r#"{"model": "a/jsonc"}"#);
    let user_json = tree.write("home/.config/session/config.json", "{}");
    let user_jsonc = tree.write("home/.config/session/config.jsonc", "// only a comment\n");
    let loaded = tree.load("repo", None, &[]).unwrap();
    assert_eq!(loaded.files, [user_json, user_jsonc, json, jsonc]);
    assert_eq!(loaded.config.model.as_deref(), Some("a/jsonc"));
    assert_eq!(loaded.config.small_model.as_deref(), Some("a/small"));
}

#[test]
fn file_references_resolve_against_the_config_files_directory_not_the_working_directory() {
    let tree = Tree::new();
    tree.write("repo/prompts/plan.txt", "  Plan first.  \n");
    tree.write("repo/app/prompts/plan.txt", "wrong file");
    tree.write(
        "repo/session.json",
        r#"{
          // "prompt": "{file:does-not-exist.txt}" is commented out and left alone
          "agent": {"plan": {"prompt": "{file:prompts/plan.txt}"}},
          "provider": {"x": {"options": {"apiKey": "{env:X_KEY}", "baseURL": "{env:X_URL}"}}},
        }"#,
    );
    let loaded = tree.load("repo/app", None, &[("X_KEY", "k-1")]).unwrap();
    assert_eq!(loaded.config.agent["plan"].prompt.as_deref(), Some("Plan first."));
    let options = &loaded.config.provider["x"].options;
    assert_eq!(options.api_key.as_deref(), Some("k-1"));
    assert_eq!(options.base_url.as_deref(), Some(""), "a missing variable becomes an empty string");
}

#[test]
fn an_env_variable_may_supply_a_number() {
    let tree = Tree::new();
    tree.write("repo/session.json", r#"{"compaction": {"reserved": {env:RESERVED}}}"#);
    let loaded = tree.load("repo", None, &[("RESERVED", "12000")]).unwrap();
    assert_eq!(loaded.config.compaction.reserved, Some(12000));
}

#[test]
fn a_missing_file_reference_fails_with_the_file_and_the_resolved_path() {
    let tree = Tree::new();
    tree.write("repo/session.json", r#"{"agent": {"build": {"prompt": "{file:~/prompts/none.md}"}}}"#);
    let error = tree.load("repo", None, &[]).unwrap_err();
    assert_eq!(
        tree.error(&error),
        r#"<tmp>/repo/session.json: bad file reference: "{file:~/prompts/none.md}" <tmp>/home/prompts/none.md does not exist"#
    );
}

#[test]
fn unknown_keys_warn_once_per_file_and_key_and_the_config_still_loads() {
    let tree = Tree::new();
    tree.write(
        "home/.config/session/config.json",
        r#"{"model": "a/b", "modle": "typo", "provider": {"openai": {"foo": 1, "options": {"retry": {"maxAttempt": 2}}}}}"#,
    );
    tree.write(
        "repo/session.json",
        r#"{"modle": "typo again", "compaction": {"autoo": false}, "agent": {"build": {"stepz": 3}}}"#,
    );
    let loaded = tree.load("repo", None, &[]).unwrap();
    assert_eq!(
        tree.warnings(&loaded),
        [
            "<tmp>/home/.config/session/config.json: unknown key modle",
            "<tmp>/home/.config/session/config.json: unknown key provider.openai.foo",
            "<tmp>/home/.config/session/config.json: unknown key provider.openai.options.retry.maxAttempt",
            "<tmp>/repo/session.json: unknown key modle",
            "<tmp>/repo/session.json: unknown key compaction.autoo",
        ]
    );
    assert_eq!(loaded.config.model.as_deref(), Some("a/b"));
    // An unknown agent key is a provider option for that agent, as OpenCode treats it.
    assert_eq!(loaded.config.agent["build"].options["stepz"], json!(3));
}

#[test]
fn wrong_types_fail_with_file_key_expected_and_found() {
    let tree = Tree::new();
    let cases = [
        (
            r#"{"agent": {"build": {"steps": "ten"}}}"#,
            r#"agent.build.steps: expected a positive integer, found string "ten""#,
        ),
        (
            r#"{"provider": {"ollama": {"options": {"baseURL": 11434}}}}"#,
            "provider.ollama.options.baseURL: expected a string, found number 11434",
        ),
        (r#"{"compaction": {"auto": "off"}}"#, r#"compaction.auto: expected a boolean, found string "off""#),
        (r#"{"compaction": [true]}"#, "compaction: expected an object, found an array"),
        (r#"{"database": {"url": "postgres://"}}"#, "database: expected a string, found an object"),
        (
            r#"{"server": {"cors": "http://localhost:5173"}}"#,
            r#"server.cors: expected an array, found string "http://localhost:5173""#,
        ),
        (
            r#"{"permission": {"bash": {"rm *": "never"}}}"#,
            r#"permission.bash.rm *: expected "allow", "ask" or "deny", found string "never""#,
        ),
        (
            r#"{"provider": {"openai": {"models": {"gpt-4.1": {"cost": {"input": "2"}}}}}}"#,
            r#"provider.openai.models.gpt-4.1.cost.input: expected a number, found string "2""#,
        ),
    ];
    for (text, message) in cases {
        tree.write("repo/session.json", text);
        let error = tree.load("repo", None, &[]).unwrap_err();
        assert!(matches!(error, ConfigError::WrongType { .. }), "{error:?}");
        assert_eq!(tree.error(&error), format!("<tmp>/repo/session.json: {message}"));
    }
}

#[test]
fn jsonc_syntax_errors_give_the_line_and_column() {
    let tree = Tree::new();
    tree.write("repo/session.json", "{\n  \"model\": \"a/b\"\n  \"small_model\": \"c/d\"\n}\n");
    let error = tree.load("repo", None, &[]).unwrap_err();
    assert_eq!(tree.error(&error), "<tmp>/repo/session.json: Expected comma at line 2, column 17");
    tree.write("repo/session.json", "{'model': 'a/b'}");
    let error = tree.load("repo", None, &[]).unwrap_err();
    assert!(matches!(error, ConfigError::Parse { line: 1, .. }), "single quotes are not JSONC: {error:?}");
}

#[test]
fn a_missing_session_config_file_is_an_error() {
    let tree = Tree::new();
    let error = tree.load("repo", Some("ci/session.json"), &[]).unwrap_err();
    assert_eq!(
        tree.error(&error),
        "<tmp>/repo/ci/session.json: the config file named by SESSION_CONFIG does not exist"
    );
}

#[test]
fn an_unsupported_provider_package_is_a_clear_error() {
    let tree = Tree::new();
    tree.write("repo/session.json", r#"{"provider": {"bedrock": {"npm": "@ai-sdk/amazon-bedrock"}}}"#);
    let loaded = tree.load("repo", None, &[]).unwrap();
    let error = loaded.config.provider["bedrock"].api("bedrock").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(r#"provider "bedrock": unsupported provider package "@ai-sdk/amazon-bedrock""#),
        "{error}"
    );
}

#[test]
fn no_files_at_all_is_the_default_config() {
    let tree = Tree::new();
    let loaded = tree.load("repo", None, &[]).unwrap();
    assert_eq!(loaded.files, Vec::<PathBuf>::new());
    assert_eq!(loaded.config, session_runtime::config::Config::default());
    assert!(loaded.config.snapshot_enabled());
    assert!(!loaded.config.continue_loop_on_deny());
}
