//! The process environment, read once when the binary starts: every command takes its copy
//! from here, so the runtime, the tools and the UI see one view of it.

use std::collections::HashMap;
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_environment_is_read_once() {
        let first = super::vars();
        assert!(std::ptr::eq(first, super::vars()));
        assert!(first.contains_key("PATH") || std::env::var_os("PATH").is_none());
    }
}
