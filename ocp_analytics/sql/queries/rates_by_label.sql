-- rates_by_label: acceptance rates per value of one run label and rule (SEMANTICS §10).
--
-- Purpose: the SQL twin of ocp_analytics.rates(dataset, rules,
--   by='label.KEY', min_tier=...): runs are grouped by the value of the
--   label KEY (runs.labels), NULL when a run has no such label.
-- Parameters:
--   getvariable('ocp_label')     VARCHAR, the label key (required), e.g. 'team'.
--   getvariable('ocp_min_tier')  VARCHAR, optional, as in rates_by.sql.
--   those of acceptance (ocp_as_of, alternative_rules).
-- Output columns, ordered by label_value then rule (NULLs last):
--   label_key VARCHAR     the key (polars names its column label.KEY)
--   label_value VARCHAR   the run's value of that label
--   then rule, runs, accepted, rejected, unknown, accept_rate, ci_low,
--   ci_high, decided_share, attempts_mean, attempts_median,
--   first_attempt_share, first_node_attempt_share, provisional, tier_verified,
--   tier_reported, tier_heuristic, tier_asserted, as_of as in the rates view.
WITH checked AS (
    -- stops the query with a clear message when a parameter is wrong
    SELECT
        CASE
            WHEN label_key IS NULL THEN error(
                'ocp_label is not set. Hint: SET VARIABLE ocp_label = ''team'';'
            )
            WHEN min_tier NOT IN ('verified', 'reported', 'heuristic', 'asserted') THEN error(
                'ocp_min_tier is ''' || min_tier || '''. '
                || 'Hint: use verified, reported, heuristic or asserted.'
            )
            ELSE true
        END AS ok,
        label_key,
        min_tier
    FROM (
        SELECT
            CAST(getvariable('ocp_label') AS VARCHAR) AS label_key,
            CAST(getvariable('ocp_min_tier') AS VARCHAR) AS min_tier
    )
),
judged AS (
    SELECT
        checked.label_key,
        map_extract_value(runs.labels, checked.label_key) AS label_value,
        acceptance.rule,
        CASE
            WHEN checked.min_tier IS NULL
                OR ocp_tier_rank(acceptance.tier) <= ocp_tier_rank(checked.min_tier)
                THEN acceptance.outcome
            ELSE 'unknown'
        END AS outcome,
        acceptance.attempts_to_acceptance,
        acceptance.accepted_attempt_n,
        acceptance.tier,
        acceptance.window_open,
        acceptance.as_of
    FROM acceptance
    INNER JOIN runs ON runs.run_id = acceptance.run_id
    CROSS JOIN checked
    WHERE checked.ok
),
counts AS (
    SELECT
        label_key,
        label_value,
        rule,
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
        any_value(as_of) AS as_of
    FROM judged
    GROUP BY label_key, label_value, rule
)
SELECT
    label_key,
    label_value,
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
ORDER BY label_value NULLS LAST, rule NULLS LAST;
