-- A session carries the totals of its steps, as OpenCode's session record does (`cost` and
-- `tokens`): columns beside its JSON document, which the store keeps current in the
-- transaction that writes or removes a step-finish part (the columns are the truth; the
-- document's copies are overwritten when read). Sessions stored before get the sums of their
-- step-finish parts here. Money is NUMERIC.

ALTER TABLE sessions
    ADD COLUMN cost NUMERIC NOT NULL DEFAULT 0,
    ADD COLUMN tokens_input BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN tokens_output BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN tokens_reasoning BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN tokens_cache_read BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN tokens_cache_write BIGINT NOT NULL DEFAULT 0;

-- Step-finish parts hold numbers and short names only, so their JSON casts to jsonb.
UPDATE sessions SET
    cost = steps.cost,
    tokens_input = steps.input,
    tokens_output = steps.output,
    tokens_reasoning = steps.reasoning,
    tokens_cache_read = steps.cache_read,
    tokens_cache_write = steps.cache_write
FROM (
    SELECT session_id,
           COALESCE(SUM(cost), 0) AS cost,
           COALESCE(SUM((data::jsonb #>> '{tokens,input}')::numeric), 0) AS input,
           COALESCE(SUM((data::jsonb #>> '{tokens,output}')::numeric), 0) AS output,
           COALESCE(SUM((data::jsonb #>> '{tokens,reasoning}')::numeric), 0) AS reasoning,
           COALESCE(SUM((data::jsonb #>> '{tokens,cache,read}')::numeric), 0) AS cache_read,
           COALESCE(SUM((data::jsonb #>> '{tokens,cache,write}')::numeric), 0) AS cache_write
    FROM parts
    WHERE type = 'step-finish'
    GROUP BY session_id
) AS steps
WHERE sessions.id = steps.session_id;
