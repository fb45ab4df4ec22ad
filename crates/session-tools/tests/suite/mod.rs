//! Integration tests of session-tools, one module per area.
mod bash;
mod doomloop;
mod executor;
mod files;
mod permission;
mod search;
mod security;
mod support;
mod tracker;
