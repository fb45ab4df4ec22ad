//! How a store is opened: backend settings, timing options, the clock and the seeding of ids.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::StoreError;

pub use session_core::Clock;

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A generator seeded from the standard library's per-process random hash keys, the process
/// id and `salt` (the time, say): enough for id suffixes, slugs and retry jitter without a
/// random-number crate. The one seeding of the workspace's ids (session-core stays free of
/// randomness; it takes the generator).
pub fn random_entropy(salt: u64) -> session_core::SplitMix {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(salt);
    hasher.write_u32(std::process::id());
    session_core::SplitMix::new(hasher.finish())
}

/// Timing and identity of a store, the same for both backends.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// How long a lease lasts without a heartbeat; the heartbeat renews every third of it.
    pub lease_ttl: Duration,
    /// Buffered text deltas are written at least this often while a part streams.
    pub flush_interval: Duration,
    /// This process's owner id in leases; absent makes a unique one.
    pub owner: Option<String>,
    /// Run crash recovery of expired leases when opening.
    pub recover_on_open: bool,
    /// The wall clock.
    pub clock: Arc<dyn Clock>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            lease_ttl: Duration::from_secs(30),
            flush_interval: Duration::from_millis(200),
            owner: None,
            recover_on_open: true,
            clock: Arc::new(SystemClock),
        }
    }
}

/// The embedded SQLite database: one file, WAL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteConfig {
    /// The database file; its folder is created when missing.
    pub path: PathBuf,
    /// How long a write waits for another process's write before failing busy.
    pub busy_timeout: Duration,
    /// Pool size (one writer, the rest readers).
    pub max_connections: u32,
}

impl SqliteConfig {
    /// A database at `path` with default settings.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), busy_timeout: Duration::from_secs(10), max_connections: 8 }
    }
}

/// A PostgreSQL database shared by several runtime instances.
#[derive(Clone, PartialEq, Eq)]
pub struct PgConfig {
    /// `postgres://` or `postgresql://` URL.
    pub url: String,
    /// A schema of its own (created when missing); absent uses the server's search path.
    pub schema: Option<String>,
    /// Pool size; PostgreSQL's default server limit is 100 connections for all clients.
    pub max_connections: u32,
    /// How long to wait for a pooled connection.
    pub acquire_timeout: Duration,
}

impl PgConfig {
    /// A database at `url` with default settings.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), schema: None, max_connections: 10, acquire_timeout: Duration::from_secs(30) }
    }

    /// The same database, in `schema`.
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    pub(crate) fn checked_schema(&self) -> Result<Option<&str>, StoreError> {
        match &self.schema {
            None => Ok(None),
            Some(schema) => {
                let valid = !schema.is_empty()
                    && schema.len() <= 63
                    && schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                    && schema.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                if valid {
                    Ok(Some(schema))
                } else {
                    Err(StoreError::Config(format!(
                        "schema {schema:?}: use lower-case letters, digits and '_' (at most 63)"
                    )))
                }
            }
        }
    }
}

impl fmt::Debug for PgConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may carry a password.
        f.debug_struct("PgConfig")
            .field("url", &redact_url(&self.url))
            .field("schema", &self.schema)
            .field("max_connections", &self.max_connections)
            .field("acquire_timeout", &self.acquire_timeout)
            .finish()
    }
}

fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://***{}", &url[..scheme_end], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// Which database a runtime uses: the `database` setting, or the embedded SQLite file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseConfig {
    /// The embedded default.
    Sqlite(SqliteConfig),
    /// PostgreSQL.
    Postgres(PgConfig),
}

impl DatabaseConfig {
    /// Reads the `database` setting: a PostgreSQL URL, or absent (or empty) for the SQLite
    /// file at `default_sqlite`. `sqlite:PATH` names another SQLite file.
    pub fn from_setting(setting: Option<&str>, default_sqlite: &Path) -> Result<Self, StoreError> {
        let setting = setting.map(str::trim).filter(|s| !s.is_empty());
        match setting {
            None => Ok(Self::Sqlite(SqliteConfig::new(default_sqlite))),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Self::Postgres(PgConfig::new(url)))
            }
            Some(other) => match other.strip_prefix("sqlite://").or_else(|| other.strip_prefix("sqlite:")) {
                Some(path) if !path.is_empty() => Ok(Self::Sqlite(SqliteConfig::new(path))),
                _ => Err(StoreError::Config(format!(
                    "database {:?}: expected a postgres:// URL or sqlite:PATH",
                    redact_url(other)
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_choose_the_backend() {
        let default = Path::new("/data/session.db");
        assert_eq!(
            DatabaseConfig::from_setting(None, default).ok(),
            Some(DatabaseConfig::Sqlite(SqliteConfig::new(default)))
        );
        assert_eq!(
            DatabaseConfig::from_setting(Some("postgres://u@h/db"), default).ok(),
            Some(DatabaseConfig::Postgres(PgConfig::new("postgres://u@h/db")))
        );
        assert_eq!(
            DatabaseConfig::from_setting(Some("sqlite:/tmp/x.db"), default).ok(),
            Some(DatabaseConfig::Sqlite(SqliteConfig::new("/tmp/x.db")))
        );
        assert!(DatabaseConfig::from_setting(Some("mysql://h/db"), default).is_err());
    }

    #[test]
    fn passwords_stay_out_of_debug_output() {
        let config = PgConfig::new("postgres://user:secret@host/db");
        assert!(!format!("{config:?}").contains("secret"));
    }

    #[test]
    fn schema_names_are_checked() {
        assert!(PgConfig::new("postgres://h/db").with_schema("t_1").checked_schema().is_ok());
        assert!(PgConfig::new("postgres://h/db").with_schema("x\"; drop").checked_schema().is_err());
    }
}
