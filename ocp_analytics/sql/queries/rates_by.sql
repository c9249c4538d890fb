-- rates_by: acceptance rates per group of runs and rule (SEMANTICS §10).
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
--   the ocp_by columns (names and types of runs, in the column order of
--   runs whatever the order of ocp_by), then rule, runs, accepted,
--   rejected, unknown, accept_rate, ci_low, ci_high, decided_share,
--   attempts_mean, attempts_median, first_attempt_share,
--   first_node_attempt_share, provisional, tier_verified, tier_reported,
--   tier_heuristic, tier_asserted, as_of as in the rates view.
WITH checked AS (
    -- stops the query with a clear message when ocp_min_tier is not a tier
    -- (an unknown or missing ocp_by column is refused by DuckDB's binder)
    SELECT
        CASE
            WHEN min_tier NOT IN ('verified', 'reported', 'heuristic', 'asserted') THEN error(
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
counts AS (
    SELECT
        COLUMNS(getvariable('ocp_by')),
        _rule AS rule,
        count(*) AS runs,
        count(*) FILTER (WHERE _outcome = 'accepted') AS accepted,
        count(*) FILTER (WHERE _outcome = 'rejected') AS rejected,
        count(*) FILTER (WHERE _outcome = 'unknown') AS unknown,
        count(*) FILTER (WHERE _outcome = 'accepted' AND _window_open) AS provisional,
        avg(_attempts) FILTER (WHERE _outcome = 'accepted') AS attempts_mean,
        quantile_cont(_attempts, 0.5) FILTER (WHERE _outcome = 'accepted') AS attempts_median,
        count(_attempts) FILTER (WHERE _outcome = 'accepted') AS _with_attempts,
        count(*) FILTER (WHERE _outcome = 'accepted' AND _attempts = 1) AS _at_first,
        count(*) FILTER (
            WHERE _outcome = 'accepted' AND _attempts IS NOT NULL AND _attempt_n = 1
        ) AS _at_first_of_node,
        count(*) FILTER (WHERE _outcome IN ('accepted', 'rejected') AND _tier = 'verified')
            AS tier_verified,
        count(*) FILTER (WHERE _outcome IN ('accepted', 'rejected') AND _tier = 'reported')
            AS tier_reported,
        count(*) FILTER (WHERE _outcome IN ('accepted', 'rejected') AND _tier = 'heuristic')
            AS tier_heuristic,
        count(*) FILTER (WHERE _outcome IN ('accepted', 'rejected') AND _tier = 'asserted')
            AS tier_asserted,
        any_value(_as_of) AS as_of
    FROM judged
    INNER JOIN grouping_columns ON grouping_columns._group_run_id = judged._run_id
    GROUP BY ALL
)
SELECT
    COLUMNS(getvariable('ocp_by')),
    rule,
    runs,
    accepted,
    rejected,
    unknown,
    CASE
        WHEN accepted + rejected > 0 THEN CAST(accepted AS DOUBLE) / (accepted + rejected)
    END AS accept_rate,
    ocp_wilson(accepted, accepted + rejected, -1) AS ci_low,
    ocp_wilson(accepted, accepted + rejected, 1) AS ci_high,
    CAST(accepted + rejected AS DOUBLE) / runs AS decided_share,
    attempts_mean,
    attempts_median,
    CASE
        WHEN _with_attempts > 0 THEN CAST(_at_first AS DOUBLE) / _with_attempts
    END AS first_attempt_share,
    CASE
        WHEN _with_attempts > 0 THEN CAST(_at_first_of_node AS DOUBLE) / _with_attempts
    END AS first_node_attempt_share,
    provisional,
    tier_verified,
    tier_reported,
    tier_heuristic,
    tier_asserted,
    as_of
FROM counts
ORDER BY ALL NULLS LAST;
