//! The engine: bus, status, clock, snapshots and their housekeeping, agents, the prompt loop,
//! titles and summary diffs, revert and unrevert.

mod agent;
mod ahead;
mod answers;
mod background;
mod bus;
mod clock;
mod command;
mod compaction;
mod error;
mod history_mirror;
mod housekeeping;
mod inputs;
mod prompt;
mod question;
mod request;
mod revert;
mod runs;
mod runtime;
mod session_record;
mod sessions;
mod snapshot;
mod snapshot_gc;
mod snapshot_repo;
mod status;
mod step;
mod structured;
mod summary;
mod task;
mod title;
mod variant;

pub use agent::{
    Agent, BUILD_PROMPT, EXPLORE_PROMPT, GENERAL_PROMPT, MAX_STEPS_TEXT, PLAN_PROMPT, environment_prompt,
    utc_date,
};
pub use ahead::RequestAhead;
pub use bus::{Bus, BusEvent};
pub use clock::{Clock, Sleeper, SplitMix, SystemClock, TokioSleeper, random_entropy};
pub use command::{CommandInput, expand_template};
pub use error::RuntimeError;
pub use inputs::{ModelSource, PromptInput, ProviderEntry, RuntimeSettings, parse_model_ref};
pub use question::{QuestionNotFound, QuestionRequest, Questions};
pub(crate) use request::RequestSources;
pub use runtime::Runtime;
pub(crate) use runtime::RuntimeParts;
pub use session_record::SessionStart;
pub use snapshot::{GitSnapshotter, MAX_UNTRACKED_BYTES, NoSnapshots, Snapshotter};
pub use snapshot_gc::{HousekeepingReport, SnapshotRetention, SnapshotStoreReport};
pub use status::SessionStatus;
pub use structured::{STRUCTURED_OUTPUT_INSTRUCTION, STRUCTURED_OUTPUT_TOOL, missing_output_error};
pub use task::{TASK_TOOL, TaskTool};
pub use title::title_model;
