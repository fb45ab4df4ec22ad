//! The SQL text of both backends. Most of it is one text for both: both accept `$n`
//! placeholders, `ON CONFLICT ... DO UPDATE` and `TRUE`/`FALSE`; what differs is a few
//! fragments (money, row locks, the transactions' BEGIN) and the placeholder style of the
//! multi-row upserts, which are built on first use.

use std::sync::OnceLock;

/// The statements of one backend.
#[derive(Debug)]
pub(crate) struct Sql {
    /// Opens a write transaction (SQLite takes the write lock at once, so a busy wait happens
    /// up front instead of failing on lock upgrade).
    pub begin_write: &'static str,
    /// Opens a read transaction that sees one snapshot across its statements.
    pub begin_read: &'static str,
    /// What surrounds a placeholder written to a money column.
    pub money_in: (&'static str, &'static str),
    /// Long statements use `?` placeholders: SQLite looks a `$n` name up by scanning the
    /// statement's names, which costs the square of the count on a 448-value insert.
    pub positional: bool,
    pub insert_session: &'static str,
    pub select_session: &'static str,
    pub session_exists: &'static str,
    pub update_session: &'static str,
    pub list_sessions: &'static str,
    pub child_sessions: &'static str,
    pub delete_session: &'static str,
    pub insert_message: &'static str,
    pub insert_part: &'static str,
    /// A session's history from a message id on (`''` for all of it), in one statement: see
    /// [`HistoryRow`](crate::backend::HistoryRow) for its rows.
    pub select_history: &'static str,
    pub select_part: &'static str,
    pub message_ids_from: &'static str,
    pub message_ids_after: &'static str,
    pub part_ids_from: &'static str,
    pub delete_message: &'static str,
    pub delete_parts_from: &'static str,
    pub select_lease: &'static str,
    pub set_lease: &'static str,
    pub release_lease: &'static str,
    pub renew_leases: &'static str,
    pub expired_leases: &'static str,
    /// Leases not yet expired, with their owners (to find owners that died).
    pub held_leases: &'static str,
    pub open_parts: &'static str,
    pub close_part: &'static str,
    pub open_messages: &'static str,
    pub close_message: &'static str,
    /// A session's totals (cost, then the five token counts), locked for update.
    pub select_usage: &'static str,
    /// Sets a session's totals.
    pub set_usage: &'static str,
    /// A session's step-finish parts, as [`select_part`](Self::select_part) reads a part.
    pub step_finish_parts: &'static str,
}

/// Builds a statement set from the fragments that differ: how a decimal text is written to
/// and read from the money columns, the row lock suffix of a read-for-update, and that of a
/// lock that skips rows others hold.
macro_rules! statements {
    (begin: $begin:literal, read: $read:literal, positional: $positional:literal,
     money_in: ($mi_open:literal, $mi_close:literal),
     money_out: $money_out:literal, lock: $lock:literal, skip_locked: $skip_locked:literal) => {
        Sql {
            begin_write: $begin,
            begin_read: $read,
            money_in: ($mi_open, $mi_close),
            positional: $positional,
            insert_session: concat!(
                "INSERT INTO sessions (id, project_id, directory, parent_id, title, time_created, \
                 time_updated, data, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, \
                 tokens_cache_write) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ",
                $mi_open, "$9", $mi_close, ", $10, $11, $12, $13, $14)"
            ),
            select_session: concat!(
                "SELECT id, parent_id, title, time_created, time_updated, data, ", $money_out,
                ", tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write \
                 FROM sessions WHERE id = $1"
            ),
            session_exists: "SELECT id FROM sessions WHERE id = $1",
            update_session: "UPDATE sessions SET title = $2, time_updated = $3, data = $4 WHERE id = $1",
            list_sessions: concat!(
                "SELECT id, parent_id, title, time_created, time_updated, data, ", $money_out,
                ", tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write \
                 FROM sessions WHERE ($1 IS NULL OR directory = $1) AND ($2 = FALSE OR parent_id IS NULL) \
                 AND ($3 IS NULL OR time_updated < $3 OR (time_updated = $3 AND id > $4)) \
                 ORDER BY time_updated DESC, id ASC LIMIT $5"
            ),
            child_sessions: "SELECT id FROM sessions WHERE parent_id = $1",
            delete_session: "DELETE FROM sessions WHERE id = $1",
            insert_message: concat!(
                "INSERT INTO messages (id, session_id, role, open, cost, data) VALUES ($1, $2, $3, $4, ",
                $mi_open, "$5", $mi_close, ", $6)"
            ),
            insert_part: concat!(
                "INSERT INTO parts (id, session_id, message_id, type, open, cost, data) \
                 VALUES ($1, $2, $3, $4, $5, ",
                $mi_open, "$6", $mi_close, ", $7)"
            ),
            // One statement is one snapshot on both backends (no transaction) and one round
            // trip (to SQLite's connection thread, or over the network): the session's row
            // with its message count (no row when it does not exist), then its messages, then
            // their parts, each message's parts in id order, as the decoder needs them. The
            // columns: row kind, id, session_id, message_id, type, cost, data.
            select_history: concat!(
                "SELECT CAST(0 AS BIGINT), id, id, '', '', NULL, \
                 CAST((SELECT COUNT(*) FROM messages WHERE session_id = $1) AS TEXT) FROM sessions WHERE id = $1 \
                 UNION ALL SELECT CAST(1 AS BIGINT), id, session_id, id, '', ", $money_out, ", data \
                 FROM messages WHERE session_id = $1 AND id >= $2 \
                 UNION ALL SELECT CAST(2 AS BIGINT), id, session_id, message_id, type, ", $money_out, ", data \
                 FROM parts WHERE session_id = $1 AND message_id >= $2 \
                 ORDER BY 1, 4, 2"
            ),
            select_part: concat!(
                "SELECT id, session_id, message_id, type, ", $money_out, ", data FROM parts WHERE id = $1"
            ),
            message_ids_from: "SELECT id FROM messages WHERE session_id = $1 AND id >= $2 ORDER BY id",
            message_ids_after: "SELECT id FROM messages WHERE session_id = $1 AND id > $2 ORDER BY id",
            // Parts are found by message through their session's index: name the session.
            part_ids_from: "SELECT id FROM parts WHERE session_id = $1 AND message_id = $2 AND id >= $3 \
                            ORDER BY id",
            delete_message: "DELETE FROM messages WHERE id = $1",
            delete_parts_from: "DELETE FROM parts WHERE session_id = $1 AND message_id = $2 AND id >= $3",
            select_lease: concat!("SELECT lease_owner, lease_expires FROM sessions WHERE id = $1", $lock),
            set_lease: "UPDATE sessions SET lease_owner = $2, lease_expires = $3 WHERE id = $1",
            release_lease: "UPDATE sessions SET lease_owner = NULL, lease_expires = NULL \
                            WHERE id = $1 AND lease_owner = $2",
            // The heartbeat renews thousands of rows at once while writers hold some of them: on
            // PostgreSQL it skips the rows a writer holds (renewed at the next beat, a third of
            // the lease later) rather than wait, so it can never close a deadlock cycle with
            // writers that lock the same rows in another order (10,000 sessions did).
            renew_leases: concat!(
                "UPDATE sessions SET lease_expires = $2 WHERE id IN \
                 (SELECT id FROM sessions WHERE lease_owner = $1",
                $skip_locked,
                ")"
            ),
            expired_leases: "SELECT id FROM sessions WHERE lease_owner IS NOT NULL AND lease_expires < $1 \
                             ORDER BY id",
            held_leases: "SELECT id, lease_owner FROM sessions WHERE lease_owner IS NOT NULL \
                          AND lease_expires >= $1 ORDER BY id",
            open_parts: concat!(
                "SELECT id, session_id, message_id, type, ", $money_out,
                ", data FROM parts WHERE session_id = $1 AND open ORDER BY id"
            ),
            close_part: "UPDATE parts SET open = FALSE, data = $2 WHERE id = $1",
            open_messages: concat!(
                "SELECT id, session_id, ", $money_out, ", data FROM messages WHERE session_id = $1 AND open \
                 ORDER BY id"
            ),
            close_message: "UPDATE messages SET open = FALSE, data = $2 WHERE id = $1",
            select_usage: concat!(
                "SELECT ", $money_out, ", tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, \
                 tokens_cache_write FROM sessions WHERE id = $1",
                $lock
            ),
            set_usage: concat!(
                "UPDATE sessions SET cost = ", $mi_open, "$2", $mi_close,
                ", tokens_input = $3, tokens_output = $4, tokens_reasoning = $5, tokens_cache_read = $6, \
                 tokens_cache_write = $7 WHERE id = $1"
            ),
            step_finish_parts: concat!(
                "SELECT id, session_id, message_id, type, ", $money_out,
                ", data FROM parts WHERE session_id = $1 AND type = 'step-finish' ORDER BY id"
            ),
        }
    };
}

static SQLITE: Sql = statements!(
    begin: "BEGIN IMMEDIATE",
    read: "BEGIN",
    positional: true,
    money_in: ("", ""),
    money_out: "cost",
    lock: "",
    skip_locked: ""
);

static POSTGRES: Sql = statements!(
    begin: "BEGIN",
    read: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
    positional: false,
    money_in: ("CAST(", " AS NUMERIC)"),
    money_out: "CAST(cost AS TEXT)",
    lock: " FOR UPDATE",
    skip_locked: " FOR UPDATE SKIP LOCKED"
);

/// Most rows in one statement.
pub(crate) const MAX_ROWS: usize = 64;

/// Upserts for 1 to [`MAX_ROWS`] rows, each statement built the first time its row count is
/// needed (all 128 at once cost about 3 ms of CPU before a run's first write).
#[derive(Debug)]
pub(crate) struct BulkSql {
    sql: &'static Sql,
    messages: [OnceLock<String>; MAX_ROWS],
    parts: [OnceLock<String>; MAX_ROWS],
}

impl BulkSql {
    fn build(sql: &'static Sql) -> Self {
        Self {
            sql,
            messages: std::array::from_fn(|_| OnceLock::new()),
            parts: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The message upsert for `rows` rows (empty outside 1 to [`MAX_ROWS`]).
    pub(crate) fn messages(&self, rows: usize) -> &str {
        self.messages.get(rows.wrapping_sub(1)).map_or("", |slot| {
            slot.get_or_init(|| {
                format!(
                    "INSERT INTO messages (id, session_id, role, open, cost, data, touched) VALUES {} \
                     ON CONFLICT (id) DO UPDATE SET session_id = CASE WHEN messages.session_id = \
                     excluded.session_id THEN excluded.session_id END, role = excluded.role, \
                     open = excluded.open, cost = excluded.cost, data = excluded.data, \
                     touched = excluded.touched",
                    values(self.sql, 7, 5, rows)
                )
            })
        })
    }

    /// The part upsert for `rows` rows (empty outside 1 to [`MAX_ROWS`]).
    pub(crate) fn parts(&self, rows: usize) -> &str {
        self.parts.get(rows.wrapping_sub(1)).map_or("", |slot| {
            slot.get_or_init(|| {
                format!(
                    "INSERT INTO parts (id, session_id, message_id, type, open, cost, data) VALUES {} \
                     ON CONFLICT (id) DO UPDATE SET message_id = CASE WHEN parts.message_id = \
                     excluded.message_id THEN excluded.message_id END, type = excluded.type, \
                     open = excluded.open, cost = excluded.cost, data = excluded.data",
                    values(self.sql, 7, 6, rows)
                )
            })
        })
    }
}

/// `rows` value tuples of `columns` placeholders each, the `money` column (1-based) wrapped
/// in the dialect's decimal cast.
fn values(sql: &Sql, columns: usize, money: usize, rows: usize) -> String {
    use std::fmt::Write as _;
    let (open, close) = sql.money_in;
    let mut text = String::with_capacity(rows * columns * 6);
    for row in 0..rows {
        text.push_str(if row == 0 { "(" } else { ", (" });
        for column in 1..=columns {
            if column > 1 {
                text.push_str(", ");
            }
            let n = row * columns + column;
            if column == money {
                text.push_str(open);
            }
            if sql.positional {
                text.push('?');
            } else {
                let _ = write!(text, "${n}");
            }
            if column == money {
                text.push_str(close);
            }
        }
        text.push(')');
    }
    text
}

/// The SQLite statements.
pub(crate) fn sqlite() -> &'static Sql {
    &SQLITE
}

/// The PostgreSQL statements.
pub(crate) fn postgres() -> &'static Sql {
    &POSTGRES
}

/// The SQLite multi-row upserts, built on first use.
pub(crate) fn sqlite_bulk() -> &'static BulkSql {
    static BULK: OnceLock<BulkSql> = OnceLock::new();
    BULK.get_or_init(|| BulkSql::build(&SQLITE))
}

/// The PostgreSQL multi-row upserts, built on first use.
pub(crate) fn postgres_bulk() -> &'static BulkSql {
    static BULK: OnceLock<BulkSql> = OnceLock::new();
    BULK.get_or_init(|| BulkSql::build(&POSTGRES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_number_their_placeholders() {
        let bulk = BulkSql::build(postgres());
        assert!(bulk.parts(1).contains("VALUES ($1, $2, $3, $4, $5, CAST($6 AS NUMERIC), $7) ON CONFLICT"));
        assert!(bulk.messages(2).contains("($8, $9, $10, $11, CAST($12 AS NUMERIC), $13, $14) ON CONFLICT"));
        assert_eq!(bulk.parts(0), "");
        assert_eq!(bulk.parts(MAX_ROWS + 1), "");
        let sqlite = BulkSql::build(sqlite());
        assert!(sqlite.parts(2).contains("VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?) ON CONFLICT"));
    }
}
