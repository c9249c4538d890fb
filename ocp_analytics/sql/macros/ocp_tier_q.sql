-- ocp_tier_q(tier_rank): q of a tier rank (docs/figures.md "tier and q").
--
-- GENERATED from ocp_analytics.schemas (OUTCOME_TIERS, TIER_Q) by
--   `python -m ocp_analytics.sql`: edit schemas.py, then regenerate.
-- Purpose: the q written next to every outcome: 0.98 for verified, 0.95 for
--   reported, 0.8 for heuristic, 0.7 for asserted.
-- Parameters: tier_rank INTEGER 0..3, or NULL (nothing used).
-- Output: DOUBLE 0.98 | 0.95 | 0.8 | 0.7 (NULL reads asserted, 0.7).
CREATE OR REPLACE MACRO ocp_tier_q(tier_rank) AS
CASE tier_rank
    WHEN 0 THEN CAST('0.98' AS DOUBLE)
    WHEN 1 THEN CAST('0.95' AS DOUBLE)
    WHEN 2 THEN CAST('0.8' AS DOUBLE)
    ELSE CAST('0.7' AS DOUBLE)
END;
