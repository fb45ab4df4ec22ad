//! The databases the store runs on, as the generic code sees them.
//!
//! [`Dialect`] is what each backend provides by hand: its statements, its multi-row upserts,
//! its migrations. [`Backend`] is every sqlx bound the generic code needs (executing on a
//! connection or the pool, binding and decoding the column types used), written once: a
//! blanket impl proves them for any dialect that meets them, and the generic code asks only
//! `DB: Backend`. Rust does not imply a trait's `where` clauses about other types (`String:
//! Encode<DB>`) at its use sites, so the bounds live on that impl, and statements and rows are
//! handled through [`Statement`] and [`Backend`]'s column readers instead of sqlx's methods.

use std::future::Future;

use sqlx::migrate::Migrator;
use sqlx::query::Query;
use sqlx::{
    ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Postgres, Row, Sqlite, Type,
};

use crate::rows::{MessageRow, PartRow, StoredMessageRow, StoredPartRow};
use crate::sql::{self, BulkSql, Sql};

/// What a backend provides by hand.
pub(crate) trait Dialect: Database {
    /// Its statements.
    fn sql() -> &'static Sql;
    /// Its multi-row statements.
    fn bulk() -> &'static BulkSql;
    /// Rows changed by a statement.
    fn rows_affected(result: &Self::QueryResult) -> u64;
}

impl Dialect for Sqlite {
    fn sql() -> &'static Sql {
        sql::sqlite()
    }

    fn bulk() -> &'static BulkSql {
        sql::sqlite_bulk()
    }

    fn rows_affected(result: &Self::QueryResult) -> u64 {
        result.rows_affected()
    }
}

impl Dialect for Postgres {
    fn sql() -> &'static Sql {
        sql::postgres()
    }

    fn bulk() -> &'static BulkSql {
        sql::postgres_bulk()
    }

    fn rows_affected(result: &Self::QueryResult) -> u64 {
        result.rows_affected()
    }
}

/// The embedded SQLite migrations.
pub(crate) fn sqlite_migrator() -> &'static Migrator {
    static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");
    &MIGRATOR
}

/// The embedded PostgreSQL migrations.
pub(crate) fn postgres_migrator() -> &'static Migrator {
    static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");
    &MIGRATOR
}

/// A value for a statement's placeholder: the column types the store writes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param<'a> {
    /// TEXT.
    Text(&'a str),
    /// Nullable TEXT.
    OptionalText(Option<&'a str>),
    /// BIGINT.
    Integer(i64),
    /// Nullable BIGINT.
    OptionalInteger(Option<i64>),
    /// BOOLEAN.
    Bool(bool),
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(value: &'a str) -> Self {
        Self::Text(value)
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(value: &'a String) -> Self {
        Self::Text(value)
    }
}

impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(value: Option<&'a str>) -> Self {
        Self::OptionalText(value)
    }
}

impl From<i64> for Param<'_> {
    fn from(value: i64) -> Self {
        Self::Integer(value)
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(value: Option<i64>) -> Self {
        Self::OptionalInteger(value)
    }
}

impl From<bool> for Param<'_> {
    fn from(value: bool) -> Self {
        Self::Bool(value)
    }
}

/// Where a statement runs: on a connection (or a transaction's), or on any connection of the
/// pool.
pub(crate) enum Target<'e, DB: Database> {
    /// The pool.
    Pool(&'e Pool<DB>),
    /// One connection.
    Connection(&'e mut DB::Connection),
}

impl<'e, DB: Database> From<&'e Pool<DB>> for Target<'e, DB> {
    fn from(pool: &'e Pool<DB>) -> Self {
        Self::Pool(pool)
    }
}

impl<'e, DB: Database> From<&'e mut DB::Connection> for Target<'e, DB> {
    fn from(connection: &'e mut DB::Connection) -> Self {
        Self::Connection(connection)
    }
}

/// A statement with its values bound (they are encoded as they are bound).
#[must_use = "a statement does nothing until it runs"]
pub(crate) struct Statement<DB: Database> {
    query: Query<'static, DB, DB::Arguments>,
}

/// A statement of `sql`, to bind values to and run.
pub(crate) fn query<DB: Backend>(sql: &'static str) -> Statement<DB> {
    Statement { query: sqlx::query::<DB>(sql) }
}

impl<DB: Backend> Statement<DB> {
    /// Binds the next placeholder.
    pub(crate) fn bind<'a>(self, value: impl Into<Param<'a>>) -> Self {
        Self { query: DB::bind(self.query, value.into()) }
    }

    /// Binds a message row's columns in table order (single and multi-row inserts alike).
    pub(crate) fn bind_message(self, m: &MessageRow) -> Self {
        self.bind(m.id.as_str())
            .bind(m.session_id.as_str())
            .bind(m.role)
            .bind(m.open)
            .bind(m.cost.as_deref())
            .bind(m.data.as_str())
    }

    /// Binds a part row's columns in table order (single and multi-row inserts alike).
    pub(crate) fn bind_part(self, p: &PartRow) -> Self {
        self.bind(p.id.as_str())
            .bind(p.session_id.as_str())
            .bind(p.message_id.as_str())
            .bind(p.kind.as_str())
            .bind(p.open)
            .bind(p.cost.as_deref())
            .bind(p.data.as_str())
    }

    /// Runs it; the result says how many rows changed.
    pub(crate) fn execute<'e>(
        self,
        on: impl Into<Target<'e, DB>>,
    ) -> impl Future<Output = Result<DB::QueryResult, sqlx::Error>> + Send + 'e {
        DB::execute(self.query, on.into())
    }

    /// Runs it and returns every row.
    pub(crate) fn fetch_all<'e>(
        self,
        on: impl Into<Target<'e, DB>>,
    ) -> impl Future<Output = Result<Vec<DB::Row>, sqlx::Error>> + Send + 'e {
        DB::fetch_all(self.query, on.into())
    }

    /// Runs it and returns the first row, if any.
    pub(crate) fn fetch_optional<'e>(
        self,
        on: impl Into<Target<'e, DB>>,
    ) -> impl Future<Output = Result<Option<DB::Row>, sqlx::Error>> + Send + 'e {
        DB::fetch_optional(self.query, on.into())
    }
}

/// A database the generic store code runs on: a [`Dialect`] meeting every sqlx bound that
/// code needs. Implemented for every such dialect; only its blanket impl names the bounds.
pub(crate) trait Backend: Dialect {
    /// Binds one value.
    fn bind(
        query: Query<'static, Self, Self::Arguments>,
        value: Param<'_>,
    ) -> Query<'static, Self, Self::Arguments>;

    /// Runs a statement.
    fn execute<'e>(
        query: Query<'static, Self, Self::Arguments>,
        on: Target<'e, Self>,
    ) -> impl Future<Output = Result<Self::QueryResult, sqlx::Error>> + Send + 'e;

    /// Runs a statement and returns every row.
    fn fetch_all<'e>(
        query: Query<'static, Self, Self::Arguments>,
        on: Target<'e, Self>,
    ) -> impl Future<Output = Result<Vec<Self::Row>, sqlx::Error>> + Send + 'e;

    /// Runs a statement and returns the first row, if any.
    fn fetch_optional<'e>(
        query: Query<'static, Self, Self::Arguments>,
        on: Target<'e, Self>,
    ) -> impl Future<Output = Result<Option<Self::Row>, sqlx::Error>> + Send + 'e;

    /// A TEXT column, borrowed from the row.
    fn text(row: &Self::Row, index: usize) -> Result<&str, sqlx::Error>;

    /// A nullable TEXT column, borrowed from the row.
    fn optional_text(row: &Self::Row, index: usize) -> Result<Option<&str>, sqlx::Error>;

    /// A BIGINT column.
    fn integer(row: &Self::Row, index: usize) -> Result<i64, sqlx::Error>;

    /// A nullable BIGINT column.
    fn optional_integer(row: &Self::Row, index: usize) -> Result<Option<i64>, sqlx::Error>;
}

impl<DB> Backend for DB
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Type<DB>,
    for<'q> bool: Encode<'q, DB> + Type<DB>,
    for<'r> &'r str: Decode<'r, DB> + Type<DB>,
    for<'r> i64: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    fn bind(
        query: Query<'static, Self, Self::Arguments>,
        value: Param<'_>,
    ) -> Query<'static, Self, Self::Arguments> {
        match value {
            Param::Text(text) => query.bind(text),
            Param::OptionalText(text) => query.bind(text),
            Param::Integer(number) => query.bind(number),
            Param::OptionalInteger(number) => query.bind(number),
            Param::Bool(flag) => query.bind(flag),
        }
    }

    async fn execute(
        query: Query<'static, Self, Self::Arguments>,
        on: Target<'_, Self>,
    ) -> Result<Self::QueryResult, sqlx::Error> {
        match on {
            Target::Pool(pool) => query.execute(pool).await,
            Target::Connection(connection) => query.execute(connection).await,
        }
    }

    async fn fetch_all(
        query: Query<'static, Self, Self::Arguments>,
        on: Target<'_, Self>,
    ) -> Result<Vec<Self::Row>, sqlx::Error> {
        match on {
            Target::Pool(pool) => query.fetch_all(pool).await,
            Target::Connection(connection) => query.fetch_all(connection).await,
        }
    }

    async fn fetch_optional(
        query: Query<'static, Self, Self::Arguments>,
        on: Target<'_, Self>,
    ) -> Result<Option<Self::Row>, sqlx::Error> {
        match on {
            Target::Pool(pool) => query.fetch_optional(pool).await,
            Target::Connection(connection) => query.fetch_optional(connection).await,
        }
    }

    fn text(row: &Self::Row, index: usize) -> Result<&str, sqlx::Error> {
        row.try_get(index)
    }

    fn optional_text(row: &Self::Row, index: usize) -> Result<Option<&str>, sqlx::Error> {
        row.try_get(index)
    }

    fn integer(row: &Self::Row, index: usize) -> Result<i64, sqlx::Error> {
        row.try_get(index)
    }

    fn optional_integer(row: &Self::Row, index: usize) -> Result<Option<i64>, sqlx::Error> {
        row.try_get(index)
    }
}

/// The columns of a message row as selected: id, session_id, cost, data.
pub(crate) fn message_columns<DB: Backend>(row: &DB::Row) -> Result<StoredMessageRow<'_>, sqlx::Error> {
    Ok(StoredMessageRow {
        id: DB::text(row, 0)?,
        session_id: DB::text(row, 1)?,
        cost: DB::optional_text(row, 2)?,
        data: DB::text(row, 3)?,
    })
}

/// The columns of a part row as selected: id, session_id, message_id, type, cost, data.
pub(crate) fn part_columns<DB: Backend>(row: &DB::Row) -> Result<StoredPartRow<'_>, sqlx::Error> {
    part_columns_from::<DB>(row, 0)
}

/// A part row's columns, in [`part_columns`]'s order, from column `first` on.
fn part_columns_from<DB: Backend>(row: &DB::Row, first: usize) -> Result<StoredPartRow<'_>, sqlx::Error> {
    Ok(StoredPartRow {
        id: DB::text(row, first)?,
        session_id: DB::text(row, first + 1)?,
        message_id: DB::text(row, first + 2)?,
        kind: DB::text(row, first + 3)?,
        cost: DB::optional_text(row, first + 4)?,
        data: DB::text(row, first + 5)?,
    })
}

/// One row of [`Sql::select_history`](crate::sql::Sql::select_history).
pub(crate) enum HistoryRow<'a> {
    /// The session exists and holds this many messages (the first row).
    Session { total_messages: u64 },
    /// A message row.
    Message(StoredMessageRow<'a>),
    /// A part row.
    Part(StoredPartRow<'a>),
}

/// Reads a row of the history statement by its kind column; `None` for a kind it never
/// returns.
pub(crate) fn history_row<DB: Backend>(row: &DB::Row) -> Result<Option<HistoryRow<'_>>, sqlx::Error> {
    Ok(match DB::integer(row, 0)? {
        0 => Some(HistoryRow::Session {
            // A COUNT(*) as text: the column is text in every row.
            total_messages: DB::text(row, 6)?
                .parse()
                .map_err(|error| sqlx::Error::Decode(Box::new(error)))?,
        }),
        1 => Some(HistoryRow::Message(StoredMessageRow {
            id: DB::text(row, 1)?,
            session_id: DB::text(row, 2)?,
            cost: DB::optional_text(row, 5)?,
            data: DB::text(row, 6)?,
        })),
        // A part row's own columns follow the kind.
        2 => Some(HistoryRow::Part(part_columns_from::<DB>(row, 1)?)),
        _ => None,
    })
}
