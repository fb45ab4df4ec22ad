//! The JSON shapes clients read and send, as typed structs built from the runtime's own types
//! and serialized once: the events of `GET /event` (OpenCode 1.18's names and fields) and of
//! `session run --format events` (the bus's own fields), the session as clients see it, the
//! lines of `session run --format json`, and the prompt parts a client sends.
//!
//! [`BusEvent`](crate::BusEvent) stays a plain Rust type; each event shape here names every
//! field of the bus event it is built from, so a field added to the bus is a compile error here
//! until it is placed in every shape.

mod event;
mod prompt;
mod run_line;
mod session;

pub use event::{
    Connected, Event, MessageChange, MessageRemoval, PartChange, PartDelta, PartRemoval, PermissionReply,
    QuestionRejection, QuestionReply, SessionChange, SessionDiff, SessionFailure, SessionRef,
    SessionStatusChange, Stamped, TodoChange,
};
pub use prompt::{FileInput, PromptPart, TextInput};
pub use run_line::{RunLine, RunLineKind};
pub use session::SessionInfo;
