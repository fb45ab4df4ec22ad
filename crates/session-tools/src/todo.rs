//! Session todo lists, kept for `todowrite` and the clients that read them.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use session_core::SessionId;

/// One todo item, as OpenCode's `todowrite` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// Brief description of the task
    pub content: String,
    /// Current status of the task: pending, in_progress, completed, cancelled
    pub status: String,
    /// Priority level of the task: high, medium, low
    pub priority: String,
}

/// Where the todo lists of sessions live (memory by default; the runtime may persist them and
/// publish `todo.updated`).
pub trait TodoStore: Send + Sync {
    /// The session's current list.
    fn get(&self, session_id: &SessionId) -> Vec<Todo>;
    /// Replaces the session's list.
    fn set(&self, session_id: &SessionId, todos: Vec<Todo>);
}

/// Todo lists in memory.
#[derive(Debug, Default)]
pub struct MemoryTodos {
    lists: Mutex<HashMap<SessionId, Vec<Todo>>>,
}

impl TodoStore for MemoryTodos {
    fn get(&self, session_id: &SessionId) -> Vec<Todo> {
        self.lists.lock().unwrap_or_else(PoisonError::into_inner).get(session_id).cloned().unwrap_or_default()
    }

    fn set(&self, session_id: &SessionId, todos: Vec<Todo>) {
        self.lists.lock().unwrap_or_else(PoisonError::into_inner).insert(session_id.clone(), todos);
    }
}
