//! The differences the suite lets pass: those kept on purpose (each an entry of docs/SPEC.md
//! §17), those found and not fixed yet, and those where OpenCode itself loses a race with its
//! own exit (its side then holds nothing). `case` is a case's name or `*`; `path` a pattern
//! over the difference's path (`*` one segment, a final `**` the rest).

/// Why a difference passes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Why {
    /// Kept on purpose: the title of its docs/SPEC.md §17 entry.
    Kept(&'static str),
    /// Not fixed yet: what differs.
    Open(&'static str),
    /// OpenCode's value is empty because its run exited before its own background work wrote
    /// it: what that work is. Passes only when OpenCode's side is empty.
    Race(&'static str),
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Kept(title) => write!(f, "kept (SPEC §17 \"{title}\")"),
            Self::Open(what) => write!(f, "open ({what})"),
            Self::Race(what) => write!(f, "OpenCode's race ({what})"),
        }
    }
}

/// One listed difference.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Allowed {
    /// The case, or `*` for every case.
    pub case: &'static str,
    /// The pattern over the difference's path.
    pub path: &'static str,
    /// Why it passes.
    pub why: Why,
}

const fn kept(case: &'static str, path: &'static str, title: &'static str) -> Allowed {
    Allowed { case, path, why: Why::Kept(title) }
}

#[expect(
    dead_code,
    reason = "every difference the suite found is fixed or kept; a new one is listed through it"
)]
const fn open(case: &'static str, path: &'static str, what: &'static str) -> Allowed {
    Allowed { case, path, why: Why::Open(what) }
}

/// Differences kept on purpose.
pub(crate) const KEPT: &[Allowed] = &[
    kept("*", "stored/info/version", "The program's own version"),
    kept("*", "printed/*/body/version", "The program's own version"),
    kept("*", "sent/*/*/headers/user-agent", "User-Agent names session"),
    kept("*", "stored/messages/*/parts/*/state/metadata/sandbox", "Command sandbox metadata"),
    kept("*", "printed/*/lines/*/part/state/metadata/sandbox", "Command sandbox metadata"),
    kept("*", "sent/main/*/body/tools/*/$schema", "Tool schema notation"),
    kept("*", "sent/main/*/body/tools/*/properties/*/maximum", "Tool schema notation"),
    kept("*", "sent/main/*/body/skills/customize-opencode", "No built-in skill"),
    kept("write_file", "stored/info/summary/*", "The session summary counts the run's changes"),
    kept("edit_file", "stored/info/summary/*", "The session summary counts the run's changes"),
];

/// Differences the suite found that are not fixed yet (none today: each difference found is
/// fixed or kept in §17).
pub(crate) const OPEN: &[Allowed] = &[];

const fn race(case: &'static str, path: &'static str, what: &'static str) -> Allowed {
    Allowed { case, path, why: Why::Race(what) }
}

/// Values OpenCode writes from background work that `opencode run` does not wait for: under
/// load its process exits first and the export shows them empty. They pass only then (never a
/// different non-empty value), and a run where OpenCode wins its race does not make them stale.
pub(crate) const RACES: &[Allowed] = &[
    race("write_file", "stored/messages/0/info/summary/diffs", "the user message's diff summary"),
    race("edit_file", "stored/messages/0/info/summary/diffs", "the user message's diff summary"),
    race("structured_output", "stored/messages/0/info/summary", "the user message's diff summary"),
];

/// Whether OpenCode's side of a difference is empty (nothing, `[]`, `{}`), as a lost race leaves it.
pub(crate) fn empty(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Null => true,
        serde_json::Value::Array(items) => items.is_empty(),
        serde_json::Value::Object(fields) => fields.is_empty(),
        _ => false,
    }
}
