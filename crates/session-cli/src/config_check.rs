//! `session config check`: loads the configuration layers `session run` reads, and prints
//! each file (trusted or not), where each key in effect came from, and every warning; an error
//! (a file that does not parse, a wrong type, a missing `SESSION_CONFIG`) fails the command.

use std::io::Write;

use anyhow::Result;
use session_runtime::RuntimeSetup;

use crate::terminal::clean;

/// Checks the configuration of `setup`; returns the number of warnings (an error is `Err`).
pub fn check(setup: &RuntimeSetup, out: &mut impl Write) -> Result<usize> {
    let (sources, resolver) = session_runtime::setup::config_sources(setup);
    let layers = session_runtime::config::load_layers(&sources, &resolver)?;
    let origins = session_runtime::config::key_origins(&layers);
    // The merge and the typed read are what `run` does next: their errors count too.
    let loaded = session_runtime::config::combine(layers)?;
    writeln!(out, "files (lowest layer first):")?;
    if loaded.files.is_empty() {
        writeln!(out, "  none: the defaults apply")?;
    }
    for file in &loaded.files {
        let project = sources.project.iter().any(|path| path == file);
        let mark = match (project, sources.is_trusted(file)) {
            (true, true) => " (project, trusted)",
            (true, false) => " (project, untrusted: `session trust` applies it in full)",
            (false, _) => "",
        };
        writeln!(out, "  {}{mark}", clean(&file.display().to_string()))?;
    }
    if !origins.is_empty() {
        writeln!(out, "keys:")?;
    }
    for origin in &origins {
        writeln!(out, "  {}\t{}", clean(&origin.key), clean(&origin.path.display().to_string()))?;
    }
    if !loaded.warnings.is_empty() {
        writeln!(out, "warnings:")?;
    }
    for warning in &loaded.warnings {
        writeln!(out, "  {}", clean(&warning.to_string()))?;
    }
    writeln!(out, "ok: {} file(s), {} warning(s)", loaded.files.len(), loaded.warnings.len())?;
    Ok(loaded.warnings.len())
}
