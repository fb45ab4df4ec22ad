-- Sessions, messages and parts. Messages and parts are whole JSON documents (`data`) beside
-- the columns that queries, leases and exact money need. Times are epoch milliseconds.
-- Money is exact decimal text (SQLite has no decimal type).

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
);

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
);

CREATE INDEX messages_by_session ON messages (session_id, id);
CREATE INDEX messages_open ON messages (session_id) WHERE open;

CREATE TABLE parts (
    id         TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    type       TEXT NOT NULL,
    open       INTEGER NOT NULL DEFAULT 0,
    cost       TEXT,
    data       TEXT NOT NULL
);

CREATE INDEX parts_by_session ON parts (session_id, id);
CREATE INDEX parts_by_message ON parts (message_id, id);
CREATE INDEX parts_open ON parts (session_id) WHERE open;
