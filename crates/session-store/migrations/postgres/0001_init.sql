-- Sessions, messages and parts. Messages and parts are whole JSON documents (`data`, TEXT so
-- that any JSON string, \u0000 included, is kept as written) beside the columns that queries,
-- leases and exact money need. Ids compare byte-wise (COLLATE "C"): their order is creation
-- order. Times are epoch milliseconds. Money is NUMERIC.

CREATE TABLE sessions (
    id            TEXT COLLATE "C" PRIMARY KEY,
    project_id    TEXT NOT NULL,
    directory     TEXT NOT NULL,
    parent_id     TEXT COLLATE "C",
    title         TEXT NOT NULL,
    time_created  BIGINT NOT NULL,
    time_updated  BIGINT NOT NULL,
    data          TEXT NOT NULL,
    lease_owner   TEXT,
    lease_expires BIGINT
);

CREATE INDEX sessions_by_updated ON sessions (time_updated DESC, id);
CREATE INDEX sessions_by_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX sessions_by_lease ON sessions (lease_expires) WHERE lease_owner IS NOT NULL;

CREATE TABLE messages (
    id         TEXT COLLATE "C" PRIMARY KEY,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role       TEXT NOT NULL,
    open       BOOLEAN NOT NULL DEFAULT FALSE,
    cost       NUMERIC,
    data       TEXT NOT NULL
);

CREATE INDEX messages_by_session ON messages (session_id, id);
CREATE INDEX messages_open ON messages (session_id) WHERE open;

CREATE TABLE parts (
    id         TEXT COLLATE "C" PRIMARY KEY,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    message_id TEXT COLLATE "C" NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    type       TEXT NOT NULL,
    open       BOOLEAN NOT NULL DEFAULT FALSE,
    cost       NUMERIC,
    data       TEXT NOT NULL
);

CREATE INDEX parts_by_session ON parts (session_id, id);
CREATE INDEX parts_by_message ON parts (message_id, id);
CREATE INDEX parts_open ON parts (session_id) WHERE open;
