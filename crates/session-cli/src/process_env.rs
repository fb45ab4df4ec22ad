//! The process environment, read once when the binary starts: every command takes its copy
//! from here, so the runtime, the tools and the UI see one view of it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static VARS: OnceLock<HashMap<String, String>> = OnceLock::new();

/// The variables whose names and values are UTF-8, as the process started with them. The
/// others are skipped: no setting of ours is spelled that way, and `std::env::vars` would panic
/// on them.
pub fn vars() -> &'static HashMap<String, String> {
    VARS.get_or_init(|| {
        std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect()
    })
}

/// The data folder (the database, logs, whole command outputs): `$XDG_DATA_HOME/session`,
/// else `~/.local/share/session`.
pub fn data_dir(env: &HashMap<String, String>, home: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(xdg) = env.get("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("session"));
    }
    home.map(|home| home.join(".local/share/session"))
        .ok_or_else(|| anyhow::anyhow!("cannot find a data folder: set HOME or XDG_DATA_HOME"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_environment_is_read_once() {
        let first = super::vars();
        assert!(std::ptr::eq(first, super::vars()));
        assert!(first.contains_key("PATH") || std::env::var_os("PATH").is_none());
    }
}
