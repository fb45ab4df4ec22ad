-- A message write moves its session's updated time (the order of the session list) in the
-- same statement, by trigger, instead of a statement of its own: a commit of messages alone
-- is then one statement, atomic without a transaction, and each commit with messages is a
-- round trip to the database shorter. `touched` is when the store wrote the row; the
-- session's time only moves forward. Rows written before this migration keep 0, which moves
-- nothing.

ALTER TABLE messages ADD COLUMN touched INTEGER NOT NULL DEFAULT 0;

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
