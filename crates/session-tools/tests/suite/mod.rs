//! Integration tests of session-tools, one module per area.
mod bash;
mod bash_patterns;
mod doomloop;
mod executor;
mod files;
mod git_dir;
mod opencode_shapes;
mod permission;
mod races;
mod sandbox;
mod search;
mod security;
mod shell;
mod support;
mod tracker;
