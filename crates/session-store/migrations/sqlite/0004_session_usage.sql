-- A session carries the totals of its steps, as OpenCode's session record does (`cost` and
-- `tokens`): columns beside its JSON document, which the store keeps current in the
-- transaction that writes or removes a step-finish part (the columns are the truth; the
-- document's copies are overwritten when read). Sessions stored before get the sums of their
-- step-finish parts here. Money is decimal text (SQLite has no decimal type): those first
-- sums are added as SQLite reals, which keep 15 significant digits (every total of fewer
-- digits exactly); the store adds exact decimals from here on.

ALTER TABLE sessions ADD COLUMN cost TEXT NOT NULL DEFAULT '0';
ALTER TABLE sessions ADD COLUMN tokens_input INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN tokens_output INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN tokens_reasoning INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN tokens_cache_read INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN tokens_cache_write INTEGER NOT NULL DEFAULT 0;

UPDATE sessions SET
    cost = (SELECT CAST(TOTAL(CAST(cost AS REAL)) AS TEXT) FROM parts
            WHERE parts.session_id = sessions.id AND parts.type = 'step-finish'),
    tokens_input = (SELECT TOTAL(json_extract(data, '$.tokens.input')) FROM parts
                    WHERE parts.session_id = sessions.id AND parts.type = 'step-finish'),
    tokens_output = (SELECT TOTAL(json_extract(data, '$.tokens.output')) FROM parts
                     WHERE parts.session_id = sessions.id AND parts.type = 'step-finish'),
    tokens_reasoning = (SELECT TOTAL(json_extract(data, '$.tokens.reasoning')) FROM parts
                        WHERE parts.session_id = sessions.id AND parts.type = 'step-finish'),
    tokens_cache_read = (SELECT TOTAL(json_extract(data, '$.tokens.cache.read')) FROM parts
                         WHERE parts.session_id = sessions.id AND parts.type = 'step-finish'),
    tokens_cache_write = (SELECT TOTAL(json_extract(data, '$.tokens.cache.write')) FROM parts
                          WHERE parts.session_id = sessions.id AND parts.type = 'step-finish')
WHERE EXISTS (SELECT 1 FROM parts WHERE parts.session_id = sessions.id AND parts.type = 'step-finish');
