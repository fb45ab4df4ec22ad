-- Parts keep one session-ordered index, (session_id, message_id, id), instead of two:
-- (session_id, id) and (message_id, id). Every part query names its session, so this index
-- serves the history load (parts of a message in id order), the revert cleanup and the
-- cascades. With 16 sessions writing at once each of those indexes dirtied a leaf page per
-- session per commit; one index halves those page writes.
--
-- The parts' message key becomes (session_id, message_id), referencing messages by the same
-- pair (a unique index on it), so a message's deletion finds its parts through that index
-- and a part can no longer name a session other than its message's. The session key of parts
-- goes: the message's own key to its session implies it, and a session's deletion reaches
-- its parts through its messages.
--
-- SQLite changes a table's keys by rebuilding it. A part copied over takes its message's
-- session (a part written with another session's id was unreadable in both before).

DROP INDEX messages_by_session;
CREATE UNIQUE INDEX messages_by_session ON messages (session_id, id);

CREATE TABLE parts_new (
    id         TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    type       TEXT NOT NULL,
    open       INTEGER NOT NULL DEFAULT 0,
    cost       TEXT,
    data       TEXT NOT NULL,
    FOREIGN KEY (session_id, message_id) REFERENCES messages (session_id, id) ON DELETE CASCADE
);

INSERT INTO parts_new (id, session_id, message_id, type, open, cost, data)
SELECT parts.id, messages.session_id, parts.message_id, parts.type, parts.open, parts.cost, parts.data
FROM parts JOIN messages ON messages.id = parts.message_id
ORDER BY parts.id;

DROP TABLE parts;
ALTER TABLE parts_new RENAME TO parts;

CREATE INDEX parts_by_message ON parts (session_id, message_id, id);
CREATE INDEX parts_open ON parts (session_id) WHERE open;
