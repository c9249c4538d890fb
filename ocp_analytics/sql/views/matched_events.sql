-- matched_events: late events matched to the current runs they concern (docs/figures.md "Late events that arrive apart from the run").
--
-- Purpose: a run names its commits by its artifacts whose kind is 'commit'
--   or 'merge' (the artifact's path, else its id); an event about one of
--   them is treated as if appended to the run's signals. One commit shared
--   by several runs matches each; a run naming one commit twice matches the
--   event once. sig_idx places matched events after every signal of the run
--   (2^32 + their rank), ranked by observed_at (unknown first), then
--   event_id: the order of ocp_analytics.engine.features.matched_events. An event
--   signal row of run_features.events is (sig_idx, name, observed_at,
--   tier_rank) of these rows, with the as_of filter applied as to signals.
-- Parameters: none (reads events, artifacts).
-- Output columns: doc_id BIGINT, run_id VARCHAR, event_id VARCHAR,
--   commit VARCHAR, kind VARCHAR, name VARCHAR, sig_idx BIGINT,
--   observed_at TIMESTAMPTZ, tier VARCHAR.
CREATE OR REPLACE VIEW matched_events AS
WITH commits AS (
    SELECT DISTINCT doc_id, run_id, coalesce(path, artifact_id) AS commit
    FROM artifacts
    WHERE kind IN ('commit', 'merge') AND coalesce(path, artifact_id) IS NOT NULL
)
SELECT
    c.doc_id,
    c.run_id,
    e.event_id,
    e.commit,
    e.kind,
    e.name,
    CAST(4294967296 AS BIGINT) + row_number() OVER (
        PARTITION BY c.doc_id
        ORDER BY e.observed_at IS NOT NULL, e.observed_at, e.event_id
    ) - 1 AS sig_idx,
    e.observed_at,
    e.tier
FROM events AS e
JOIN commits AS c ON c.commit = e.commit
WHERE e.kind = 'event';
