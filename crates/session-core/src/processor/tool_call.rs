//! The tool-call lifecycle (SPEC 1.2 and 2): a pending part on input start, running on the
//! call (after the doom-loop check of SPEC 3), completed or failed on the result.

use serde_json::Value;

use super::protocol::{Effect, Input, ProcessorError, ToolSettlement};
use super::repair::{INVALID_TOOL, RepairedCall, invalid_json_input, repair_tool_call};
use super::state::{Phase, Processor};
use crate::event::{ProviderMetadata, ToolFailure, ToolResultKind, ToolResultValue};
use crate::js_json::JsonObject;
use crate::message::{
    FilePart, MessageError, PartKind, ToolOutput, ToolPart, ToolState, normalize_tool_input,
    with_provider_executed,
};
use crate::permission::check_doom_loop_in;

impl Processor {
    pub(super) fn tool_call(
        &mut self,
        id: String,
        name: String,
        input: Value,
        provider_executed: bool,
        provider_metadata: Option<ProviderMetadata>,
        now: u64,
    ) {
        let index = self.ensure_tool_call(&id, &name, provider_executed, now);
        // The providers pass arguments that are not JSON on as their text (a string).
        let unparsed = match &input {
            Value::String(raw) => Some(raw.clone()),
            _ => None,
        };
        let mut input = normalize_tool_input(input);
        let mut name = name;
        if let Some(offered) = &self.config.offered_tools
            && !provider_executed
        {
            match repair_tool_call(&name, offered) {
                RepairedCall::AsCalled => {}
                RepairedCall::Renamed(tool) => name = tool,
                RepairedCall::Invalid(repaired) => {
                    name = INVALID_TOOL.to_owned();
                    input = repaired;
                }
            }
            // As OpenCode 1.18.34 does: a known tool called with arguments that are
            // not JSON runs as `invalid`, which tells the model why, instead of failing the
            // schema check of the tool it named. (A JSON string whose text is not JSON in turn
            // is taken the same way: the providers' text cannot tell the two apart here.)
            if name != INVALID_TOOL
                && let Some(repaired) = unparsed.as_deref().and_then(|raw| invalid_json_input(&name, raw))
            {
                name = INVALID_TOOL.to_owned();
                input = repaired;
            }
        }
        let PartKind::Tool(tool) = &mut self.part_mut(index).kind else { return };
        let executed_by_provider = provider_executed || tool.provider_executed();
        tool.tool.clone_from(&name);
        if tool.state.start(input.clone(), now).is_err() {
            // A call for a settled part: the table allows no transition, so nothing changes.
            return;
        }
        tool.metadata = if executed_by_provider {
            Some(with_provider_executed(provider_metadata))
        } else {
            provider_metadata
        };
        let part_id = self.parts[index].id.clone();
        self.upsert(index);
        if let Some(request) = check_doom_loop_in(&self.parts, &name, &input) {
            self.phase = Phase::AwaitPermission { call_id: id.clone() };
            self.effects.push_back(Effect::AskPermission { call_id: id, request: Box::new(request) });
            return;
        }
        if !executed_by_provider {
            self.effects.push_back(Effect::ExecuteTool {
                part_id,
                call_id: id,
                tool: name,
                input: Box::new(input),
            });
        }
    }

    pub(super) fn permission_replied(&mut self, reply: Result<(), String>) -> Result<(), ProcessorError> {
        let Phase::AwaitPermission { call_id } = &self.phase else {
            return Err(self.unexpected(&Input::PermissionReply(reply)));
        };
        let call_id = call_id.clone();
        self.phase = Phase::Streaming;
        match reply {
            Ok(()) => {
                if let Some(index) = self.tracked_index(&call_id)
                    && let PartKind::Tool(tool) = &self.parts[index].kind
                    && !tool.provider_executed()
                    && let ToolState::Running { input, .. } = &tool.state
                {
                    self.effects.push_back(Effect::ExecuteTool {
                        part_id: self.parts[index].id.clone(),
                        call_id,
                        tool: tool.tool.clone(),
                        input: Box::new(input.clone()),
                    });
                }
                Ok(())
            }
            Err(message) => Err(ProcessorError::Stream(MessageError::UnknownError { message })),
        }
    }

    pub(super) fn tool_progress(
        &mut self,
        call_id: &str,
        title: Option<String>,
        metadata: Option<JsonObject>,
        now: u64,
    ) {
        let Some(index) = self.tracked_index(call_id) else { return };
        if let PartKind::Tool(tool) = &mut self.part_mut(index).kind
            && tool.state.update_progress(title, metadata, now).is_ok()
        {
            self.upsert(index);
        }
    }

    /// Reuses the tracked part of a call or creates a pending one; returns its index.
    pub(super) fn ensure_tool_call(
        &mut self,
        id: &str,
        name: &str,
        provider_executed: bool,
        now: u64,
    ) -> usize {
        if let Some(index) = self.tracked_index(id)
            && let PartKind::Tool(tool) = &mut self.part_mut(index).kind
        {
            if provider_executed && !tool.provider_executed() {
                tool.metadata = Some(with_provider_executed(tool.metadata.take()));
                self.upsert(index);
            }
            return index;
        }
        self.new_tool_call(id.to_owned(), name.to_owned(), provider_executed, now)
    }

    /// A tool-input-start: the part of the call, made from the event's own strings when the
    /// call is new (no copies of id and name).
    pub(super) fn start_tool_input(&mut self, id: String, name: String, provider_executed: bool, now: u64) {
        if self.tracked_index(&id).is_some() {
            self.ensure_tool_call(&id, &name, provider_executed, now);
        } else {
            self.new_tool_call(id, name, provider_executed, now);
        }
    }

    /// A pending part for a call not tracked yet; returns its index.
    fn new_tool_call(&mut self, id: String, name: String, provider_executed: bool, now: u64) -> usize {
        let index = self.push_part(
            PartKind::Tool(ToolPart {
                call_id: id,
                tool: name,
                state: ToolState::pending(),
                metadata: provider_executed.then(|| with_provider_executed(None)),
            }),
            now,
        );
        // The newest part: the list stays in part order.
        self.toolcalls.push(index);
        self.upsert(index);
        index
    }

    /// A tool-result event; `name` is the event's own (the default title, moved, not copied).
    pub(super) fn complete_tool_call(&mut self, id: &str, name: String, result: ToolResultValue, now: u64) {
        self.record_output(id, derive(move || name, result), now);
    }

    /// A tool the driver ran settled: recorded in the phases where a tool-result or tool-error
    /// event would be, the same way.
    pub(super) fn tool_settled(
        &mut self,
        settlement: ToolSettlement,
        now: u64,
    ) -> Result<(), ProcessorError> {
        // A tool that ran is recorded as it ended whatever came first: the overflow cut stops
        // reading the stream, not the tools the processor started.
        let grace = match self.phase {
            Phase::Streaming | Phase::Cut | Phase::AwaitPermission { .. } | Phase::AwaitStepTools(_) => false,
            Phase::Grace => true,
            _ => return Err(self.unexpected(&Input::ToolSettled(settlement))),
        };
        match settlement {
            ToolSettlement::Completed { call_id, output } => self.record_output(&call_id, output, now),
            ToolSettlement::Failed { call_id, message, failure } => {
                self.fail_tool_call(&call_id, message, failure.as_ref(), now);
            }
        }
        if grace {
            self.maybe_end_grace(now);
        } else {
            self.resume_held_step();
        }
        Ok(())
    }

    fn record_output(&mut self, id: &str, output: ToolOutput, now: u64) {
        let Some(index) = self.tracked_index(id) else { return };
        let PartKind::Tool(tool) = &mut self.part_mut(index).kind else { return };
        if tool.state.complete(output, now).is_ok() {
            self.untrack(index);
            self.upsert(index);
        }
    }

    pub(super) fn fail_tool_call(
        &mut self,
        id: &str,
        message: String,
        failure: Option<&ToolFailure>,
        now: u64,
    ) {
        let Some(index) = self.tracked_index(id) else { return };
        let PartKind::Tool(tool) = &mut self.part_mut(index).kind else { return };
        if tool.state.fail(message, now).is_ok() {
            if matches!(failure, Some(ToolFailure::PermissionRejected | ToolFailure::QuestionRejected)) {
                self.blocked = self.should_break;
            }
            self.untrack(index);
            self.upsert(index);
        }
    }
}

/// SPEC 1.2 "Tool-result output derivation".
pub fn derive_output(tool_name: &str, result: ToolResultValue) -> ToolOutput {
    derive(|| tool_name.to_owned(), result)
}

/// [`derive_output`], with the tool's name (the title when the result gives none) made only
/// when needed.
fn derive(tool_name: impl FnOnce() -> String, result: ToolResultValue) -> ToolOutput {
    if let Value::Object(value) = &result.value
        && let Some(Value::String(output)) = value.get("output")
    {
        let title = match value.get("title") {
            Some(Value::String(title)) => title.clone(),
            _ => tool_name(),
        };
        let metadata = match value.get("metadata") {
            Some(Value::Object(metadata)) => metadata.clone(),
            _ => JsonObject::new(),
        };
        let attachments: Vec<FilePart> = match value.get("attachments") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|item| serde_json::from_value::<FilePart>(item.clone()).ok())
                .collect(),
            _ => Vec::new(),
        };
        return ToolOutput {
            title,
            output: output.clone(),
            metadata,
            attachments: (!attachments.is_empty()).then_some(attachments),
        };
    }
    let metadata = match (&result.kind, &result.value) {
        (ToolResultKind::Json, Value::Object(object)) => object.clone(),
        _ => JsonObject::new(),
    };
    let output = match result.value {
        Value::String(text) => text,
        other => crate::js_json::stringify(&other),
    };
    ToolOutput { title: tool_name(), output, metadata, attachments: None }
}
