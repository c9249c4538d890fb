-- ocp_tier_word(tier_rank): the tier word of a rank (docs/figures.md "tier and q").
--
-- GENERATED from ocp_analytics.schemas (OUTCOME_TIERS, TIER_Q) by
--   `python -m ocp_analytics.sql`: edit schemas.py, then regenerate.
-- Purpose: turn the weakest rank used back into its word; nothing used (NULL)
--   reads asserted.
-- Parameters: tier_rank INTEGER 0..3, or NULL (nothing used).
-- Output: VARCHAR verified | reported | heuristic | asserted (NULL reads
--   asserted).
CREATE OR REPLACE MACRO ocp_tier_word(tier_rank) AS
CASE tier_rank
    WHEN 0 THEN 'verified'
    WHEN 1 THEN 'reported'
    WHEN 2 THEN 'heuristic'
    ELSE 'asserted'
END;
