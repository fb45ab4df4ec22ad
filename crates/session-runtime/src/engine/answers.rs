//! What a client answers or reaches through the runtime besides sessions: the permission asks
//! and questions its tools wait on and their replies, and the workspace they read and write in.

use std::sync::Arc;

use session_core::permission::{PermissionAsk, Reply, Resolution};
use session_core::{PermissionId, QuestionId, SessionId};
use session_tools::{PermissionEngine, QuestionAnswer, Workspace};

use super::question::{QuestionNotFound, QuestionRequest, Questions};
use super::runtime::Runtime;

impl Runtime {
    /// The permission engine the runtime's tools ask through (where a client's asker is).
    pub fn permissions(&self) -> &Arc<PermissionEngine> {
        self.tools.permissions()
    }

    /// The asks waiting for a reply, of one session or of all.
    pub fn pending_permissions(&self, session_id: Option<&SessionId>) -> Vec<PermissionAsk> {
        self.tools.permissions().pending(session_id)
    }

    /// Answers the ask `request_id` (OpenCode's `once`, `always` or `reject`, with the user's
    /// message for a rejection); returns what the reply settled, empty when nothing waited.
    pub fn reply_permission(
        &self,
        request_id: &PermissionId,
        reply: Reply,
        message: Option<&str>,
    ) -> Vec<Resolution> {
        self.tools.permissions().reply(request_id, reply, message)
    }

    /// The project folder the tools work in, with its pinned file access.
    pub fn workspace(&self) -> &Workspace {
        self.tools.workspace()
    }
}

impl Runtime {
    /// The questions waiting for an answer, in every session, oldest first (`GET /question`).
    pub fn questions(&self) -> Vec<QuestionRequest> {
        self.questions.list()
    }

    /// The table the `question` tool of this runtime asks through.
    pub fn question_asker(&self) -> Arc<Questions> {
        self.questions.clone()
    }

    /// Answers a waiting question; publishes `question.replied`.
    pub fn reply_question(
        &self,
        id: &QuestionId,
        answers: Vec<QuestionAnswer>,
    ) -> Result<(), QuestionNotFound> {
        self.questions.reply(id, answers)
    }

    /// Dismisses a waiting question; publishes `question.rejected`, and the asking call fails
    /// (which stops the loop as a rejected permission does).
    pub fn reject_question(&self, id: &QuestionId) -> Result<(), QuestionNotFound> {
        self.questions.reject(id)
    }
}
