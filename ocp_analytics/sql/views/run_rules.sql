-- run_rules: every (run, rule) pair to evaluate, with the rule's effective fields.
--
-- Purpose: one row per run under its own recorded rule (rule = 'recorded'),
--   plus one row per run and row of alternative_rules. run_features (one
--   row per run, carrying the run's recorded rule) is joined to a table of
--   K + 1 rules: a 'recorded' row meaning "the run's own rule", then every
--   alternative rule. DuckDB builds that small side and streams the runs
--   through it (see rules_to_join), so no runs × rules table is ever held,
--   and the features are read once.
--   The defaults of docs/figures.md "The rule" are applied once per rule (per run for
--   recorded rules): excludes_events NULL reads ['revert', 'incident'],
--   window_days NULL reads 14, requires keeps each name once, at its first
--   place (NULL names dropped). A run without a recorded rule gets problem
--   'no_rule', an unreadable one (rules.valid = false) 'invalid_rule'; such
--   a row has no parts and counts no event.
-- Parameters: none (reads run_features, rules, alternative_rules).
-- Output columns:
--   doc_id BIGINT, run_id VARCHAR, ended_at TIMESTAMPTZ
--   rule VARCHAR              'recorded' or the alternative rule's name
--   problem VARCHAR           NULL | 'no_rule' | 'invalid_rule'
--   requires VARCHAR[]        distinct names in rule order ([] when none)
--   score_name VARCHAR, score_target DOUBLE, score_better VARCHAR
--   excludes_events VARCHAR[] effective (default applied; [] with a problem)
--   window_days BIGINT        effective (default applied)
--   verdicts, scores, events  the run's features (run_features)
CREATE OR REPLACE VIEW run_rules AS
WITH own AS (
    SELECT
        f.*,
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
    FROM run_features AS f
    LEFT JOIN rules AS rl ON rl.doc_id = f.doc_id
),
effective AS (
    -- the defaults, applied to a rule's fields (per run for recorded rules)
    SELECT
        * EXCLUDE (requires, score_name, score_target, score_better, excludes_events, window_days),
        CASE
            WHEN problem IS NULL THEN list_filter(
                coalesce(requires, []),
                lambda name, i: name IS NOT NULL AND list_position(requires, name) = i
            )
            ELSE []
        END AS requires,
        CASE WHEN problem IS NULL THEN score_name END AS score_name,
        CASE WHEN problem IS NULL THEN score_target END AS score_target,
        CASE WHEN problem IS NULL THEN score_better END AS score_better,
        CASE
            WHEN problem IS NULL THEN coalesce(excludes_events, ['revert', 'incident'])
            ELSE []
        END AS excludes_events,
        CASE WHEN problem IS NULL THEN coalesce(window_days, 14) END AS window_days
    FROM own
),
rule_table AS (
    -- K + 1 rows: the run's own rule, then every alternative rule
    SELECT
        'recorded' AS rule,
        true AS own_rule,
        CAST(NULL AS VARCHAR[]) AS requires,
        CAST(NULL AS VARCHAR) AS score_name,
        CAST(NULL AS DOUBLE) AS score_target,
        CAST(NULL AS VARCHAR) AS score_better,
        CAST(NULL AS VARCHAR[]) AS excludes_events,
        CAST(NULL AS BIGINT) AS window_days
    UNION ALL
    SELECT
        name AS rule,
        false AS own_rule,
        list_filter(
            coalesce(requires, []),
            lambda name, i: name IS NOT NULL AND list_position(requires, name) = i
        ) AS requires,
        score_name,
        score_target,
        score_better,
        coalesce(excludes_events, ['revert', 'incident']) AS excludes_events,
        coalesce(window_days, 14) AS window_days
    FROM alternative_rules
),
rules_to_join AS (
    -- The rule table joined to one row of the runs files: the same rows
    -- (none when there is no run at all), but DuckDB then estimates their
    -- number from those files, as it estimates the runs. It builds its join
    -- on the side estimated smaller; without this, a dataset whose first
    -- listed file is an empty schema file (estimated 0 rows) made it hold
    -- every run's features and stream the K + 1 rules through them on one
    -- thread, instead of streaming the runs on every thread.
    SELECT t.*
    FROM rule_table AS t, (SELECT 1 FROM ocp_all_versions('runs') LIMIT 1)
)
SELECT
    e.doc_id,
    e.run_id,
    e.ended_at,
    t.rule,
    CASE WHEN t.own_rule THEN e.problem END AS problem,
    CASE WHEN t.own_rule THEN e.requires ELSE t.requires END AS requires,
    CASE WHEN t.own_rule THEN e.score_name ELSE t.score_name END AS score_name,
    CASE WHEN t.own_rule THEN e.score_target ELSE t.score_target END AS score_target,
    CASE WHEN t.own_rule THEN e.score_better ELSE t.score_better END AS score_better,
    CASE WHEN t.own_rule THEN e.excludes_events ELSE t.excludes_events END AS excludes_events,
    CASE WHEN t.own_rule THEN e.window_days ELSE t.window_days END AS window_days,
    e.verdicts,
    e.scores,
    e.events
FROM effective AS e
CROSS JOIN rules_to_join AS t;
