-- rates: acceptance rates per rule over all runs (docs/figures.md "Per group: rates").
--
-- Purpose: the SQL twin of ocp_analytics.rates(dataset, rules) with no
--   grouping (rates_from with by = ()). For grouped rates see
--   sql/queries/rates_by.sql, rates_by_label.sql and rates_by_period.sql.
--   The counts are ocp_rate_counts and the figures ocp_rate_figures, shared
--   with the grouped queries.
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
WITH grouped AS (
    SELECT
        rule,
        ocp_rate_counts(
            outcome, attempts_to_acceptance, accepted_attempt_n, tier, window_open, as_of
        ) AS counts
    FROM acceptance
    GROUP BY rule
)
SELECT rule, unnest(ocp_rate_figures(counts))
FROM grouped
ORDER BY rule NULLS LAST;
