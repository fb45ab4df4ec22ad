//! Tool execution for the session runtime.
//!
//! `session-tools` owns what happens between the processor's `Effect::ExecuteTool` and the
//! tool-result or tool-error event that goes back to it:
//!
//! - the [`Tool`] trait and the [`ToolRegistry`] that validates arguments against each tool's
//!   JSON schema before the tool runs ([`ToolError::InvalidArguments`] names the wrong field);
//! - the [`ToolExecutor`], which runs one call with a [`ToolContext`] (workspace root,
//!   cancellation token, metadata callback, permission asks);
//! - the [`CallTracker`]: one oneshot per running call (SPEC 1.2's `done` Deferred), updates in
//!   order ([`CallTracker::next`]) and the 250 ms cleanup grace of SPEC 8
//!   ([`CallTracker::wait_all`]);
//! - the [`PermissionEngine`]: session-core's pure rules and pending-ask bookkeeping plus the
//!   waiting, "always" answers per session, and the [`PermissionAsker`] that shows asks;
//! - the built-in tools `read`, `write`, `edit`, `glob`, `grep`, `bash` and `todowrite`, with
//!   OpenCode 1.18.34's names and parameter names, the file tools confined to the [`Workspace`]
//!   (a path outside it asks `external_directory`).
//!
//! It deliberately does not own the rules themselves (`session_core::permission::evaluate`, the agents'
//! rulesets), the tool-part state machine (the processor), persistence, the event bus or the
//! model request; and it reads no environment variables (the `bash` child inherits the
//! environment of the process, which is intended).
//!
//! `bash` is governed by permissions, with one `bash` pattern per command that
//! [`shell::analyse`] finds would run (and `external_directory`/`edit` asks for the files it
//! names and writes), and its commands run in the [`sandbox`] (Landlock and seccomp on Linux)
//! that the runtime configures: patterns see text, the sandbox confines the process.

mod context;
mod error;
mod executor;
mod image;
mod permission;
mod pinned;
mod registry;
pub mod sandbox;
pub mod shell;
mod shell_env;
mod source;
mod todo;
mod tool;
mod tool_output;
mod tools;
mod tracker;
mod truncate;
mod workspace;

pub use context::{ContextParts, PathKind, ProgressSink, ToolContext};
pub use error::ToolError;
pub use executor::{ABORT_GRACE, CallScope, ToolExecutor, ToolInvocation};
pub use image::{MAX_IMAGE_BYTES, MAX_IMAGE_SIDE, RESIZED_SIDE, fit_images, omitted_suffix};
pub use permission::{PermissionAnswer, PermissionAsker, PermissionEngine, ReplyLater};
pub use pinned::{Opened, PinnedFolder, PinnedPath, in_git_folder, open_beneath};
pub use registry::{ToolDefinition, ToolRegistry, schema_problems};
pub use sandbox::{Enforcement, KernelSupport, Sandbox, SandboxMode, SandboxSettings, SandboxTarget};
pub use shell_env::{DEFAULT_EXCLUDES, ShellEnvPolicy};
pub use source::ToolSource;
pub use todo::{MemoryTodos, Todo, TodoStore};
pub use tool::{Tool, ToolSuccess, parse_args, schema_for};
pub use tool_output::ToolOutputDir;
pub use tools::{
    BashTool, DEFAULT_TIMEOUT_MS, EditTool, GlobTool, GrepTool, KILL_GRACE, MAX_LINE_LENGTH,
    MAX_OUTPUT_BYTES, MAX_OUTPUT_CHARS, MAX_OUTPUT_LINES, MAX_READ_BYTES, MAX_TIMEOUT_MS, RESULT_LIMIT,
    ReadTool, TodoWriteTool, WriteTool, builtin_registry, builtin_tools, walk_project,
};
pub use tools::{
    QUESTION_TOOL, QuestionAnswer, QuestionAsk, QuestionAsker, QuestionOption, QuestionPrompt, QuestionTool,
    question_output, question_title,
};
pub use tools::{
    SKILL_FILE, SKILL_FILES_LISTED, SKILL_TOOL, Skill, SkillTool, available_skills, skill_output,
    skills_prompt,
};
pub use tracker::{CLEANUP_GRACE, CallHandle, CallTracker, Settlement, ToolCompletion, ToolUpdate};
pub use workspace::{ResolvedPath, Workspace};
