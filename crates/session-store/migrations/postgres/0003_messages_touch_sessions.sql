-- A message write moves its session's updated time (the order of the session list) in the
-- same statement, by trigger, instead of a statement of its own: a commit of messages alone
-- is then one statement, atomic without a transaction, and each commit with messages is a
-- round trip to the database shorter. `touched` is when the store wrote the row; the
-- session's time only moves forward. Rows written before this migration keep 0, which moves
-- nothing. The function names `sessions` unqualified: it is the table of the schema on the
-- connection's search path, as for every other statement of the store.

ALTER TABLE messages ADD COLUMN touched BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION messages_touch_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET time_updated = NEW.touched
    WHERE id = NEW.session_id AND time_updated < NEW.touched;
    RETURN NULL;
END
$$;

CREATE TRIGGER messages_touch_session AFTER INSERT OR UPDATE OF touched ON messages
    FOR EACH ROW EXECUTE FUNCTION messages_touch_session();
