-- rates_by_period: acceptance rates per UTC period and rule, inside a time window (SEMANTICS §10).
--
-- Purpose: the SQL twin of ocp_analytics.rates(dataset, rules, period=...,
--   since=..., until=...) with no grouping (docs/time.md). A run's time is
--   its ended_at, else its started_at. A run with neither is outside every
--   window; with no window it is counted in a row whose period is NULL (as
--   the engine does). Periods are UTC calendar buckets: day, week (starting
--   on Monday) or month, named by their first instant.
-- Parameters:
--   getvariable('ocp_period')  VARCHAR, required: 'day', 'week' or 'month'.
--   getvariable('ocp_since')   TIMESTAMPTZ, optional: keep runs whose time is
--                              at or after it.
--   getvariable('ocp_until')   TIMESTAMPTZ, optional: keep runs whose time is
--                              before it.
--   those of acceptance (ocp_as_of, alternative_rules).
-- Output columns, ordered by period (NULL last) then rule:
--   period TIMESTAMPTZ          the first instant of the run's period (UTC),
--                               NULL for runs with no time
--   rule, runs, accepted, rejected, unknown, accept_rate, ci_low, ci_high,
--   decided_share, attempts_mean, attempts_median, first_attempt_share
--                               as in the rates view
--   first_node_attempt_share DOUBLE
--                               share of accepted runs (with a known attempt at
--                               acceptance) accepted at their node's first
--                               attempt (accepted_attempt_n = 1)
--   provisional BIGINT          as in the rates view
--   tier_verified, tier_reported, tier_heuristic, tier_asserted BIGINT
--                               decided runs (accepted or rejected) by tier
--   as_of TIMESTAMPTZ
WITH checked AS (
    -- stops the query with a clear message when ocp_period is wrong
    SELECT
        CASE
            WHEN period_name IS NULL OR period_name NOT IN ('day', 'week', 'month') THEN error(
                'ocp_period is ' || coalesce('''' || period_name || '''', 'not set') || '. '
                || 'Hint: SET VARIABLE ocp_period = ''day''; (or ''week'', ''month'')'
            )
            ELSE true
        END AS ok,
        period_name,
        CAST(getvariable('ocp_since') AS TIMESTAMPTZ) AS since,
        CAST(getvariable('ocp_until') AS TIMESTAMPTZ) AS until
    FROM (SELECT CAST(getvariable('ocp_period') AS VARCHAR) AS period_name)
),
timed AS (
    SELECT
        runs.run_id,
        date_trunc(checked.period_name, coalesce(runs.ended_at, runs.started_at)) AS period
    FROM runs
    CROSS JOIN checked
    WHERE
        checked.ok
        AND (checked.since IS NULL OR coalesce(runs.ended_at, runs.started_at) >= checked.since)
        AND (checked.until IS NULL OR coalesce(runs.ended_at, runs.started_at) < checked.until)
),
counts AS (
    SELECT
        timed.period,
        acceptance.rule,
        count(*) AS runs,
        count(*) FILTER (WHERE outcome = 'accepted') AS accepted,
        count(*) FILTER (WHERE outcome = 'rejected') AS rejected,
        count(*) FILTER (WHERE outcome = 'unknown') AS unknown,
        count(*) FILTER (WHERE outcome = 'accepted' AND window_open) AS provisional,
        avg(attempts_to_acceptance) FILTER (WHERE outcome = 'accepted') AS attempts_mean,
        quantile_cont(attempts_to_acceptance, 0.5) FILTER (WHERE outcome = 'accepted')
            AS attempts_median,
        count(attempts_to_acceptance) FILTER (WHERE outcome = 'accepted') AS with_attempts,
        count(*) FILTER (WHERE outcome = 'accepted' AND attempts_to_acceptance = 1) AS at_first,
        count(*) FILTER (
            WHERE outcome = 'accepted' AND attempts_to_acceptance IS NOT NULL
            AND accepted_attempt_n = 1
        ) AS at_first_of_node,
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'verified')
            AS tier_verified,
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'reported')
            AS tier_reported,
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'heuristic')
            AS tier_heuristic,
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'asserted')
            AS tier_asserted,
        any_value(acceptance.as_of) AS as_of
    FROM acceptance
    INNER JOIN timed ON timed.run_id = acceptance.run_id
    GROUP BY timed.period, acceptance.rule
)
SELECT
    period,
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
        WHEN with_attempts > 0 THEN CAST(at_first AS DOUBLE) / with_attempts
    END AS first_attempt_share,
    CASE
        WHEN with_attempts > 0 THEN CAST(at_first_of_node AS DOUBLE) / with_attempts
    END AS first_node_attempt_share,
    provisional,
    tier_verified,
    tier_reported,
    tier_heuristic,
    tier_asserted,
    as_of
FROM counts
ORDER BY period NULLS LAST, rule;
