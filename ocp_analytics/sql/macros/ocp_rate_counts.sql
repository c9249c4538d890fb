-- ocp_rate_counts(outcome, attempts_to_acceptance, accepted_attempt_n, tier, window_open, as_of): what rates count in one group of acceptance rows (docs/figures.md "Per group: rates").
--
-- Purpose: the one home of the aggregates behind every rates figure
--   (views/rates.sql and sql/queries/rates_by*.sql). An aggregate macro: it
--   is expanded where it is called, so count(*) counts the rows of the
--   caller's group (one group per rule, or per group and rule). Pass the
--   struct to ocp_rate_figures for the published columns.
-- Parameters: the acceptance columns of those names (outcome VARCHAR,
--   attempts_to_acceptance BIGINT, accepted_attempt_n BIGINT, tier VARCHAR,
--   window_open BOOLEAN, as_of TIMESTAMPTZ); outcome may already read
--   'unknown' for a tier below ocp_min_tier.
-- Output: STRUCT(runs, accepted, rejected, unknown, provisional BIGINT,
--   attempts_mean DOUBLE (of accepted runs), attempts_median DOUBLE (their
--   quantile_cont 0.5: the mean of the two middle values, as polars' median),
--   with_attempts BIGINT (accepted runs with a known attempts_to_acceptance),
--   at_first BIGINT (of those, accepted at their first attempt),
--   at_first_of_node BIGINT (of those, accepted_attempt_n = 1),
--   tier_verified, tier_reported, tier_heuristic, tier_asserted BIGINT
--   (decided runs, accepted or rejected, by tier), as_of TIMESTAMPTZ).
-- Example: SELECT rule, ocp_rate_counts(outcome, attempts_to_acceptance,
--   accepted_attempt_n, tier, window_open, as_of) FROM acceptance GROUP BY rule;
CREATE OR REPLACE MACRO ocp_rate_counts(
    outcome, attempts_to_acceptance, accepted_attempt_n, tier, window_open, as_of
) AS {
    'runs': count(*),
    'accepted': count(*) FILTER (WHERE outcome = 'accepted'),
    'rejected': count(*) FILTER (WHERE outcome = 'rejected'),
    'unknown': count(*) FILTER (WHERE outcome = 'unknown'),
    'provisional': count(*) FILTER (WHERE outcome = 'accepted' AND window_open),
    'attempts_mean': avg(attempts_to_acceptance) FILTER (WHERE outcome = 'accepted'),
    'attempts_median':
        quantile_cont(attempts_to_acceptance, 0.5) FILTER (WHERE outcome = 'accepted'),
    'with_attempts': count(attempts_to_acceptance) FILTER (WHERE outcome = 'accepted'),
    'at_first': count(*) FILTER (WHERE outcome = 'accepted' AND attempts_to_acceptance = 1),
    'at_first_of_node': count(*) FILTER (
        WHERE outcome = 'accepted' AND attempts_to_acceptance IS NOT NULL
        AND accepted_attempt_n = 1
    ),
    'tier_verified':
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'verified'),
    'tier_reported':
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'reported'),
    'tier_heuristic':
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'heuristic'),
    'tier_asserted':
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'asserted'),
    'as_of': any_value(as_of)
};
