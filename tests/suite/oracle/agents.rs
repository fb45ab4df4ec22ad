//! One case through one agent: a fresh temporary home and git project, its own copy of the
//! scripted server, the prompt (and a `--continue` prompt) with `--format json`, then the
//! stored session exported and every request the server saw.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use session_llm::{Api, RequestKind, Script};
use session_testkit::TestServer;

use super::cases::Case;
use super::normalize::{Places, normalize, request_body};

/// The two agents compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Agent {
    /// OpenCode 1.18.34's own `opencode run` and `opencode export`.
    OpenCode,
    /// Our `session run` and `session sessions export`.
    Session,
}

/// What one agent stored, sent and printed for a case, normalised.
#[derive(Debug)]
pub(crate) struct Capture {
    /// The exported session (`null` when no session was stored).
    pub stored: Value,
    /// The agent's own requests in order (headers that matter, body), then the side requests
    /// (title, summary) by kind, whose order is a race between them.
    pub sent: Value,
    /// The `--format json` lines of each run, and each run's exit status.
    pub printed: Vec<Value>,
    /// Standard error of every command, for the failure message.
    pub log: String,
}

impl Capture {
    /// The capture as one JSON value (what `ORACLE_REPLAY` reads back).
    pub(crate) fn to_value(&self) -> Value {
        json!({"stored": self.stored, "sent": self.sent, "printed": self.printed, "log": self.log})
    }

    /// A capture saved by [`Capture::to_value`].
    pub(crate) fn from_value(value: &Value) -> Self {
        Self {
            stored: value["stored"].clone(),
            sent: value["sent"].clone(),
            printed: value["printed"].as_array().cloned().unwrap_or_default(),
            log: value["log"].as_str().unwrap_or_default().to_owned(),
        }
    }
}

/// The request headers compared (the rest are transport details of the HTTP clients).
const HEADERS: [&str; 5] =
    ["authorization", "content-type", "user-agent", "x-session-affinity", "x-session-id"];

/// Runs `case` through `agent`.
pub(crate) async fn capture(agent: Agent, case: &Case) -> Capture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let project = root.join("project");
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    case.write_project(&project);
    let script = Script::from_json(&case.script_json()).unwrap().with_workdir(&project);
    let script = case.with_recorded(script);
    let server = TestServer::start(script).await.unwrap();
    let config_path = root.join("config.json");
    let config = case.config_for(&server.base_url(Api::OpenAiChat));
    std::fs::write(&config_path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    session_testkit::trust_folder(&home, &project).unwrap();
    let places = Places {
        project: project.display().to_string(),
        home: home.display().to_string(),
        provider: format!("http://{}", server.addr()),
    };

    let prompts: Vec<(bool, String)> = std::iter::once((false, case.prompt.to_owned()))
        .chain(case.then.iter().map(|p| (true, (*p).to_owned())))
        .collect();
    let (printed, stored, log) = if let Some(steps) = &case.serve {
        let runner = Runner { agent, project, home, config: config_path };
        super::serve::drive(&runner, case.prompt, steps).await
    } else {
        tokio::task::spawn_blocking(move || {
            let runner = Runner { agent, project, home, config: config_path };
            let mut printed = Vec::new();
            let mut log = String::new();
            let mut session_id = None;
            for (continues, prompt) in prompts {
                let (lines, status, stderr) = runner.run(&prompt, continues);
                log.push_str(&stderr);
                session_id = session_id
                    .or_else(|| lines.iter().find_map(|l| l["sessionID"].as_str().map(str::to_owned)));
                printed.push(json!({"exit": status, "lines": lines}));
            }
            let session_id = session_id.or_else(|| runner.latest_session());
            let stored = match session_id {
                Some(id) => runner.export(&id, &mut log),
                None => Value::Null,
            };
            (printed, stored, log)
        })
        .await
        .unwrap()
    };

    let requests = server.requests();
    let main: Vec<Value> =
        requests.iter().filter(|r| r.kind == RequestKind::Main).map(|r| sent_request(r, &places)).collect();
    let mut side: Vec<Value> =
        requests.iter().filter(|r| r.kind != RequestKind::Main).map(|r| sent_request(r, &places)).collect();
    side.sort_by_key(|r| r["kind"].to_string());
    let sent = json!({"main": main, "side": side});
    server.shutdown().await;
    let mut stored = normalize(&stored, &places);
    if let Some(map) = stored.as_object_mut() {
        // Our document's format number; OpenCode's export has none.
        map.remove("version");
    }
    Capture { stored, sent, printed: printed.iter().map(|p| normalize(p, &places)).collect(), log }
}

fn sent_request(request: &session_testkit::RecordedRequest, places: &Places) -> Value {
    let headers: serde_json::Map<String, Value> = HEADERS
        .iter()
        .filter_map(|name| request.headers.get(*name).map(|v| ((*name).to_owned(), Value::from(v.as_str()))))
        .collect();
    let body = match request.kind {
        RequestKind::Main => request_body(&request.body),
        // Title and summary requests: their prompt is product text; which model they ask is not.
        _ => json!({"model": request.body["model"]}),
    };
    normalize(&json!({"kind": format!("{:?}", request.kind), "headers": headers, "body": body}), places)
}

/// How one agent is started for a case: its program, folders and config.
pub(crate) struct Runner {
    /// Which agent.
    pub agent: Agent,
    project: PathBuf,
    home: PathBuf,
    config: PathBuf,
}

impl Runner {
    /// The agent's program in the project, with the case's isolated home, env and config.
    pub(crate) fn command(&self) -> Command {
        let mut command = match self.agent {
            Agent::OpenCode => Command::new(crate::opencode_cli::opencode_binary()),
            Agent::Session => Command::new(session_e2e::session_binary().unwrap()),
        };
        command
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"));
        match self.agent {
            Agent::OpenCode => {
                command
                    .env("OPENCODE_CONFIG", &self.config)
                    .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
                    .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
                    .env("OPENCODE_DISABLE_SHARE", "1")
                    .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
                    // Not CLAUDE.md (we read it elsewhere), but `.claude/skills` and
                    // `.agents/skills`, as we do (the home folder is empty).
                    .env("OPENCODE_DISABLE_CLAUDE_CODE_PROMPT", "1")
                    // OpenCode installs its plugin package into the config folder at start;
                    // a dead registry keeps that (and anything else) off the network.
                    .env("npm_config_registry", "http://127.0.0.1:9/");
            }
            Agent::Session => {
                command.env("SESSION_CONFIG", &self.config);
            }
        }
        command
    }

    /// One prompt with `--format json`: the JSON lines (other lines as strings), the exit
    /// status and standard error.
    fn run(&self, prompt: &str, continues: bool) -> (Vec<Value>, i32, String) {
        let mut command = self.command();
        command.arg("run").args(["--format", "json"]);
        if continues {
            command.arg("--continue");
        }
        let output = command.arg(prompt).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let lines = stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::from(l)))
            .collect();
        let stderr = format!("[{:?} run]\n{}\n", self.agent, String::from_utf8_lossy(&output.stderr));
        (lines, output.status.code().unwrap_or(-1), stderr)
    }

    /// The session the runs stored, when none printed its id.
    fn latest_session(&self) -> Option<String> {
        let mut command = self.command();
        match self.agent {
            Agent::OpenCode => command.args(["session", "list", "--format", "json"]),
            Agent::Session => command.args(["sessions", "list"]),
        };
        let output = command.output().ok()?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let at = stdout.find("ses_")?;
        Some(stdout[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
    }

    /// The stored session `id`, exported.
    pub(crate) fn export(&self, id: &str, log: &mut String) -> Value {
        let mut command = self.command();
        match self.agent {
            Agent::OpenCode => command.args(["export", id]),
            Agent::Session => command.args(["sessions", "export", id]),
        };
        let output = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        log.push_str(&format!("[{:?} export]\n{}\n", self.agent, String::from_utf8_lossy(&output.stderr)));
        // OpenCode prints a line before the document when it exports to a terminal.
        let start = stdout.find('{').unwrap_or(0);
        serde_json::from_str(&stdout[start..])
            .unwrap_or_else(|_| Value::from(format!("unreadable export: {stdout}")))
    }
}
