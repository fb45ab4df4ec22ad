//! The stream processor: a sans-IO state machine (SPEC 1.2, 3, 4 and 8).
//!
//! The processor turns [`LlmEvent`](crate::event::LlmEvent)s into stored parts of one
//! assistant message. It performs no IO: every outside action (persist a part, publish a
//! delta, take a snapshot, compute a patch, ask a permission, run a tool) is an [`Effect`]
//! that the driver drains with [`Processor::poll_effect`] and carries out. Effects that need an answer (a snapshot hash,
//! a patch's files, a permission reply) put the processor in a waiting state until the driver
//! feeds the answer back as an [`Input`]. Time comes in with every input.
//!
//! The driver owns what needs a clock or a runtime: retries (it calls
//! [`Processor::begin_attempt`] before re-running a stream), the 250 ms cleanup grace, and
//! cancellation.
//!
//! Layout: `protocol` (effects, inputs, outcome), `state` (the [`Processor`] and its shared
//! plumbing), and one module per family of handlers: `stream` (SPEC 1.2 events), `tool_call`
//! (the tool-call lifecycle), `step` (SPEC 4), `halt` (SPEC 8) and `repair` (SPEC 1.1 tool-call repair).

mod halt;
mod protocol;
mod repair;
mod state;
mod step;
mod stream;
mod tool_call;

pub use protocol::{
    Effect, Input, Outcome, ProcessorConfig, ProcessorError, SnapshotPurpose, ToolSettlement, Waiting,
};
pub use repair::{INVALID_TOOL, RepairedCall, repair_tool_call, unavailable_tool_error};
pub use state::Processor;
pub use stream::summary_tool_call_error;
pub use tool_call::derive_output;
