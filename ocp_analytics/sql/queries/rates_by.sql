-- rates_by: acceptance rates per group of runs and rule (docs/figures.md "Per group: rates").
--
-- Purpose: the SQL twin of ocp_analytics.rates(dataset, rules, by=[...],
--   min_tier=...) for groups made of runs columns. For a label use
--   rates_by_label.sql; with no group, the rates view.
-- Parameters:
--   getvariable('ocp_by')        VARCHAR[], runs columns to group by, e.g.
--                                ['task_type'] or ['repo', 'task_type']
--                                (required, non-empty; an unknown name is
--                                an error).
--   getvariable('ocp_min_tier')  VARCHAR, optional: count an outcome as
--                                decided only when its tier is at least this
--                                strong (verified, reported, heuristic,
--                                asserted); weaker outcomes count as unknown.
--   those of acceptance (ocp_as_of, alternative_rules).
-- Output columns, ordered by the group columns then rule (NULLs last):
--   the ocp_by columns   names and types of runs, in the column order of
--                        runs whatever the order of ocp_by
--   those of the rates view (rule, runs, accepted, …, as_of)
WITH checked AS (
    -- stops the query with a clear message when ocp_min_tier is not a tier
    -- (an unknown or missing ocp_by column is refused by DuckDB's binder);
    -- a word that is no tier reads as another tier's word
    SELECT
        CASE
            WHEN ocp_tier_word(ocp_tier_rank(min_tier)) <> min_tier THEN error(
                'ocp_min_tier is ''' || min_tier || '''. '
                || 'Hint: use verified, reported, heuristic or asserted.'
            )
            ELSE true
        END AS ok,
        min_tier
    FROM (SELECT CAST(getvariable('ocp_min_tier') AS VARCHAR) AS min_tier)
),
judged AS (
    SELECT
        acceptance.run_id AS _run_id,
        acceptance.rule AS _rule,
        CASE
            WHEN checked.min_tier IS NULL
                OR ocp_tier_rank(acceptance.tier) <= ocp_tier_rank(checked.min_tier)
                THEN acceptance.outcome
            ELSE 'unknown'
        END AS _outcome,
        acceptance.attempts_to_acceptance AS _attempts,
        acceptance.accepted_attempt_n AS _attempt_n,
        acceptance.tier AS _tier,
        acceptance.window_open AS _window_open,
        acceptance.as_of AS _as_of
    FROM acceptance
    CROSS JOIN checked
    WHERE checked.ok
),
grouping_columns AS (
    SELECT
        run_id AS _group_run_id,
        COLUMNS(getvariable('ocp_by'))
    FROM runs
),
grouped AS (
    SELECT
        COLUMNS(getvariable('ocp_by')),
        _rule AS rule,
        ocp_rate_counts(_outcome, _attempts, _attempt_n, _tier, _window_open, _as_of) AS counts
    FROM judged
    INNER JOIN grouping_columns ON grouping_columns._group_run_id = judged._run_id
    GROUP BY ALL
)
SELECT COLUMNS(getvariable('ocp_by')), rule, unnest(ocp_rate_figures(counts))
FROM grouped
ORDER BY ALL NULLS LAST;
