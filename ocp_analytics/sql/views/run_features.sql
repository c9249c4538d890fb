-- run_features: one row per run with every signal a rule can read (docs/figures.md "Per run: the acceptance table").
--
-- Purpose: the per-run feature step, done once whatever the number of
--   rules (the engine's feature table): the latest verdict and the latest
--   numeric score of every name, each with the attempt it names placed in
--   attempt order, and the run's excluded-event candidates. Rules are then
--   evaluated row by row on this table (run_rules, rule_parts, acceptance),
--   never against the signals again. The verdicts and scores of a run are
--   gathered from latest_signals (one row per run and name, signals known
--   at as_of only) into two maps. events holds the event signals not
--   observed after as_of (docs/figures.md "as_of": as_of is the instant of knowledge; those take
--   no part for any rule), the run's own and the late events matched to it
--   (matched_events, docs/late-events.md), sorted by sig_idx; which of them a rule counts
--   depends on its excludes_events and window (rule_parts).
-- Parameters: getvariable('ocp_as_of') through ocp_as_of().
--   Reads runs, latest_signals, signals, matched_events.
-- Output columns:
--   doc_id BIGINT, run_id VARCHAR, ended_at TIMESTAMPTZ
--   verdicts MAP(VARCHAR, STRUCT(state TINYINT, tier_rank TINYINT,
--     attempt_pos BIGINT))
--       name -> the latest verdict: state 0 fail, 1 unknown, 2 pass; its
--       tier; the position of the attempt it names (attempt_positions.pos;
--       NULL when it names no attempt of the run). NULL: no verdict.
--       (Three small fields: each field of a list costs memory per run.)
--   scores MAP(VARCHAR, STRUCT(value DOUBLE, tier_rank TINYINT,
--     attempt_pos BIGINT))
--       name -> the latest numeric score, the same way. NULL: no score.
--   events STRUCT(sig_idx BIGINT, name VARCHAR, observed_at TIMESTAMPTZ,
--     tier_rank TINYINT)[]  NULL when the run has none
CREATE OR REPLACE VIEW run_features AS
WITH signals_by_run AS (
    -- The lists of a run are window aggregates over the run's rows of
    -- latest_signals (one per name), then one row per run is kept: GROUP BY
    -- doc_id with list() peaked higher, as DuckDB holds per-group list
    -- states to the end of the query, where the window keeps its input rows
    -- compactly (benchmarks/RESULTS.md, "Measured and not kept").
    SELECT
        doc_id,
        map_from_entries(
            list({
                'key': name,
                'value': {'state': state, 'tier_rank': tier_rank, 'attempt_pos': attempt_pos}
            }) FILTER (WHERE kind = 'verdict') OVER per_run
        ) AS verdicts,
        map_from_entries(
            list({
                'key': name,
                'value': {'value': value, 'tier_rank': tier_rank, 'attempt_pos': attempt_pos}
            }) FILTER (WHERE kind = 'score') OVER per_run
        ) AS scores
    FROM latest_signals
    WHERE name IS NOT NULL
    WINDOW per_run AS (PARTITION BY doc_id)
    QUALIFY row_number() OVER per_run = 1
),
event_signals AS (
    -- the run's own event signals, then the late events matched to it
    -- (docs/late-events.md: as if appended to run.signals, sig_idx >= 2^32)
    SELECT doc_id, CAST(sig_idx AS BIGINT) AS sig_idx, name, observed_at, tier
    FROM signals
    WHERE kind = 'event'
    UNION ALL
    SELECT doc_id, sig_idx, name, observed_at, tier
    FROM matched_events
),
events AS (
    SELECT
        doc_id,
        list_sort(
            list({
                'sig_idx': sig_idx,
                'name': name,
                'observed_at': observed_at,
                'tier_rank': CAST(ocp_tier_rank(tier) AS TINYINT)
            })
        ) AS events
    FROM event_signals
    WHERE name IS NOT NULL AND (observed_at IS NULL OR observed_at <= ocp_as_of())
    GROUP BY doc_id
)
-- runs on the right: the join builds its hash table on the narrow runs
-- rows and streams the feature rows through it (every run is kept)
SELECT r.doc_id, r.run_id, r.ended_at, s.verdicts, s.scores, e.events
FROM signals_by_run AS s
RIGHT JOIN runs AS r ON r.doc_id = s.doc_id
LEFT JOIN events AS e ON e.doc_id = r.doc_id;
