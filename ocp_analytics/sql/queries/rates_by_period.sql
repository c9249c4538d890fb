-- rates_by_period: acceptance rates per UTC period and rule, inside a time window (docs/figures.md "Per group: rates").
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
--                              before it. Unset with ocp_since set, the
--                              window ends at ocp_as_of(), as the engine's
--                              does (docs/time.md).
--   those of acceptance (ocp_as_of, alternative_rules).
-- Output columns, ordered by period (NULL last) then rule:
--   period TIMESTAMPTZ    the first instant of the run's period (UTC), NULL
--                         for runs with no time
--   those of the rates view (rule, runs, accepted, …, as_of)
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
        coalesce(
            CAST(getvariable('ocp_until') AS TIMESTAMPTZ),
            CASE WHEN getvariable('ocp_since') IS NOT NULL THEN ocp_as_of() END
        ) AS until
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
grouped AS (
    SELECT
        timed.period,
        acceptance.rule,
        ocp_rate_counts(
            acceptance.outcome,
            acceptance.attempts_to_acceptance,
            acceptance.accepted_attempt_n,
            acceptance.tier,
            acceptance.window_open,
            acceptance.as_of
        ) AS counts
    FROM acceptance
    INNER JOIN timed ON timed.run_id = acceptance.run_id
    GROUP BY timed.period, acceptance.rule
)
SELECT period, rule, unnest(ocp_rate_figures(counts))
FROM grouped
ORDER BY period NULLS LAST, rule;
