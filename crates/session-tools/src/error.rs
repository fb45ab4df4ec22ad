//! The one error type of this crate.

use session_core::{
    ToolFailure, message::TOOL_ABORTED_TEXT, permission::PermissionError, permission::QuestionRejectedError,
};

/// Why a tool call failed. Its `Display` text is what the model reads as the tool error.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The model called a tool that is not registered.
    #[error("Model tried to call unavailable tool '{name}'. Available tools: {available}.")]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// The registered names, comma separated.
        available: String,
    },
    /// The arguments do not satisfy the tool's schema; the tool did not run.
    #[error(
        "The {tool} tool was called with invalid arguments: {details}.\nPlease rewrite the input so it satisfies the expected schema."
    )]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// Each violation, naming the field (`/offset: ...` or `"filePath" is a required property`).
        details: String,
    },
    /// A permission ask was rejected, corrected or denied by a rule.
    #[error(transparent)]
    Permission(#[from] PermissionError),
    /// The user dismissed a question the tool asked.
    #[error(transparent)]
    QuestionRejected(#[from] QuestionRejectedError),
    /// The call was cancelled before it produced a result.
    #[error("{}", TOOL_ABORTED_TEXT)]
    Aborted,
    /// A path the tool needs does not exist.
    #[error("File not found: {path}{}", suggestion_text(.suggestions))]
    NotFound {
        /// The path as resolved.
        path: String,
        /// Up to three similarly named entries of the same folder.
        suggestions: Vec<String>,
    },
    /// A file tool was given a directory.
    #[error("Path is a directory, not a file: {path}")]
    IsDirectory {
        /// The path as resolved.
        path: String,
    },
    /// A text tool was given a binary file.
    #[error("Cannot read binary file: {path}")]
    BinaryFile {
        /// The path as resolved.
        path: String,
    },
    /// A path that cannot be resolved at all (for example `~` when no home folder is known).
    #[error("Invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Why it was refused.
        reason: String,
    },
    /// The sandbox refused to run a command, or could not be prepared.
    #[error("Sandbox: {reason}")]
    Sandbox {
        /// What the sandbox could not do, and what follows.
        reason: String,
    },
    /// `edit` found no occurrence of `oldString`.
    #[error(
        "Could not find oldString in the file. It must match exactly, including whitespace, indentation, and line endings."
    )]
    EditNotFound,
    /// `edit` found several occurrences of `oldString` and `replaceAll` was not set.
    #[error(
        "Found multiple matches for oldString. Provide more surrounding context to make the match unique."
    )]
    EditNotUnique {
        /// How many occurrences there are.
        count: usize,
    },
    /// `edit` was asked to replace a text with itself.
    #[error("No changes to apply: oldString and newString are identical.")]
    EditNoChange,
    /// The arguments are well formed but not usable (an offset past the end, a bad regex, ...).
    #[error("{message}")]
    InvalidInput {
        /// What is wrong, for the model.
        message: String,
    },
    /// A filesystem or process operation failed.
    #[error("{operation} {path}: {source}")]
    Io {
        /// What was attempted (`read`, `write`, `spawn`, ...).
        operation: &'static str,
        /// The path or command involved.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Any other failure of a tool.
    #[error("{message}")]
    Failed {
        /// What went wrong, for the model.
        message: String,
    },
}

fn suggestion_text(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!("\n\nDid you mean one of these?\n{}", suggestions.join("\n"))
    }
}

impl ToolError {
    /// How the processor should treat this failure (`ToolFailure` of a tool-error event): a plain
    /// rejection blocks the loop, a rejection with feedback or a denial by rule does not.
    pub fn failure(&self) -> ToolFailure {
        match self {
            Self::Permission(PermissionError::Rejected) => ToolFailure::PermissionRejected,
            Self::QuestionRejected(_) => ToolFailure::QuestionRejected,
            Self::Permission(PermissionError::Corrected { .. } | PermissionError::Denied { .. })
            | Self::UnknownTool { .. }
            | Self::InvalidArguments { .. }
            | Self::Aborted
            | Self::NotFound { .. }
            | Self::IsDirectory { .. }
            | Self::BinaryFile { .. }
            | Self::InvalidPath { .. }
            | Self::Sandbox { .. }
            | Self::EditNotFound
            | Self::EditNotUnique { .. }
            | Self::EditNoChange
            | Self::InvalidInput { .. }
            | Self::Io { .. }
            | Self::Failed { .. } => ToolFailure::Other,
        }
    }

    /// True when this failure stops the agent loop, given `experimental.continue_loop_on_deny`.
    pub fn blocks_loop(&self, continue_loop_on_deny: bool) -> bool {
        !continue_loop_on_deny
            && matches!(self.failure(), ToolFailure::PermissionRejected | ToolFailure::QuestionRejected)
    }

    /// An [`ToolError::Io`] for `operation` on `path`.
    pub fn io(operation: &'static str, path: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { operation, path: path.into(), source }
    }

    /// An [`ToolError::InvalidInput`] with this message.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidInput { message: message.into() }
    }
}
