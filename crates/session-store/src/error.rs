//! The one error type of the crate.

use std::fmt;
use std::path::PathBuf;

use session_core::SessionId;

/// The kind of stored object an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntityKind {
    /// A session.
    Session,
    /// A message.
    Message,
    /// A part.
    Part,
}

impl EntityKind {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Message => "message",
            Self::Part => "part",
        }
    }
}

impl fmt::Display for EntityKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything a store operation can fail with; callers branch on the variant, never on text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The object does not exist.
    #[error("{kind} {id} not found")]
    NotFound {
        /// What was looked for.
        kind: EntityKind,
        /// Its id.
        id: String,
    },
    /// An object with this id already exists (import of a session that is there).
    #[error("{kind} {id} already exists")]
    AlreadyExists {
        /// What exists.
        kind: EntityKind,
        /// Its id.
        id: String,
    },
    /// A written row refers to a session or message that does not exist.
    #[error("{kind} {id} refers to a session or message that does not exist")]
    MissingParent {
        /// What was written.
        kind: EntityKind,
        /// Its id.
        id: String,
    },
    /// Another live process holds the session's lease.
    #[error("session {session_id} is leased by {owner} until {expires_at}")]
    Leased {
        /// The session.
        session_id: SessionId,
        /// The holder.
        owner: String,
        /// When the lease ends unless renewed (epoch ms).
        expires_at: u64,
    },
    /// A stored row no longer parses (reported when a single object was asked for).
    #[error("stored {kind} {id} is unreadable: {reason}")]
    Corrupt {
        /// What was read.
        kind: EntityKind,
        /// Its id.
        id: String,
        /// The parse error.
        reason: String,
    },
    /// An export document that cannot be imported.
    #[error("invalid session document: {0}")]
    InvalidDocument(String),
    /// An export document written by a newer version.
    #[error("session document version {found} is newer than the supported version {supported}")]
    UnsupportedVersion {
        /// The document's version.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A delta for a field that cannot grow (only `text` can).
    #[error("part field {field:?} does not take deltas")]
    UnsupportedDelta {
        /// The field named by the delta.
        field: String,
    },
    /// A bad configuration value (URL, schema name, path).
    #[error("invalid store configuration: {0}")]
    Config(String),
    /// The database stayed locked past the busy timeout; the write may be retried.
    #[error("database is busy: {0}")]
    Busy(String),
    /// The store was closed, or its writer stopped.
    #[error("the store is closed")]
    Closed,
    /// The SQLite file's folder could not be created.
    #[error("cannot create {path}: {source}")]
    Io {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A value could not be serialized to JSON.
    #[error("cannot encode {kind} {id}: {source}")]
    Encode {
        /// What was encoded.
        kind: EntityKind,
        /// Its id.
        id: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// Any other database failure.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Applying the embedded migrations failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl StoreError {
    pub(crate) fn not_found(kind: EntityKind, id: impl fmt::Display) -> Self {
        Self::NotFound { kind, id: id.to_string() }
    }

    /// Classifies a database error raised while writing `kind` `id`.
    pub(crate) fn on_write(error: sqlx::Error, kind: EntityKind, id: &str) -> Self {
        if let sqlx::Error::Database(db) = &error {
            match db.kind() {
                sqlx::error::ErrorKind::ForeignKeyViolation => {
                    return Self::MissingParent { kind, id: id.to_owned() };
                }
                // An upsert's ownership guard refuses a row by nulling its owner column.
                sqlx::error::ErrorKind::UniqueViolation | sqlx::error::ErrorKind::NotNullViolation => {
                    return Self::AlreadyExists { kind, id: id.to_owned() };
                }
                _ => {}
            }
        }
        Self::from_db(error)
    }

    /// Maps SQLite's busy and locked codes to [`StoreError::Busy`], a closed pool to
    /// [`StoreError::Closed`].
    pub(crate) fn from_db(error: sqlx::Error) -> Self {
        if matches!(error, sqlx::Error::PoolClosed) {
            return Self::Closed;
        }
        if let sqlx::Error::Database(db) = &error {
            // SQLITE_BUSY (5) and SQLITE_LOCKED (6), with their extended codes.
            let busy = db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some()
                && db.code().and_then(|code| code.parse::<i32>().ok()).is_some_and(|code| {
                    let primary = code & 0xff;
                    primary == 5 || primary == 6
                });
            if busy {
                return Self::Busy(db.message().to_owned());
            }
        }
        Self::Database(error)
    }
}

/// Shorthand for results of this crate.
pub type StoreResult<T> = Result<T, StoreError>;
