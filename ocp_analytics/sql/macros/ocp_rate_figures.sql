-- ocp_rate_figures(counts): the published rates columns of one group, from its ocp_rate_counts (docs/figures.md "Per group: rates").
--
-- Purpose: the one home of the final rates computation, shared by
--   views/rates.sql and sql/queries/rates_by*.sql (the twin of
--   ocp_analytics.engine.rates.combine). A caller writes its group columns
--   and rule, then unnest(ocp_rate_figures(counts)), which spreads the
--   struct into columns (in a query of its own: DuckDB refuses UNNEST of a
--   struct next to GROUP BY ALL, so the counts come from a CTE).
-- Parameters: counts, the struct of ocp_rate_counts for the group.
-- Output: STRUCT of the columns of the rates view after rule (runs,
--   accepted, …, as_of): their names, types and order, and the meaning
--   views/rates.sql gives each.
CREATE OR REPLACE MACRO ocp_rate_figures(counts) AS {
    'runs': counts.runs,
    'accepted': counts.accepted,
    'rejected': counts.rejected,
    'unknown': counts.unknown,
    'accept_rate': CASE
        WHEN counts.accepted + counts.rejected > 0
            THEN CAST(counts.accepted AS DOUBLE) / (counts.accepted + counts.rejected)
    END,
    'ci_low': ocp_wilson(counts.accepted, counts.accepted + counts.rejected, 'low'),
    'ci_high': ocp_wilson(counts.accepted, counts.accepted + counts.rejected, 'high'),
    'decided_share': CAST(counts.accepted + counts.rejected AS DOUBLE) / counts.runs,
    'attempts_mean': counts.attempts_mean,
    'attempts_median': counts.attempts_median,
    'first_attempt_share': CASE
        WHEN counts.with_attempts > 0
            THEN CAST(counts.at_first AS DOUBLE) / counts.with_attempts
    END,
    'first_node_attempt_share': CASE
        WHEN counts.with_attempts > 0
            THEN CAST(counts.at_first_of_node AS DOUBLE) / counts.with_attempts
    END,
    'provisional': counts.provisional,
    'tier_verified': counts.tier_verified,
    'tier_reported': counts.tier_reported,
    'tier_heuristic': counts.tier_heuristic,
    'tier_asserted': counts.tier_asserted,
    'as_of': counts.as_of
};
