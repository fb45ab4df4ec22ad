//! The one error type of configuration loading, and the warning for unknown keys.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A config file exists but could not be read.
    #[error("{}: cannot read the file: {source}", path.display())]
    Read {
        /// The config file.
        path: PathBuf,
        /// The underlying failure.
        #[source]
        source: io::Error,
    },
    /// The file named by `SESSION_CONFIG` does not exist.
    #[error("{}: the config file named by SESSION_CONFIG does not exist", path.display())]
    MissingExplicit {
        /// The path as resolved.
        path: PathBuf,
    },
    /// A `{file:...}` substitution names a file that cannot be read.
    #[error("{}: bad file reference: \"{token}\" {}", path.display(), describe_io(resolved, source))]
    FileReference {
        /// The config file holding the reference.
        path: PathBuf,
        /// The reference as written, `{file:...}`.
        token: String,
        /// The file it names, resolved against the config file's directory or home.
        resolved: PathBuf,
        /// The underlying failure.
        #[source]
        source: io::Error,
    },
    /// The text is not JSONC.
    #[error("{}: {message} at line {line}, column {column}", path.display())]
    Parse {
        /// The config file.
        path: PathBuf,
        /// 1-based line of the error (after substitutions).
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the parser expected or found.
        message: String,
    },
    /// A value has the wrong type or an impossible value.
    #[error("{}: {}: expected {expected}, found {found}", path.display(), display_key(key))]
    WrongType {
        /// The config file (or a pseudo path for values built in code).
        path: PathBuf,
        /// Dot-separated key path, for example `agent.build.steps`; empty for the whole file.
        key: String,
        /// What the key accepts.
        expected: String,
        /// What the file holds there.
        found: String,
    },
    /// `provider.<id>.npm` names a package that no adapter speaks.
    #[error(
        "provider {provider:?}: unsupported provider package {package:?} (supported: {})",
        supported_packages()
    )]
    UnsupportedProviderPackage {
        /// The provider id.
        provider: String,
        /// The configured `npm` package.
        package: String,
    },
}

fn describe_io(resolved: &Path, source: &io::Error) -> String {
    // OpenCode's wording for a missing file, the system's for anything else.
    if source.kind() == io::ErrorKind::NotFound {
        format!("{} does not exist", resolved.display())
    } else {
        format!("{}: {source}", resolved.display())
    }
}

fn supported_packages() -> String {
    session_llm::Api::PACKAGES.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

fn display_key(key: &str) -> &str {
    if key.is_empty() { "the whole file" } else { key }
}

/// A key of a config file that was not applied: reported once per file and key, never fatal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConfigWarning {
    /// The config file that holds the key.
    pub path: PathBuf,
    /// Dot-separated key path, for example `provider.openai.foo`, or a refused substitution.
    pub key: String,
    /// Why it was not applied.
    pub reason: WarningReason,
}

/// Why a config key was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WarningReason {
    /// No layer of the schema knows the key.
    UnknownKey,
    /// The key is in the config of a project folder the user has not trusted.
    Untrusted,
    /// An OpenCode key this runtime loads but does not act on.
    Unsupported,
    /// A file (a markdown agent or command) that resolves outside the folder it belongs to
    /// (a symlink out of the project or the user's config folder) and was not read; the key
    /// says where it leads.
    Outside,
    /// A skill file that was not loaded (no name or description, a name against the rules, a
    /// duplicate, too large, a link out of its folder); the key says why.
    Skill,
}

impl ConfigWarning {
    /// A warning for an unknown key.
    pub fn unknown(path: &std::path::Path, key: impl Into<String>) -> Self {
        Self { path: path.to_path_buf(), key: key.into(), reason: WarningReason::UnknownKey }
    }
}

impl ConfigWarning {
    /// A warning for an OpenCode key without effect here.
    pub fn unsupported(path: &std::path::Path, key: impl Into<String>) -> Self {
        Self { path: path.to_path_buf(), key: key.into(), reason: WarningReason::Unsupported }
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            WarningReason::UnknownKey => write!(f, "{}: unknown key {}", self.path.display(), self.key),
            WarningReason::Unsupported => write!(
                f,
                "{}: {} is not supported here and has no effect (\"warn_unsupported\": false hides this)",
                self.path.display(),
                self.key
            ),
            WarningReason::Outside => write!(f, "{}: not read: {}", self.path.display(), self.key),
            WarningReason::Skill => write!(f, "{}: skill: {}", self.path.display(), self.key),
            WarningReason::Untrusted => write!(
                f,
                "{}: {} ignored: this folder is not trusted (run `session trust` to apply its config in full)",
                self.path.display(),
                self.key
            ),
        }
    }
}

/// A JSON value as an error message names it: its type, and the value itself when short.
pub(super) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.chars().count() <= 40 => format!("string {s:?}"),
        Value::String(_) => "a string".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}
