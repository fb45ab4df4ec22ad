-- The schema a new SQLite file gets in one batch: what the migrations in sqlite/ leave, as
-- SQLite records it in sqlite_master, without the steps between (a new file's start runs
-- this instead of each migration; issue 25). The unit test
-- `a_new_file_migrated_in_one_batch_equals_sqlx_migrating_it` (src/stores.rs) checks that it
-- equals what sqlx's migrator makes and prints the statements to put here when a migration
-- is added.

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY NOT NULL,
    project_id    TEXT NOT NULL,
    directory     TEXT NOT NULL,
    parent_id     TEXT,
    title         TEXT NOT NULL,
    time_created  INTEGER NOT NULL,
    time_updated  INTEGER NOT NULL,
    data          TEXT NOT NULL,
    lease_owner   TEXT,
    lease_expires INTEGER
, cost TEXT NOT NULL DEFAULT '0', tokens_input INTEGER NOT NULL DEFAULT 0, tokens_output INTEGER NOT NULL DEFAULT 0, tokens_reasoning INTEGER NOT NULL DEFAULT 0, tokens_cache_read INTEGER NOT NULL DEFAULT 0, tokens_cache_write INTEGER NOT NULL DEFAULT 0);

CREATE INDEX sessions_by_updated ON sessions (time_updated DESC, id);

CREATE INDEX sessions_by_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;

CREATE INDEX sessions_by_lease ON sessions (lease_expires) WHERE lease_owner IS NOT NULL;

CREATE TABLE messages (
    id         TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role       TEXT NOT NULL,
    open       INTEGER NOT NULL DEFAULT 0,
    cost       TEXT,
    data       TEXT NOT NULL
, touched INTEGER NOT NULL DEFAULT 0);

CREATE INDEX messages_open ON messages (session_id) WHERE open;

CREATE UNIQUE INDEX messages_by_session ON messages (session_id, id);

CREATE TABLE "parts" (
    id         TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    type       TEXT NOT NULL,
    open       INTEGER NOT NULL DEFAULT 0,
    cost       TEXT,
    data       TEXT NOT NULL,
    FOREIGN KEY (session_id, message_id) REFERENCES messages (session_id, id) ON DELETE CASCADE
);

CREATE INDEX parts_by_message ON parts (session_id, message_id, id);

CREATE INDEX parts_open ON parts (session_id) WHERE open;

CREATE TRIGGER messages_touch_session_on_insert AFTER INSERT ON messages
BEGIN
    UPDATE sessions SET time_updated = NEW.touched
    WHERE id = NEW.session_id AND time_updated < NEW.touched;
END;

CREATE TRIGGER messages_touch_session_on_update AFTER UPDATE OF touched ON messages
BEGIN
    UPDATE sessions SET time_updated = NEW.touched
    WHERE id = NEW.session_id AND time_updated < NEW.touched;
END;

