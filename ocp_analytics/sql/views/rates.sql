-- rates: acceptance rates per rule over all runs (SEMANTICS §10).
--
-- Purpose: the SQL twin of ocp_analytics.rates(dataset, rules) with no
--   grouping (rates_from with by = ()). For grouped rates see
--   sql/queries/rates_by.sql and sql/queries/rates_by_label.sql.
-- Parameters: those of acceptance (ocp_as_of, alternative_rules).
-- Output columns, one row per rule, ordered by rule:
--   rule VARCHAR
--   runs, accepted, rejected, unknown BIGINT
--   accept_rate DOUBLE          accepted / (accepted + rejected), NULL when none decided
--   ci_low, ci_high DOUBLE      95 % Wilson interval on accept_rate (ocp_wilson)
--   decided_share DOUBLE        (accepted + rejected) / runs
--   attempts_mean DOUBLE        mean attempts_to_acceptance of accepted runs
--   attempts_median DOUBLE      its median (quantile_cont 0.5: the mean of
--                               the two middle values, as polars' median)
--   first_attempt_share DOUBLE  share of accepted runs with attempts_to_acceptance = 1
--                               among those with a known value; NULL when none
--   first_node_attempt_share DOUBLE  share of those accepted at their node's first
--                               attempt (accepted_attempt_n = 1)
--   provisional BIGINT          accepted runs whose window is still open
--   tier_verified, tier_reported, tier_heuristic, tier_asserted BIGINT
--                               decided runs (accepted or rejected) by evidence tier
--   as_of TIMESTAMPTZ
CREATE OR REPLACE VIEW rates AS
WITH counts AS (
    SELECT
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
    FROM acceptance
    GROUP BY rule
)
SELECT
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
ORDER BY rule NULLS LAST;
