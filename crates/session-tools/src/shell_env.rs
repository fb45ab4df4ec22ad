//! The environment the bash tool's commands get: the runtime's own, without the variables
//! that hold secrets. One `env` call would otherwise hand every API key to the model, the
//! session store and every export.

use std::ffi::OsString;

use session_core::permission::wildcard_match;

/// Variable-name patterns dropped by default, matched without regard to case: names that look
/// like keys, secrets, tokens or passwords, which covers the providers' own key variables
/// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GITHUB_TOKEN`, ...).
pub const DEFAULT_EXCLUDES: [&str; 8] =
    ["*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*", "*PRIVATE*", "*COOKIE*"];

/// Which variables a command inherits (config `shell_env`): all but those matching an exclude
/// pattern, except that an include pattern keeps a variable whatever the excludes say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellEnvPolicy {
    /// Patterns (`*` wildcards, any case) of names to drop, after [`DEFAULT_EXCLUDES`].
    pub exclude: Vec<String>,
    /// Patterns of names to keep even when an exclude matches.
    pub include: Vec<String>,
    /// Whether [`DEFAULT_EXCLUDES`] apply.
    pub default_excludes: bool,
}

impl Default for ShellEnvPolicy {
    fn default() -> Self {
        Self { exclude: Vec::new(), include: Vec::new(), default_excludes: true }
    }
}

impl ShellEnvPolicy {
    /// True when a command may see the variable `name`.
    pub fn keeps(&self, name: &str) -> bool {
        let upper = name.to_uppercase();
        let matches = |pattern: &str| wildcard_match(&upper, &pattern.to_uppercase());
        if self.include.iter().any(|p| matches(p)) {
            return true;
        }
        let defaults: &[&str] = if self.default_excludes { &DEFAULT_EXCLUDES } else { &[] };
        !defaults.iter().any(|p| matches(p)) && !self.exclude.iter().any(|p| matches(p))
    }

    /// The variables of `vars` a command gets. Names that are not UTF-8 are dropped: no
    /// pattern can be checked against them.
    pub fn filter(&self, vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
        vars.into_iter().filter(|(name, _)| name.to_str().is_some_and(|name| self.keeps(name))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_dropped_and_the_rest_kept() {
        let policy = ShellEnvPolicy::default();
        for name in [
            "OPENAI_API_KEY",
            "anthropic_api_key",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "SSH_PRIVATE_KEY_PATH",
        ] {
            assert!(!policy.keeps(name), "{name} must be dropped");
        }
        for name in ["PATH", "HOME", "LANG", "CARGO_HOME", "TERM"] {
            assert!(policy.keeps(name), "{name} must be kept");
        }
    }

    #[test]
    fn include_wins_and_exclude_adds() {
        let policy = ShellEnvPolicy {
            exclude: vec!["AWS_*".into()],
            include: vec!["NPM_TOKEN".into()],
            default_excludes: true,
        };
        assert!(policy.keeps("NPM_TOKEN"));
        assert!(!policy.keeps("AWS_REGION"));
        let open = ShellEnvPolicy { default_excludes: false, ..ShellEnvPolicy::default() };
        assert!(open.keeps("OPENAI_API_KEY"));
        let vars = vec![
            (OsString::from("PATH"), OsString::from("/bin")),
            (OsString::from("MY_KEY"), OsString::from("x")),
        ];
        assert_eq!(policy.filter(vars), vec![(OsString::from("PATH"), OsString::from("/bin"))]);
    }
}
