//! Small helpers: id and slug making, ISO times, fork titles, integer conversions.

use session_core::{IdSource, Identifier};

/// Makes ids for the objects the store creates itself (sessions, forked copies).
#[derive(Debug)]
pub(crate) struct Ids {
    source: IdSource,
}

impl Ids {
    pub(crate) fn new(now_ms: u64) -> Self {
        Self { source: IdSource::new(crate::config::random_entropy(now_ms)) }
    }

    pub(crate) fn next<T: Identifier>(&self, now_ms: u64) -> T {
        self.source.next(now_ms)
    }

    /// A new session's slug: two random words, `adjective-noun` (OpenCode's form; our words).
    pub(crate) fn slug(&self) -> String {
        let pick = |words: &[&'static str]| {
            let index = usize::try_from(self.source.next_u64() % words.len() as u64).unwrap_or(0);
            words.get(index).copied().unwrap_or("session")
        };
        let adjective = pick(ADJECTIVES);
        let noun = pick(NOUNS);
        format!("{adjective}-{noun}")
    }

    /// A short random token for owner ids.
    pub(crate) fn token(&self) -> String {
        format!("{:012x}", self.source.next_u64() & 0xffff_ffff_ffff)
    }
}

/// The first word of a slug.
const ADJECTIVES: &[&str] = &[
    "amber", "bold", "breezy", "bright", "brisk", "cheery", "cozy", "daring", "dapper", "deft", "fancy",
    "fluffy", "frosty", "golden", "grand", "humble", "jazzy", "keen", "lively", "lucid", "merry", "modest",
    "noble", "plucky", "polished", "rapid", "rosy", "rustic", "sleek", "snowy", "spry", "steady", "sturdy",
    "vivid", "warm", "zesty",
];

/// The second word of a slug.
const NOUNS: &[&str] = &[
    "acorn", "anchor", "badger", "beacon", "bison", "brook", "canoe", "cedar", "cliff", "clover", "compass",
    "coral", "crane", "delta", "ember", "fern", "fjord", "glacier", "grove", "heron", "hollow", "lantern",
    "maple", "marsh", "meteor", "oasis", "orbit", "pebble", "prairie", "quartz", "raven", "reef", "ridge",
    "sparrow", "summit", "thistle", "tundra", "valley", "walrus", "willow",
];

/// The slug of a session stored before slugs were kept: its id's tail, lower-cased (what the
/// server showed for it then, so a client's links to it still hold).
pub(crate) fn slug_of_id(id: &str) -> String {
    id.strip_prefix("ses_").unwrap_or(id).to_ascii_lowercase()
}

/// Epoch milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`, like JavaScript's `toISOString`.
pub(crate) use session_core::calendar::iso_time;

/// OpenCode's default title of a new session.
pub(crate) fn default_title(child: bool, now_ms: u64) -> String {
    let prefix = if child { "Child session - " } else { "New session - " };
    format!("{prefix}{}", iso_time(now_ms))
}

/// OpenCode's fork title: "T (fork #1)", and "T (fork #n+1)" for a fork of "T (fork #n)".
pub(crate) fn forked_title(title: &str) -> String {
    if let Some(stripped) = title.strip_suffix(')')
        && let Some(index) = stripped.rfind(" (fork #")
        && let number = &stripped[index + " (fork #".len()..]
        && !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit())
        && let Ok(n) = number.parse::<u64>()
    {
        return format!("{} (fork #{})", &title[..index], n.saturating_add(1));
    }
    format!("{title} (fork #1)")
}

/// Epoch ms as stored (SQL integers are signed).
pub(crate) fn to_db(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A stored integer back to epoch ms (negative values read as 0).
pub(crate) fn from_db(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use session_core::{PartId, SessionId};

    #[test]
    fn iso_times_match_javascript() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn fork_titles_count_up() {
        assert_eq!(forked_title("Fix bug"), "Fix bug (fork #1)");
        assert_eq!(forked_title("Fix bug (fork #1)"), "Fix bug (fork #2)");
        assert_eq!(forked_title("Fix bug (fork #x)"), "Fix bug (fork #x) (fork #1)");
        assert_eq!(forked_title("(fork #9)"), "(fork #9) (fork #1)");
    }

    #[test]
    fn slugs_are_two_words_and_old_sessions_read_their_id() {
        let ids = Ids::new(1_000);
        let slug = ids.slug();
        let (adjective, noun) = slug.split_once('-').unwrap_or_default();
        assert!(ADJECTIVES.contains(&adjective) && NOUNS.contains(&noun), "{slug}");
        assert_eq!(slug_of_id("ses_01ABCdef"), "01abcdef");
    }

    #[test]
    fn ids_have_their_prefix_and_order() {
        let ids = Ids::new(1_000);
        let a: PartId = ids.next(1_000);
        let b: PartId = ids.next(1_000);
        assert!(a.as_str().starts_with("prt_") && a.as_str() < b.as_str());
        let s: SessionId = ids.next(1_000);
        assert!(s.as_str().starts_with("ses_"));
    }
}
