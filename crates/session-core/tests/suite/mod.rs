//! Integration tests of session-core's public API, one module per area.
mod compaction;
mod doom_loop;
mod history;
mod js_json;
mod overflow;
mod permission;
mod processor;
mod provider_error;
mod retry;
mod token;
mod usage;
