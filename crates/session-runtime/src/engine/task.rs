//! The `task` tool (OpenCode's `tool/task.ts`): a primary agent delegates a task to a
//! subagent, which runs in a child session (`parentID` set) through the same prompt loop, with
//! its own tools, rules and model. Several calls in one step run at once (the step runs tool
//! calls concurrently); the part shows the child's session id and current tool as it goes and
//! ends with the child's final text. The parent's abort aborts the child; the child's
//! permission asks reach the parent's asker (both share one tool executor).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use session_core::{
    Identifier as _, JsonObject, Message, MessageWithParts, ModelRef, PartKind, SessionId,
    permission::PermissionRequest,
};
use session_store::NewSession;
use session_tools::{Tool, ToolContext, ToolError, ToolSuccess};

use super::agent::Agent;
use super::bus::BusEvent;
use super::inputs::{PromptInput, parse_model_ref};
use super::runtime::Runtime;

pub use super::agent::TASK_TOOL;

/// The arguments, as OpenCode's task tool takes them.
#[derive(Debug, Deserialize)]
struct TaskArgs {
    /// A short (3-5 words) description of the task.
    description: String,
    /// The task for the agent to perform.
    prompt: String,
    /// The type of specialized agent to use for this task.
    subagent_type: String,
    /// The id of an earlier task's session, to continue it.
    #[serde(default)]
    task_id: Option<String>,
}

/// The `task` tool; [`TaskTool::attach`] gives it the runtime once that is built.
pub struct TaskTool {
    runtime: OnceLock<Weak<Runtime>>,
    description: String,
}

impl std::fmt::Debug for TaskTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTool").finish_non_exhaustive()
    }
}

impl TaskTool {
    /// The tool, describing the visible subagents of `agents` to the model.
    pub fn new(agents: &BTreeMap<String, Agent>) -> Self {
        let listed: Vec<String> = agents
            .values()
            .filter(|agent| agent.is_subagent() && !agent.hidden)
            .map(|agent| {
                let about =
                    agent.description.as_deref().unwrap_or("This subagent should only be called manually.");
                format!("- {}: {about}", agent.name)
            })
            .collect();
        let description = format!(
            "Launch a new agent to handle a complex, multistep task on its own. Available agent types:\n{}\n\n\
             Give it a short description and a detailed prompt saying exactly what to do and what to report \
             back; it cannot ask you anything. Launch several at once, in one message, for independent work. \
             Its final message comes back as the result, which the user does not see: summarise it for them. \
             Pass task_id (from an earlier result) to continue that task's session instead of starting a new \
             one.",
            listed.join("\n")
        );
        Self { runtime: OnceLock::new(), description }
    }

    /// Gives the tool the runtime whose executor holds it (a weak handle: the runtime owns the
    /// tool, not the other way round). A second call changes nothing.
    pub fn attach(&self, runtime: &Arc<Runtime>) {
        // Only the first runtime counts; a later one is ignored by design.
        let _ = self.runtime.set(Arc::downgrade(runtime));
    }

    fn runtime(&self) -> Result<Arc<Runtime>, ToolError> {
        self.runtime.get().and_then(Weak::upgrade).ok_or_else(|| ToolError::Failed {
            message: "the task tool is not attached to a runtime".to_owned(),
        })
    }
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        TASK_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 words) description of the task"},
                "prompt": {"type": "string", "description": "The task for the agent to perform"},
                "subagent_type": {"type": "string", "description": "The type of specialized agent to use for this task"},
                "task_id": {"type": "string", "description": "Set only to continue an earlier task: the task_id it returned"},
                "command": {"type": "string", "description": "The command that triggered this task"}
            },
            // As OpenCode 1.18.34 offers it: `command`, and no additionalProperties.
            "required": ["description", "prompt", "subagent_type"]
        })
    }

    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let args: TaskArgs = serde_json::from_value(Value::Object(args)).map_err(|error| {
            ToolError::InvalidArguments { tool: TASK_TOOL.to_owned(), details: error.to_string() }
        })?;
        let runtime = self.runtime()?;
        let agent = runtime.subagent(&args.subagent_type)?;
        ctx.ask(PermissionRequest {
            permission: TASK_TOOL.to_owned(),
            patterns: vec![agent.name.clone()],
            always: vec![agent.name.clone()],
            metadata: JsonObject::new(),
        })
        .await?;
        let parent = ctx.session_id();
        let child =
            runtime.child_session(parent, args.task_id.as_deref(), &args.description, &agent.name).await?;
        runtime.bound_child(parent, ctx.agent(), &child, ctx.sandbox().settings().mode).await?;
        let model = match agent.model.as_deref().and_then(parse_model_ref) {
            Some(model) => Some(model),
            None => runtime.message_model(parent, ctx.message_id()).await,
        };
        let input = PromptInput {
            text: args.prompt,
            agent: Some(agent.name.clone()),
            model,
            ..PromptInput::default()
        };
        let title = args.description.clone();
        let mut metadata = JsonObject::new();
        metadata.insert("sessionId".to_owned(), json!(child.as_str()));
        metadata.insert("agent".to_owned(), json!(agent.name));
        ctx.metadata(Some(title.clone()), Some(metadata.clone()));

        let mut events = runtime.bus().subscribe();
        let run = runtime.prompt(&child, input);
        tokio::pin!(run);
        let mut aborted = false;
        let mut retry = tokio::time::interval(std::time::Duration::from_millis(50));
        let result = loop {
            tokio::select! {
                result = &mut run => break result,
                () = ctx.abort().cancelled(), if !aborted => {
                    aborted = true;
                    runtime.cancel(&child);
                }
                // A cancel that came before the child's run began is sent again.
                _ = retry.tick(), if aborted => { runtime.cancel(&child); }
                event = events.recv() => {
                    if let Ok(BusEvent::PartUpdated { part }) = event
                        && part.session_id == child
                        && let PartKind::Tool(tool) = &part.kind
                    {
                        metadata.insert("tool".to_owned(), json!(tool.tool));
                        metadata.insert("status".to_owned(), json!(tool.state.status().as_str()));
                        ctx.metadata(Some(title.clone()), Some(metadata.clone()));
                    }
                }
            }
        };
        if aborted {
            return Err(ToolError::Aborted);
        }
        let reply =
            result.map_err(|error| ToolError::Failed { message: format!("the subagent failed: {error}") })?;
        let history = runtime.store().load_history(&child).await.map_err(|error| ToolError::Failed {
            message: format!("the subagent's session could not be read: {error}"),
        })?;
        let text = final_text(&history.messages);
        metadata.remove("tool");
        metadata.remove("status");
        metadata.insert("cost".to_owned(), json!(reply.cost.to_string()));
        if let Some(error) = &reply.error {
            metadata.insert("error".to_owned(), json!(error.message()));
        }
        let output = format!(
            "task_id: {} (to continue this task, pass it as task_id)\n\n<task_result>\n{}\n</task_result>",
            child.as_str(),
            text
        );
        Ok(ToolSuccess::new(title, output, metadata))
    }
}

/// The text of the child's last assistant message.
fn final_text(messages: &[MessageWithParts]) -> String {
    messages
        .iter()
        .rev()
        .find(|message| matches!(message.info, Message::Assistant(_)))
        .map(|message| {
            message
                .parts
                .iter()
                .filter_map(|part| match &part.kind {
                    PartKind::Text(text) if text.synthetic != Some(true) => Some(text.text.trim()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

impl Runtime {
    /// The subagent `name`, or an error listing the ones there are.
    fn subagent(&self, name: &str) -> Result<Agent, ToolError> {
        match self.agents.get(name) {
            Some(agent) if agent.is_subagent() => Ok(agent.clone()),
            _ => {
                let available: Vec<&str> =
                    self.agents.values().filter(|a| a.is_subagent()).map(|a| a.name.as_str()).collect();
                Err(ToolError::InvalidInput {
                    message: format!(
                        "Unknown agent type: {name} is not a valid agent type (subagents: {})",
                        available.join(", ")
                    ),
                })
            }
        }
    }

    /// The session a task runs in: the earlier task's when `task_id` names a child of
    /// `parent`, else a new child of `parent`.
    async fn child_session(
        &self,
        parent: &SessionId,
        task_id: Option<&str>,
        description: &str,
        agent: &str,
    ) -> Result<SessionId, ToolError> {
        let failed = |error: session_store::StoreError| ToolError::Failed { message: error.to_string() };
        if let Some(id) = task_id.and_then(|id| SessionId::parse(id).ok()) {
            let session = self.store.get_session(&id).await.ok();
            if let Some(session) = session.filter(|s| s.parent_id.as_ref() == Some(parent)) {
                return Ok(session.id);
            }
        }
        let parent_session = self.store.get_session(parent).await.map_err(failed)?;
        if parent_session.parent_id.is_some() {
            return Err(ToolError::InvalidInput {
                message: "a subagent cannot start subagents; do the work yourself".to_owned(),
            });
        }
        let session = self
            .store
            .create_session(NewSession {
                id: None,
                project_id: parent_session.project_id.clone(),
                directory: parent_session.directory.clone(),
                title: Some(format!("{description} (@{agent} subagent)")),
                parent_id: Some(parent.clone()),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                // A child may do no more than the session that started it.
                permission: parent_session.permission.clone(),
                // Its folder is its parent's; its prompt names its agent and model.
                path: parent_session.path.clone(),
                agent: None,
                model: None,
            })
            .await
            .map_err(failed)?;
        self.bus.publish(BusEvent::SessionCreated { info: Box::new(session.clone()) });
        Ok(session.id)
    }

    /// Bounds the child session `child` by its parent: every permission decision of the child
    /// is the stricter of its own agent's and the parent's (the parent agent's rules, the
    /// parent session's rules and "always" answers, and whatever bounds the parent), and its
    /// commands run at least as strictly as the parent's (`parent_mode`). A read-only parent
    /// has read-only children.
    async fn bound_child(
        &self,
        parent: &SessionId,
        parent_agent: &str,
        child: &SessionId,
        parent_mode: session_tools::SandboxMode,
    ) -> Result<(), ToolError> {
        let Some(agent) = self.agents.get(parent_agent) else {
            return Err(ToolError::Failed {
                message: format!("the calling agent {parent_agent} is unknown"),
            });
        };
        let session_rules = self
            .store
            .get_session(parent)
            .await
            .map_err(|error| ToolError::Failed { message: error.to_string() })?
            .permission;
        let permissions = self.tools.permissions();
        let mut parent_rules = super::agent::with_session_rules(agent, &session_rules).ruleset.clone();
        parent_rules.extend(permissions.approved(parent));
        let mut bounds = permissions.bounds(parent);
        bounds.push(parent_rules);
        permissions.set_bounds(child, bounds);
        self.tools.set_session_sandbox(child, parent_mode);
        Ok(())
    }

    /// The model of the parent's message that called the tool, for a subagent with none.
    async fn message_model(
        &self,
        session: &SessionId,
        message: &session_core::MessageId,
    ) -> Option<ModelRef> {
        let history = self.store.load_history(session).await.ok()?;
        history.messages.iter().find_map(|m| match &m.info {
            Message::Assistant(a) if &a.id == message => Some(ModelRef {
                provider_id: a.provider_id.clone(),
                model_id: a.model_id.clone(),
                variant: None,
            }),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use session_tools::Tool;

    use super::*;

    #[test]
    fn the_task_schema_fits_the_meta_schema_and_compiles() {
        // The registry takes it as a built-in (no meta-schema pass at start): this checks it.
        let schema = TaskTool::new(&BTreeMap::new()).parameters();
        if let Err(error) = jsonschema::meta::validate(&schema) {
            panic!("the task tool's schema breaks the meta-schema: {error}");
        }
        assert!(jsonschema::validator_for(&schema).is_ok());
    }
}
