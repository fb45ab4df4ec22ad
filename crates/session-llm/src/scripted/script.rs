//! The script format: the one `../shared/peers/mockllm.py` reads, extended with reasoning, a
//! recorded stream per turn, the API to speak and pacing. Parsing validates everything a reply
//! later needs, so that serving a script never fails on its content.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::decode::Api;

/// The demo script bundled with the crate (`scripts/demo.json`).
const DEMO_SCRIPT: &str = include_str!("../../scripts/demo.json");

/// How many characters of text one streamed chunk carries unless the script says otherwise
/// (mockllm's `--chunk-chars`).
pub const DEFAULT_CHUNK_CHARS: usize = 24;

/// A script could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// The script is not the JSON the format documents.
    #[error("invalid script{}: {message}", origin(.path))]
    Invalid {
        /// The file, when the script came from one.
        path: Option<PathBuf>,
        /// What is wrong, with the JSON position when there is one.
        message: String,
    },
    /// A file could not be read.
    #[error("cannot read {}: {message}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
}

fn origin(path: &Option<PathBuf>) -> String {
    path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default()
}

/// A scripted model: the assistant turns to replay, and the faults to inject.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Script {
    /// The script's name.
    #[serde(default)]
    pub name: String,
    /// The wire format the scripted provider speaks (`openai-chat` unless given; the test
    /// server answers each endpoint in its own format whatever this says).
    #[serde(default = "default_api", deserialize_with = "api_name")]
    pub api: Api,
    /// The model's limits (informational; `context` appears in overflow errors).
    #[serde(default)]
    pub model: ScriptModel,
    /// The prompt a driver should send first.
    #[serde(default)]
    pub prompt: Option<String>,
    /// The reply to a title request.
    #[serde(default)]
    pub title: Option<String>,
    /// The assistant turns, in order.
    #[serde(default)]
    pub turns: Vec<Turn>,
    /// Faults, keyed by request number.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// The reply once the turns have run out.
    #[serde(default)]
    pub exhausted_text: Option<String>,
    /// The usage reported by a summary (compaction) reply.
    #[serde(default)]
    pub summary_usage: Option<ScriptUsage>,
    /// The pause before each streamed chunk, in seconds (mockllm's `--chunk-delay`).
    #[serde(default, deserialize_with = "seconds")]
    pub chunk_delay: Duration,
    /// Characters of text per streamed chunk (mockllm's `--chunk-chars`).
    #[serde(default = "default_chunk_chars")]
    pub chunk_chars: usize,
    /// Treat every request without tools as an auxiliary request answered `ok`.
    #[serde(default)]
    pub aux_without_tools: bool,
    /// The project directory relative paths of ops are resolved against (mockllm's
    /// `--workdir`); `None` leaves them relative. Never read from the JSON.
    #[serde(skip)]
    pub workdir: Option<PathBuf>,
}

fn default_api() -> Api {
    Api::OpenAiChat
}

fn default_chunk_chars() -> usize {
    DEFAULT_CHUNK_CHARS
}

fn api_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Api, D::Error> {
    let name = String::deserialize(deserializer)?;
    name.parse().map_err(serde::de::Error::custom)
}

/// A non-negative number of seconds.
fn seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let value = f64::deserialize(deserializer)?;
    Duration::try_from_secs_f64(value)
        .map_err(|_| serde::de::Error::custom(format!("not a duration in seconds: {value}")))
}

fn optional_seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    seconds(deserializer).map(Some)
}

/// The model's limits as a script states them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ScriptModel {
    /// Context window, in tokens.
    #[serde(default = "default_context")]
    pub context: u64,
    /// Output limit, in tokens.
    #[serde(default)]
    pub output: u64,
}

fn default_context() -> u64 {
    32_000
}

impl Default for ScriptModel {
    fn default() -> Self {
        Self { context: default_context(), output: 0 }
    }
}

/// One assistant turn.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Turn {
    /// Visible text.
    #[serde(default)]
    pub text: String,
    /// Reasoning text, streamed before the text.
    #[serde(default)]
    pub reasoning: String,
    /// Tool calls, after the text.
    #[serde(default)]
    pub calls: Vec<ScriptCall>,
    /// Token usage; missing counts are estimated as mockllm does.
    #[serde(default)]
    pub usage: Option<ScriptUsage>,
    /// A pause before the reply starts, in seconds (mockllm's turn `delay`).
    #[serde(default, deserialize_with = "seconds")]
    pub delay: Duration,
    /// This turn's pause before each chunk, in seconds, instead of the script's.
    #[serde(default, deserialize_with = "optional_seconds")]
    pub chunk_delay: Option<Duration>,
    /// A recorded SSE file replayed instead of text and calls, relative to the script's file.
    #[serde(default)]
    pub sse: Option<PathBuf>,
    /// The recorded stream's bytes (read from `sse` by [`Script::load`], or set directly).
    #[serde(skip)]
    pub recorded: Option<Bytes>,
}

/// Token usage of a turn, in mockllm's OpenAI-style counting: `prompt_tokens` includes the
/// cached ones, `completion_tokens` includes reasoning.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptUsage {
    /// Prompt tokens, cache included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Prompt tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Prompt tokens written to the cache (Anthropic's cache creation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Reasoning tokens inside the completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

/// A scripted tool call: an agent-neutral op, or a raw call sent as is.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptCall {
    /// `{"op": "read", "path": ...}` and the like, translated to the tools a request offers.
    Op(ScriptOp),
    /// `{"name": ..., "arguments": {...}}`; `{cwd}` inside the arguments is replaced.
    Raw {
        /// Tool name.
        name: String,
        /// Tool input.
        arguments: Map<String, Value>,
    },
}

/// An agent-neutral operation.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ScriptOp {
    /// What to do.
    pub op: OpKind,
    /// The file or directory (`read`, `write`, `list`, and the scope of `glob`/`grep`).
    #[serde(default)]
    pub path: Option<String>,
    /// The pattern of `glob` and `grep`.
    #[serde(default)]
    pub pattern: Option<String>,
    /// The file filter of `grep`.
    #[serde(default)]
    pub include: Option<String>,
    /// What `write` writes.
    #[serde(default)]
    pub content: Option<String>,
    /// The command of `bash`.
    #[serde(default)]
    pub command: Option<String>,
    /// The description of a `bash` call.
    #[serde(default)]
    pub description: Option<String>,
    /// The first line `read` returns.
    #[serde(default)]
    pub offset: Option<Value>,
    /// How many lines `read` returns.
    #[serde(default)]
    pub limit: Option<Value>,
}

/// The agent-neutral operations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// Read a file.
    #[default]
    Read,
    /// List a directory.
    List,
    /// Find files by glob.
    Glob,
    /// Search file contents.
    Grep,
    /// Run a shell command.
    Bash,
    /// Write a file.
    Write,
}

impl OpKind {
    /// The op's name in scripts.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::List => "list",
            Self::Glob => "glob",
            Self::Grep => "grep",
            Self::Bash => "bash",
            Self::Write => "write",
        }
    }
}

impl<'de> Deserialize<'de> for ScriptCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = Map::<String, Value>::deserialize(deserializer)?;
        // As mockllm: a `name` makes a raw call, whatever else is there.
        if let Some(name) = map.remove("name") {
            let Value::String(name) = name else {
                return Err(D::Error::custom("a call's `name` must be a string"));
            };
            let arguments = match map.remove("arguments") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(arguments)) => arguments,
                Some(_) => {
                    return Err(D::Error::custom(format!("the arguments of {name} must be an object")));
                }
            };
            return Ok(Self::Raw { name, arguments });
        }
        let op: ScriptOp = serde_json::from_value(Value::Object(map)).map_err(D::Error::custom)?;
        let missing = |field: &str| D::Error::custom(format!("a `{}` op needs `{field}`", op.op.as_str()));
        match op.op {
            OpKind::Read | OpKind::Write if op.path.is_none() => return Err(missing("path")),
            OpKind::Glob | OpKind::Grep if op.pattern.is_none() => return Err(missing("pattern")),
            OpKind::Bash if op.command.is_none() => return Err(missing("command")),
            _ => {}
        }
        Ok(Self::Op(op))
    }
}

/// A fault injected instead of (or into) a reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// The request numbers (1-based) it fires on.
    #[serde(deserialize_with = "one_or_many")]
    pub at: Vec<u64>,
    /// Which requests are counted.
    #[serde(default)]
    pub of: FaultScope,
    /// What happens.
    pub kind: FaultKind,
    /// `retry-after-ms` of a 429.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// `retry-after` of a 429: seconds, or an HTTP date.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "header_value")]
    pub retry_after: Option<String>,
    /// The status of a `status` fault (and of `500`, as mockllm allows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The body of an HTTP error fault (a `status` fault's; the others default to the
    /// provider's own body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Extra response headers of an HTTP error.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// For faults inside a stream: how many chunks go out before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_chunks: Option<usize>,
}

impl Fault {
    /// A fault of `kind` on request `at`, counting main requests.
    pub fn new(at: u64, kind: FaultKind) -> Self {
        Self {
            at: vec![at],
            of: FaultScope::Main,
            kind,
            retry_after_ms: None,
            retry_after: None,
            status: None,
            body: None,
            headers: BTreeMap::new(),
            after_chunks: None,
        }
    }

    /// The same fault after `chunks` streamed chunks.
    pub fn after_chunks(mut self, chunks: usize) -> Self {
        self.after_chunks = Some(chunks);
        self
    }

    /// Whether it fires on this request.
    pub fn fires(&self, index_all: u64, index_main: u64, is_main: bool) -> bool {
        match self.of {
            FaultScope::Main => is_main && self.at.contains(&index_main),
            FaultScope::All => self.at.contains(&index_all),
        }
    }
}

fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(u64),
        Many(Vec<u64>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(at) => vec![at],
        OneOrMany::Many(at) => at,
    })
}

/// A header value written as a JSON number or string.
fn header_value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(other) => Some(other.to_string()),
    })
}

/// Which requests a fault's `at` counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultScope {
    /// Agent turns only, not title or summary side requests.
    #[default]
    Main,
    /// Every request.
    All,
}

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// `429` with `retry-after-ms` and/or `retry-after` as the fault gives them.
    RateLimited,
    /// `500` (or the fault's `status`).
    ServerError,
    /// `502`.
    BadGateway,
    /// `503`.
    Unavailable,
    /// `529` (Anthropic's overloaded).
    Overloaded,
    /// The provider's context-overflow error (HTTP 400 with its own body).
    Overflow,
    /// Any `status` and `body`.
    Status,
    /// The connection is reset: before the response, or after `after_chunks` chunks.
    Reset,
    /// After `after_chunks` chunks (default 0) nothing more is sent, until the client gives up.
    Stall,
    /// An event whose data is not JSON, after `after_chunks` chunks (default 1).
    Malformed,
    /// The body ends after `after_chunks` chunks (default 1), before the terminal event.
    Cut,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 11] = [
        Self::RateLimited,
        Self::ServerError,
        Self::BadGateway,
        Self::Unavailable,
        Self::Overloaded,
        Self::Overflow,
        Self::Status,
        Self::Reset,
        Self::Stall,
        Self::Malformed,
        Self::Cut,
    ];

    /// The kind's name in scripts.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "429",
            Self::ServerError => "500",
            Self::BadGateway => "502",
            Self::Unavailable => "503",
            Self::Overloaded => "529",
            Self::Overflow => "overflow",
            Self::Status => "status",
            Self::Reset => "reset",
            Self::Stall => "stall",
            Self::Malformed => "malformed",
            Self::Cut => "cut",
        }
    }
}

impl Serialize for FaultKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FaultKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Self::ALL.into_iter().find(|kind| kind.as_str() == name).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|kind| kind.as_str()).collect();
            serde::de::Error::custom(format!(
                "unknown fault kind {name:?}: expected one of {}",
                names.join(", ")
            ))
        })
    }
}

impl Script {
    /// Parses a script; a turn that names an `.sse` file needs [`Script::load`] instead.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        let script = Self::parse(text, None)?;
        if let Some(index) =
            script.turns.iter().position(|turn| turn.sse.is_some() && turn.recorded.is_none())
        {
            return Err(ScriptError::Invalid {
                path: None,
                message: format!("turn {index} names an .sse file: load the script from its file"),
            });
        }
        Ok(script)
    }

    /// Reads a script file; `.sse` files named by turns are read relative to it.
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| ScriptError::Io { path: path.to_owned(), message: err.to_string() })?;
        let mut script = Self::parse(&text, Some(path))?;
        let base = path.parent().unwrap_or(Path::new(""));
        for turn in &mut script.turns {
            if let Some(sse) = &turn.sse {
                let file = base.join(sse);
                let bytes = std::fs::read(&file)
                    .map_err(|err| ScriptError::Io { path: file.clone(), message: err.to_string() })?;
                turn.recorded = Some(Bytes::from(bytes));
            }
        }
        Ok(script)
    }

    /// The demo script bundled with the crate: a few tool steps, then an answer.
    pub fn demo() -> Self {
        // The bundled file is checked by the crate's tests; should it ever fail to parse, an
        // empty script still answers (with the exhausted text) rather than panicking.
        Self::from_json(DEMO_SCRIPT).unwrap_or_else(|_| Self::empty())
    }

    /// A script without turns or faults: every request gets the exhausted text.
    pub fn empty() -> Self {
        Self {
            name: String::new(),
            api: default_api(),
            model: ScriptModel::default(),
            prompt: None,
            title: None,
            turns: Vec::new(),
            faults: Vec::new(),
            exhausted_text: None,
            summary_usage: None,
            chunk_delay: Duration::ZERO,
            chunk_chars: DEFAULT_CHUNK_CHARS,
            aux_without_tools: false,
            workdir: None,
        }
    }

    /// The same script with another fault (mockllm's `--fault`).
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.faults.push(fault);
        self
    }

    /// The same script speaking `api`.
    pub fn with_api(mut self, api: Api) -> Self {
        self.api = api;
        self
    }

    /// The same script with another pause before each chunk (turns' own pauses are kept).
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// The same script resolving relative op paths (and `{cwd}`) against `dir`.
    pub fn with_workdir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workdir = Some(dir.into());
        self
    }

    fn parse(text: &str, path: Option<&Path>) -> Result<Self, ScriptError> {
        let invalid = |message: String| ScriptError::Invalid { path: path.map(Path::to_owned), message };
        let mut script: Self = serde_json::from_str(text).map_err(|err| invalid(err.to_string()))?;
        if script.chunk_chars == 0 {
            return Err(invalid("chunk_chars must be at least 1".to_owned()));
        }
        script.chunk_chars = script.chunk_chars.min(1 << 20);
        if let Some(status) =
            script.faults.iter().filter_map(|fault| fault.status).find(|s| !(100..=599).contains(s))
        {
            return Err(invalid(format!("fault status {status} is not an HTTP status")));
        }
        Ok(script)
    }
}
