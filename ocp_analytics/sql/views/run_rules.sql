-- run_rules: every (run, rule) pair to evaluate, with the rule's effective fields.
--
-- Purpose: one row per run under its own recorded rule (rule = 'recorded'),
--   plus one row per run and row of alternative_rules. The defaults of
--   SEMANTICS §3 are applied here, once: excludes_events NULL reads
--   ['revert', 'incident'], window_days NULL reads 14; requires keeps its
--   duplicates (rule_parts counts each name once). A run without a recorded
--   rule gets problem 'no_rule', an unreadable one (rules.valid = false)
--   'invalid_rule'; such a row has no parts and counts no event.
-- Parameters: none (reads runs, rules, alternative_rules).
-- Output columns:
--   doc_id BIGINT, run_id VARCHAR, ended_at TIMESTAMPTZ
--   rule VARCHAR              'recorded' or the alternative rule's name
--   problem VARCHAR           NULL | 'no_rule' | 'invalid_rule'
--   requires VARCHAR[]        as written (NULL: none)
--   score_name VARCHAR, score_target DOUBLE, score_better VARCHAR
--   excludes_events VARCHAR[] effective (default applied)
--   window_days BIGINT        effective (default applied)
CREATE OR REPLACE VIEW run_rules AS
WITH pairs AS (
    SELECT
        r.doc_id,
        r.run_id,
        r.ended_at,
        'recorded' AS rule,
        CASE
            WHEN rl.doc_id IS NULL THEN 'no_rule'
            WHEN NOT rl.valid THEN 'invalid_rule'
        END AS problem,
        rl.requires,
        rl.score_name,
        rl.score_target,
        rl.score_better,
        rl.excludes_events,
        rl.window_days
    FROM runs AS r
    LEFT JOIN rules AS rl ON rl.doc_id = r.doc_id
    UNION ALL
    SELECT
        r.doc_id,
        r.run_id,
        r.ended_at,
        a.name AS rule,
        NULL AS problem,
        a.requires,
        a.score_name,
        a.score_target,
        a.score_better,
        a.excludes_events,
        a.window_days
    FROM runs AS r
    CROSS JOIN alternative_rules AS a
)
SELECT
    doc_id,
    run_id,
    ended_at,
    rule,
    problem,
    CASE WHEN problem IS NULL THEN requires END AS requires,
    CASE WHEN problem IS NULL THEN score_name END AS score_name,
    CASE WHEN problem IS NULL THEN score_target END AS score_target,
    CASE WHEN problem IS NULL THEN score_better END AS score_better,
    CASE
        WHEN problem IS NULL THEN coalesce(excludes_events, ['revert', 'incident'])
    END AS excludes_events,
    CASE WHEN problem IS NULL THEN coalesce(window_days, 14) END AS window_days
FROM pairs;
