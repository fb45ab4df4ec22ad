-- Parts keep one session-ordered index, (session_id, message_id, id), instead of two:
-- (session_id, id) and (message_id, id). Every part query names its session, so this index
-- serves the history load (parts of a message in id order), the revert cleanup and the
-- cascades; each commit maintains one index entry per part less.
--
-- The parts' message key becomes (session_id, message_id), referencing messages by the same
-- pair (a unique index on it), so a message's deletion finds its parts through that index
-- and a part can no longer name a session other than its message's. The session key of parts
-- goes: the message's own key to its session implies it, a session's deletion reaches its
-- parts through its messages, and each part written checks one key instead of two (each
-- check is a query and a row lock that is WAL-logged).

DROP INDEX messages_by_session;
CREATE UNIQUE INDEX messages_by_session ON messages (session_id, id);

-- A part written with another session's id than its message's was unreadable in both; it
-- takes its message's session.
UPDATE parts SET session_id = messages.session_id
FROM messages
WHERE messages.id = parts.message_id AND parts.session_id <> messages.session_id;

ALTER TABLE parts
    DROP CONSTRAINT parts_session_id_fkey,
    DROP CONSTRAINT parts_message_id_fkey,
    ADD CONSTRAINT parts_message_fkey FOREIGN KEY (session_id, message_id)
        REFERENCES messages (session_id, id) ON DELETE CASCADE;

DROP INDEX parts_by_session;
DROP INDEX parts_by_message;
CREATE INDEX parts_by_message ON parts (session_id, message_id, id);
