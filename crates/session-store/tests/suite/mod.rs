//! Integration tests of session-store's public API, one module per area.
mod support;

mod bad_data;
mod concurrency;
mod crash;
mod deltas;
mod documents;
mod history;
mod leases;
mod migrations;
mod notify;
mod opening;
mod sessions;
