-- cost: what an accepted run costs, per rule (docs/statistics.md "What an accepted run costs").
--
-- Purpose: the SQL twin of ocp_analytics.cost(dataset, rules, measure=...)
--   without groups. A run's cost is the sum of its attempts' measure over
--   those that record it (NULL when none does, never 0; NaN counts as not
--   recorded). Over the decided runs (accepted or rejected) with a cost, N
--   of them, A accepted: cost_per_accepted R = cost_total / A, with the
--   delta-method standard error se = sqrt(N * sum (x - R y)^2 /
--   ((N - 1) A^2)) (y 1 when accepted, else 0; the sum of squares taken
--   from sum x^2, sum xy and A, as the engine does) and R -/+ z se, the
--   lower bound cut at 0 (z from ocp_z95(): DuckDB has no normal quantile).
--   Decided runs with no cost are counted apart; unknown runs are left out.
--   The cost to acceptance of an accepted run sums the measure over its
--   attempts up to and including the attempt at acceptance (the first
--   attempts_to_acceptance attempts, ordered by started_at with an unknown
--   time last, then att_idx, as attempt_positions); NULL when that attempt
--   is unknown or none of those attempts records the measure. Every
--   attempt of the run counts, whatever ocp_as_of. A rule with no decided
--   run has no row.
-- Parameters:
--   getvariable('ocp_measure')  VARCHAR, what a run costs (default
--                               'cost_usd'): 'cost_usd', 'input_tokens',
--                               'output_tokens', 'reasoning_tokens' (the
--                               attempts' columns) or 'wall_s' (each
--                               attempt's ended_at - started_at in seconds,
--                               NULL when either is unknown or it ends
--                               before it starts).
--   those of acceptance (ocp_as_of, alternative_rules).
-- Output columns, ordered by rule:
--   rule VARCHAR
--   measure VARCHAR                            ocp_measure
--   runs_with_cost BIGINT                      decided runs with a cost (N)
--   accepted_with_cost BIGINT                  those accepted (A)
--   runs_without_cost BIGINT                   decided runs with no cost
--   accepted_without_cost BIGINT               those accepted
--   cost_total DOUBLE                          sum of the N costs (0 when N = 0)
--   cost_per_accepted DOUBLE                   cost_total / A (NULL when A = 0)
--   cost_se DOUBLE                             delta-method standard error
--                                              (NULL when A = 0 or N < 2)
--   cost_ci_low DOUBLE                         its 95 % interval, NULL with
--                                              cost_se
--   cost_ci_high DOUBLE
--   accepted_with_cost_to_acceptance BIGINT    accepted runs with a cost to
--                                              acceptance
--   cost_to_acceptance_median DOUBLE           their median (the mean of the
--                                              two middle ones; NULL when none)
--   cost_to_acceptance_mean DOUBLE             their mean (NULL when none)
--   as_of TIMESTAMPTZ                          the instant of knowledge
WITH checked AS (
    -- stops the query with a clear message when ocp_measure is not a measure
    SELECT
        CASE
            WHEN measure IN ('cost_usd', 'input_tokens', 'output_tokens', 'reasoning_tokens', 'wall_s')
                THEN measure
            ELSE error(
                'cannot measure cost as ''' || measure || '''. '
                || 'Hint: SET VARIABLE ocp_measure = ''cost_usd''; (or input_tokens, '
                || 'output_tokens, reasoning_tokens, wall_s)'
            )
        END AS measure
    FROM (SELECT coalesce(CAST(getvariable('ocp_measure') AS VARCHAR), 'cost_usd') AS measure)
),
measured AS (
    -- each attempt's measure as a DOUBLE, NULL when not recorded
    SELECT
        attempts.doc_id,
        attempts.started_at,
        attempts.att_idx,
        CASE checked.measure
            WHEN 'cost_usd' THEN attempts.cost_usd
            WHEN 'input_tokens' THEN CAST(attempts.input_tokens AS DOUBLE)
            WHEN 'output_tokens' THEN CAST(attempts.output_tokens AS DOUBLE)
            WHEN 'reasoning_tokens' THEN CAST(attempts.reasoning_tokens AS DOUBLE)
            WHEN 'wall_s' THEN
                CASE WHEN epoch_us(attempts.ended_at) >= epoch_us(attempts.started_at) THEN
                    (epoch_us(attempts.ended_at) - epoch_us(attempts.started_at)) / 1e6
                END
        END AS raw
    FROM attempts
    CROSS JOIN checked
),
through AS (
    -- each attempt's place in attempt order, the run's cost up to it and in all
    SELECT
        doc_id,
        row_number() OVER (
            PARTITION BY doc_id ORDER BY started_at ASC NULLS LAST, att_idx ASC
        ) AS pos,
        sum(x) OVER (
            PARTITION BY doc_id ORDER BY started_at ASC NULLS LAST, att_idx ASC
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        ) AS cost_through,
        sum(x) OVER (PARTITION BY doc_id) AS cost
    FROM (SELECT *, CASE WHEN NOT isnan(raw) THEN raw END AS x FROM measured)
),
decided AS (
    SELECT
        acceptance.rule,
        acceptance.outcome = 'accepted' AS accepted,
        totals.cost,
        CASE WHEN acceptance.outcome = 'accepted' THEN upto.cost_through END
            AS cost_to_acceptance,
        acceptance.as_of
    FROM acceptance
    INNER JOIN runs ON runs.run_id = acceptance.run_id
    LEFT JOIN through AS totals ON totals.doc_id = runs.doc_id AND totals.pos = 1
    LEFT JOIN through AS upto
        ON upto.doc_id = runs.doc_id AND upto.pos = acceptance.attempts_to_acceptance
    WHERE acceptance.outcome IN ('accepted', 'rejected')
),
sums AS (
    SELECT
        rule,
        count(cost) AS runs_with_cost,
        count(cost) FILTER (WHERE accepted) AS accepted_with_cost,
        count(*) FILTER (WHERE cost IS NULL) AS runs_without_cost,
        count(*) FILTER (WHERE cost IS NULL AND accepted) AS accepted_without_cost,
        coalesce(sum(cost), 0.0) AS cost_total,
        coalesce(sum(cost * cost), 0.0) AS cost_squares,
        coalesce(sum(cost) FILTER (WHERE accepted), 0.0) AS cost_accepted,
        count(cost_to_acceptance) AS accepted_with_cost_to_acceptance,
        median(cost_to_acceptance) AS cost_to_acceptance_median,
        avg(cost_to_acceptance) AS cost_to_acceptance_mean,
        any_value(as_of) AS as_of
    FROM decided
    GROUP BY rule
),
rated AS (
    SELECT
        *,
        CASE WHEN accepted_with_cost > 0 THEN cost_total / accepted_with_cost END AS ratio,
        -- sum (x - R y)^2 from the sums (y is 0 or 1, so y^2 = y), never below 0
        CASE WHEN accepted_with_cost > 0 AND runs_with_cost > 1 THEN sqrt(
            CAST(runs_with_cost AS DOUBLE) * greatest(
                cost_squares
                - 2 * (cost_total / accepted_with_cost) * cost_accepted
                + (cost_total / accepted_with_cost) * (cost_total / accepted_with_cost)
                * accepted_with_cost,
                0.0
            ) / ((runs_with_cost - 1) * CAST(accepted_with_cost AS DOUBLE) * accepted_with_cost)
        ) END AS se
    FROM sums
)
SELECT
    rated.rule,
    checked.measure,
    rated.runs_with_cost,
    rated.accepted_with_cost,
    rated.runs_without_cost,
    rated.accepted_without_cost,
    rated.cost_total,
    rated.ratio AS cost_per_accepted,
    rated.se AS cost_se,
    CASE WHEN rated.se IS NOT NULL THEN greatest(rated.ratio - ocp_z95() * rated.se, 0.0) END
        AS cost_ci_low,
    rated.ratio + ocp_z95() * rated.se AS cost_ci_high,
    rated.accepted_with_cost_to_acceptance,
    rated.cost_to_acceptance_median,
    rated.cost_to_acceptance_mean,
    rated.as_of
FROM rated
CROSS JOIN checked
ORDER BY rated.rule;
