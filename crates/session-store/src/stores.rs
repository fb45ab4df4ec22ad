//! The two implementations, `SqliteStore` and `PgStore`, and `open` for a configured database.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use session_core::{Message, MessageId, Part, SessionId};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{AssertSqlSafe, Postgres, Sqlite};

use crate::backend;
use crate::config::{DatabaseConfig, PgConfig, SqliteConfig, StoreOptions};
use crate::document::SessionDocument;
use crate::engine::Engine;
use crate::error::{StoreError, StoreResult};
use crate::model::{
    HistoryTail, Lease, ListSessions, NewSession, PartDelta, RecoveryReport, Removed, RevertPoint, Session,
    SessionHistory, SessionPage, SessionPatch, StoreStats, WriteBatch,
};
use crate::store::{BackendKind, Store};

/// How often a SQLite migration is tried when several processes open a new file at once.
const MIGRATION_ATTEMPTS: u32 = 5;

/// The store on an embedded SQLite file (WAL; several processes may share it).
#[derive(Debug)]
pub struct SqliteStore {
    engine: Engine<Sqlite>,
}

impl SqliteStore {
    /// Opens (creating when missing) the database file, migrates it, and recovers sessions
    /// whose lease expired.
    pub async fn open(config: &SqliteConfig, options: StoreOptions) -> StoreResult<Self> {
        if let Some(folder) = config.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder)
                .map_err(|source| StoreError::Io { path: folder.to_path_buf(), source })?;
        }
        let connect = SqliteConnectOptions::new()
            .filename(&config.path)
            .create_if_missing(true)
            // WAL is set after connecting (below): sqlx would set it before `synchronous`.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(config.busy_timeout)
            .foreign_keys(true)
            // Reads of long sessions go through a memory map and a 16 MiB page cache.
            .pragma("mmap_size", "268435456")
            .pragma("cache_size", "-16384")
            // One prepared statement per multi-row size and table, and the rest.
            .statement_cache_capacity(256);
        // A new file is created and migrated on a connection of its own without syncs
        // (`synchronous = OFF`): the rollback journal's and the new WAL's fsyncs cost more
        // than the rest of a run's start, and until the migrations end there is
        // nothing to lose. The pool's first connection opens while the migrations run (the
        // file is in WAL by then, so it neither waits for them nor syncs the switch), and the
        // creating connection closes once both are done, so closing does not checkpoint; the
        // pool's connections sync as `NORMAL`. Any failure there (another process creating
        // the file at the same moment) leaves the work to the pool's migration.
        let created = match config.path.exists() {
            true => None,
            false => create_unsynced(&connect).await.ok(),
        };
        let pool_options = SqlitePoolOptions::new()
            .max_connections(pool_size(config.max_connections))
            // A local file does not go stale: no round trip before each use.
            .test_before_acquire(false)
            // WAL is set after connecting, once `synchronous` is: sqlx would set it first. It
            // is persistent: for a file in WAL already this is a no-op, and writes nothing.
            .after_connect(|connection, _| {
                Box::pin(async move {
                    sqlx::raw_sql("PRAGMA journal_mode = WAL").execute(connection).await.map(drop)
                })
            });
        let (pool, bootstrap) = match created {
            Some(mut connection) => {
                let migrated = async {
                    let result = migrate_new_file(&mut connection).await;
                    result.map(|()| connection)
                };
                let (pool, migrated) = tokio::join!(pool_options.connect_with(connect), migrated);
                (pool, migrated.ok())
            }
            None => (pool_options.connect_with(connect).await, None),
        };
        let pool = pool.map_err(StoreError::from_db)?;
        match bootstrap {
            // Migrated already; closing is best effort (the pool keeps the file open).
            Some(bootstrap) => {
                let _ = sqlx::Connection::close(bootstrap).await;
            }
            None => migrate_sqlite(&pool).await?,
        }
        Ok(Self { engine: Engine::start(pool, options).await? })
    }
}

/// The pool's size for `configured` connections: at least two (the writer's and one for
/// reads), and one more that the engine keeps for its reads (engine/kept.rs).
fn pool_size(configured: u32) -> u32 {
    configured.max(2) + 1
}

/// Migrates the pool's database, retrying while another process migrates the same new file.
async fn migrate_sqlite(pool: &sqlx::SqlitePool) -> StoreResult<()> {
    let mut attempt = 1;
    loop {
        match backend::sqlite_migrator().run(pool).await {
            Ok(()) => return Ok(()),
            Err(_) if attempt < MIGRATION_ATTEMPTS => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// Creates the database file in WAL mode, on a connection that does not sync (the caller
/// migrates the file on it).
async fn create_unsynced(connect: &SqliteConnectOptions) -> Result<sqlx::SqliteConnection, sqlx::Error> {
    let mut connection = <sqlx::SqliteConnection as sqlx::Connection>::connect_with(connect).await?;
    sqlx::raw_sql("PRAGMA synchronous = OFF; PRAGMA journal_mode = WAL").execute(&mut connection).await?;
    Ok(connection)
}

/// Migrates a new, empty file in two round trips: sqlx makes its migrations table (so that
/// its migrator reads the file as its own at every later open), then one batch creates the
/// schema the migrations leave ([`NEW_FILE_SCHEMA`]) and records every migration, with its
/// checksum, in one transaction. sqlx's migrator takes about five round trips and a commit per
/// migration, and replaying the migrations' table rebuilds costs twice the final schema.
/// Only for a file this process just created: nothing else can be in it.
async fn migrate_new_file(connection: &mut sqlx::SqliteConnection) -> Result<(), sqlx::Error> {
    use sqlx::migrate::Migrate as _;
    let migrator = backend::sqlite_migrator();
    connection.ensure_migrations_table(&migrator.table_name).await.map_err(migrate_error)?;
    sqlx::raw_sql(AssertSqlSafe(new_file_script(migrator))).execute(&mut *connection).await?;
    Ok(())
}

/// The schema the SQLite migrations leave, as SQLite records it (checked against them by a
/// unit test).
const NEW_FILE_SCHEMA: &str = include_str!("../migrations/sqlite-new-file.sql");

/// The batch of [`migrate_new_file`]: the final schema and a row in sqlx's table for each up
/// migration, as sqlx's migrator writes it (an execution time of -1, which sqlx writes before
/// it measures).
fn new_file_script(migrator: &sqlx::migrate::Migrator) -> String {
    use std::fmt::Write as _;
    let mut script = format!("BEGIN;\n{NEW_FILE_SCHEMA}\n");
    for migration in migrator.iter().filter(|m| !m.migration_type.is_down_migration()) {
        let checksum: String = migration.checksum.iter().map(|byte| format!("{byte:02x}")).collect();
        let _ = writeln!(
            script,
            "INSERT INTO {} (version, description, success, checksum, execution_time) \
             VALUES ({}, '{}', TRUE, X'{checksum}', -1);",
            migrator.table_name,
            migration.version,
            migration.description.replace('\'', "''"),
        );
    }
    script.push_str("COMMIT;\n");
    script
}

fn migrate_error(error: sqlx::migrate::MigrateError) -> sqlx::Error {
    match error {
        sqlx::migrate::MigrateError::Execute(error) => error,
        other => sqlx::Error::Migrate(Box::new(other)),
    }
}

/// The store on PostgreSQL, shared by several runtime instances.
#[derive(Debug)]
pub struct PgStore {
    engine: Engine<Postgres>,
}

impl PgStore {
    /// Connects, creates the configured schema when missing, migrates, and recovers sessions
    /// whose lease expired.
    pub async fn open(config: &PgConfig, options: StoreOptions) -> StoreResult<Self> {
        let schema = config.checked_schema()?;
        let mut connect = PgConnectOptions::from_str(&config.url)
            .map_err(|e| StoreError::Config(format!("PostgreSQL URL: {e}")))?
            .statement_cache_capacity(256);
        if let Some(schema) = schema {
            connect = connect.options([("search_path", schema)]);
        }
        // One direct connection first: a refused or unreachable server fails now with its own
        // error, instead of after the pool has retried for its whole acquire timeout.
        let probe = tokio::time::timeout(config.acquire_timeout, sqlx::ConnectOptions::connect(&connect))
            .await
            .map_err(|_| {
                StoreError::Config(format!(
                    "PostgreSQL did not answer within {} s",
                    config.acquire_timeout.as_secs_f64()
                ))
            })?
            .map_err(StoreError::from_db)?;
        let _ = sqlx::Connection::close(probe).await;
        let pool = PgPoolOptions::new()
            .max_connections(pool_size(config.max_connections))
            .acquire_timeout(config.acquire_timeout)
            .connect_with(connect)
            .await
            .map_err(StoreError::from_db)?;
        if let Some(schema) = schema {
            // The name was checked to be a plain identifier.
            let create = format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"");
            if let Err(error) = sqlx::query::<Postgres>(AssertSqlSafe(create)).execute(&pool).await {
                // Two instances creating it at once: one of them loses the race, harmlessly.
                let raced = matches!(&error, sqlx::Error::Database(db)
                    if db.kind() == sqlx::error::ErrorKind::UniqueViolation);
                if !raced {
                    return Err(StoreError::from_db(error));
                }
            }
        }
        backend::postgres_migrator().run(&pool).await?;
        Ok(Self { engine: Engine::start(pool, options).await? })
    }
}

/// Opens the configured database.
pub async fn open(config: &DatabaseConfig, options: StoreOptions) -> StoreResult<Arc<dyn Store>> {
    Ok(match config {
        DatabaseConfig::Sqlite(sqlite) => Arc::new(SqliteStore::open(sqlite, options).await?),
        DatabaseConfig::Postgres(pg) => Arc::new(PgStore::open(pg, options).await?),
    })
}

macro_rules! delegate_store {
    ($store:ty, $kind:expr) => {
        #[async_trait]
        impl Store for $store {
            fn backend(&self) -> BackendKind {
                $kind
            }
            fn owner(&self) -> &str {
                self.engine.owner()
            }
            fn stats(&self) -> StoreStats {
                self.engine.stats()
            }
            async fn create_session(&self, new: NewSession) -> StoreResult<Session> {
                self.engine.create_session(new).await
            }
            async fn get_session(&self, id: &SessionId) -> StoreResult<Session> {
                self.engine.get_session(id).await
            }
            async fn list_sessions(&self, query: &ListSessions) -> StoreResult<SessionPage> {
                self.engine.list_sessions(query).await
            }
            async fn update_session(&self, id: &SessionId, patch: SessionPatch) -> StoreResult<Session> {
                self.engine.update_session(id, patch).await
            }
            async fn delete_session(&self, id: &SessionId) -> StoreResult<Vec<SessionId>> {
                self.engine.delete_session(id).await
            }
            async fn fork_session(&self, id: &SessionId, at: Option<&MessageId>) -> StoreResult<Session> {
                self.engine.fork_session(id, at).await
            }
            async fn upsert_message(&self, message: &Message) -> StoreResult<()> {
                self.engine.upsert_message(message).await
            }
            async fn upsert_part(&self, part: &Part) -> StoreResult<()> {
                self.engine.upsert_part(part).await
            }
            async fn commit(&self, batch: &WriteBatch) -> StoreResult<()> {
                self.engine.commit(batch).await
            }
            async fn append_delta(&self, delta: PartDelta) -> StoreResult<()> {
                self.engine.append_delta(delta).await
            }
            async fn flush(&self) -> StoreResult<()> {
                self.engine.flush().await
            }
            async fn load_history(&self, session_id: &SessionId) -> StoreResult<SessionHistory> {
                self.engine.load_history(session_id).await
            }
            async fn load_history_tail(
                &self,
                session_id: &SessionId,
                from: &MessageId,
            ) -> StoreResult<HistoryTail> {
                self.engine.load_history_tail(session_id, from).await
            }
            async fn remove_from(&self, session_id: &SessionId, point: &RevertPoint) -> StoreResult<Removed> {
                self.engine.remove_from(session_id, point).await
            }
            async fn export_session(&self, id: &SessionId) -> StoreResult<SessionDocument> {
                self.engine.export_session(id).await
            }
            async fn import_session(&self, document: &SessionDocument) -> StoreResult<Session> {
                self.engine.import_session(document).await
            }
            async fn acquire_lease(&self, session_id: &SessionId) -> StoreResult<Lease> {
                self.engine.acquire_lease(session_id).await
            }
            async fn release_lease(&self, session_id: &SessionId) -> StoreResult<()> {
                self.engine.release_lease(session_id).await
            }
            async fn lease(&self, session_id: &SessionId) -> StoreResult<Option<Lease>> {
                self.engine.lease(session_id).await
            }
            async fn recover_expired(&self) -> StoreResult<RecoveryReport> {
                self.engine.recover_expired().await
            }
            async fn close(&self) -> StoreResult<()> {
                self.engine.close().await
            }
        }
    };
}

delegate_store!(SqliteStore, BackendKind::Sqlite);
delegate_store!(PgStore, BackendKind::Postgres);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every connection of a store opened on a new file syncs as `NORMAL` once it is open,
    /// those that created and migrated the file without syncs included.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_file_is_synced_as_normal_once_open() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let config = SqliteConfig::new(dir.path().join("new.db"));
        let store = SqliteStore::open(&config, StoreOptions::default()).await?;
        let pool = store.engine.pool();
        let mut held = Vec::new();
        // Every connection open now, and one more opened after.
        for _ in 0..=pool.size() {
            let mut connection = pool.acquire().await?;
            let (mode,): (i64,) = sqlx::query_as("PRAGMA synchronous").fetch_one(&mut *connection).await?;
            assert_eq!(mode, 1, "a connection does not sync as NORMAL");
            let (journal,): (String,) =
                sqlx::query_as("PRAGMA journal_mode").fetch_one(&mut *connection).await?;
            assert_eq!(journal, "wal");
            held.push(connection);
        }
        drop(held);
        store.close().await?;
        Ok(())
    }

    /// A new file migrated in one batch holds what sqlx's migrator makes, to the row of its
    /// migrations table, and the migrator then takes it as its own (nothing to apply).
    #[tokio::test]
    async fn a_new_file_migrated_in_one_batch_equals_sqlx_migrating_it()
    -> Result<(), Box<dyn std::error::Error>> {
        use sqlx::Connection as _;
        let dir = tempfile::tempdir()?;
        let open =
            |name: &str| SqliteConnectOptions::new().filename(dir.path().join(name)).create_if_missing(true);
        let mut batch = sqlx::SqliteConnection::connect_with(&open("batch.db")).await?;
        migrate_new_file(&mut batch).await?;
        let mut sqlx_made = sqlx::SqliteConnection::connect_with(&open("sqlx.db")).await?;
        backend::sqlite_migrator().run(&mut sqlx_made).await?;
        type Rows = Vec<(String, String, Option<String>)>;
        const SCHEMA: &str = "SELECT type, name, sql FROM sqlite_master ORDER BY type, name";
        const APPLIED: &str =
            "SELECT version, description, success, checksum FROM _sqlx_migrations ORDER BY version";
        let schema: Rows = sqlx::query_as(SCHEMA).fetch_all(&mut batch).await?;
        let migrated: Rows = sqlx::query_as(SCHEMA).fetch_all(&mut sqlx_made).await?;
        if schema != migrated {
            // What migrations/sqlite-new-file.sql should hold after its header, in the order
            // SQLite created the objects.
            const CREATED: &str = "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL \
                                   AND name <> '_sqlx_migrations' ORDER BY rowid";
            let statements: Vec<(String,)> = sqlx::query_as(CREATED).fetch_all(&mut sqlx_made).await?;
            let expected: Vec<String> = statements.into_iter().map(|(sql,)| format!("{sql};\n")).collect();
            panic!(
                "migrations/sqlite-new-file.sql is not what the migrations make; its statements \
                 should be:\n\n{}",
                expected.join("\n")
            );
        }
        assert!(schema.iter().any(|(_, name, _)| name == "parts"), "no schema: {schema:?}");
        type Applied = Vec<(i64, String, bool, Vec<u8>)>;
        let applied: Applied = sqlx::query_as(APPLIED).fetch_all(&mut batch).await?;
        assert_eq!(
            applied,
            sqlx::query_as::<_, (i64, String, bool, Vec<u8>)>(APPLIED).fetch_all(&mut sqlx_made).await?
        );
        assert_eq!(applied.len(), backend::sqlite_migrator().iter().count());
        backend::sqlite_migrator().run(&mut batch).await?;
        let again: Applied = sqlx::query_as(APPLIED).fetch_all(&mut batch).await?;
        assert_eq!(again, applied, "sqlx's migrator applied something again");
        Ok(())
    }

    /// Operations one after another run on the engine's kept connection: the pool opens no
    /// connection per read, and a failed one hands the kept connection back without losing it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn operations_in_turn_share_the_kept_connection() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store =
            SqliteStore::open(&SqliteConfig::new(dir.path().join("kept.db")), StoreOptions::default())
                .await?;
        let session = store.create_session(crate::NewSession::new("p1", "/work")).await?;
        let opened = store.engine.pool().size();
        for _ in 0..50 {
            store.get_session(&session.id).await?;
            store.load_history(&session.id).await?;
        }
        assert!(opened <= 2, "{opened} connections for one session");
        assert_eq!(store.engine.pool().size(), opened, "reads in turn opened connections");
        // A failure hands the kept connection back to the pool; the next operation keeps one.
        for _ in 0..5 {
            assert!(store.get_session(&SessionId::new_unchecked("ses_missing")).await.is_err());
            assert_eq!(store.get_session(&session.id).await?.id, session.id);
        }
        store.close().await?;
        Ok(())
    }

    /// A write transaction that fails on the kept connection gives SQLite's write lock up at
    /// once: sqlx only queues the rollback, which the pool sends when the connection comes back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_transaction_on_the_kept_connection_lets_the_write_lock_go()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let config = SqliteConfig {
            busy_timeout: Duration::from_millis(500),
            ..SqliteConfig::new(dir.path().join("lock.db"))
        };
        let owner = |name: &str| StoreOptions { owner: Some(name.into()), ..StoreOptions::default() };
        let first = SqliteStore::open(&config, owner("first")).await?;
        let second = SqliteStore::open(&config, owner("second")).await?;
        let session = first.create_session(crate::NewSession::new("p1", "/work")).await?;
        first.acquire_lease(&session.id).await?;
        // Refused inside its `BEGIN IMMEDIATE` transaction.
        assert!(matches!(second.acquire_lease(&session.id).await, Err(StoreError::Leased { .. })));
        let patch = crate::SessionPatch { title: Some("renamed".into()), ..crate::SessionPatch::default() };
        assert_eq!(first.update_session(&session.id, patch).await?.title, "renamed");
        second.close().await?;
        first.close().await?;
        Ok(())
    }
}
