//! A workspace in a temp dir, a second temp dir standing for "outside", and an asker that
//! records every ask and answers from a script.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use session_core::{
    JsonObject, MessageId, SessionId, permission::AgentPaths, permission::BuiltinAgent,
    permission::PermissionAsk, permission::Resolution, permission::Rule, permission::agent_ruleset,
};
use session_tools::{
    CallScope, PermissionAnswer, PermissionAsker, PermissionEngine, ProgressSink, ToolError, ToolExecutor,
    ToolInvocation, ToolSuccess, Workspace, builtin_registry,
};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

type Script = Box<dyn Fn(&PermissionAsk) -> Option<PermissionAnswer> + Send + Sync>;

/// Records asks and answers them with a script (reject everything by default).
pub struct ScriptedAsker {
    pub asks: Mutex<Vec<PermissionAsk>>,
    pub replies: Mutex<Vec<Resolution>>,
    script: Mutex<Script>,
}

impl ScriptedAsker {
    pub fn new(
        script: impl Fn(&PermissionAsk) -> Option<PermissionAnswer> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            asks: Mutex::default(),
            replies: Mutex::default(),
            script: Mutex::new(Box::new(script)),
        })
    }

    pub fn rejecting() -> Arc<Self> {
        Self::new(|_| Some(PermissionAnswer::reject()))
    }

    pub fn set(&self, script: impl Fn(&PermissionAsk) -> Option<PermissionAnswer> + Send + Sync + 'static) {
        *self.script.lock().unwrap() = Box::new(script);
    }

    pub fn asked(&self) -> Vec<PermissionAsk> {
        self.asks.lock().unwrap().clone()
    }

    /// The permissions asked, in order.
    pub fn permissions(&self) -> Vec<String> {
        self.asked().into_iter().map(|ask| ask.request.permission).collect()
    }
}

#[async_trait]
impl PermissionAsker for ScriptedAsker {
    async fn ask(&self, ask: &PermissionAsk) -> Option<PermissionAnswer> {
        self.asks.lock().unwrap().push(ask.clone());
        let answer = (self.script.lock().unwrap())(ask);
        match answer {
            Some(answer) => Some(answer),
            None => std::future::pending().await,
        }
    }

    fn replied(&self, resolution: &Resolution) {
        self.replies.lock().unwrap().push(resolution.clone());
    }
}

pub struct Fixture {
    pub _dir: TempDir,
    pub _outside_dir: TempDir,
    pub _data_dir: TempDir,
    pub root: PathBuf,
    /// The runtime's data folder (whole command outputs go to its `tool-output`).
    pub data: PathBuf,
    pub outside: PathBuf,
    pub asker: Arc<ScriptedAsker>,
    pub executor: Arc<ToolExecutor>,
    pub ruleset: Vec<Rule>,
    pub session: SessionId,
}

pub fn build_rules() -> Vec<Rule> {
    agent_ruleset(Some(BuiltinAgent::Build), &AgentPaths::default(), &[], &[])
}

impl Fixture {
    pub fn new() -> Self {
        Self::with(ScriptedAsker::rejecting(), build_rules(), None)
    }

    pub fn with(asker: Arc<ScriptedAsker>, ruleset: Vec<Rule>, home: Option<&str>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let outside_dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = std::fs::canonicalize(outside_dir.path()).unwrap();
        let mut workspace = Workspace::new(&root).unwrap();
        if let Some(home) = home {
            workspace = workspace.with_home(outside.join(home));
        }
        let engine = Arc::new(PermissionEngine::new(asker.clone()));
        let data_dir = tempfile::tempdir().unwrap();
        let data = std::fs::canonicalize(data_dir.path()).unwrap();
        let executor = Arc::new(
            ToolExecutor::new(builtin_registry().unwrap(), workspace, engine).with_tool_output_in(&data),
        );
        Self {
            _dir: dir,
            _outside_dir: outside_dir,
            _data_dir: data_dir,
            root,
            data,
            outside,
            asker,
            executor,
            ruleset,
            session: SessionId::new_unchecked("ses_test"),
        }
    }

    pub fn scope(&self) -> CallScope {
        CallScope {
            session_id: self.session.clone(),
            message_id: MessageId::new_unchecked("msg_test"),
            agent: "build".into(),
            ruleset: Arc::new(self.ruleset.clone()),
            abort: CancellationToken::new(),
        }
    }

    pub fn write(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn write_outside(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.outside.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub async fn run(&self, tool: &str, input: Value) -> Result<ToolSuccess, ToolError> {
        self.run_with(tool, input, CancellationToken::new(), ProgressSink::none()).await
    }

    pub async fn run_with(
        &self,
        tool: &str,
        input: Value,
        abort: CancellationToken,
        progress: ProgressSink,
    ) -> Result<ToolSuccess, ToolError> {
        let Value::Object(input) = input else { panic!("input must be an object") };
        let call = ToolInvocation { call_id: "call_1".into(), tool: tool.into(), input };
        self.executor.run(&call, &self.scope(), abort, progress).await
    }
}

pub fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

pub fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}
