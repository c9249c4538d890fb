-- ocp_tier_rank(tier): rank of an evidence tier word (docs/figures.md "tier and q").
--
-- GENERATED from ocp_analytics.schemas (OUTCOME_TIERS, TIER_Q) by
--   `python -m ocp_analytics.sql`: edit schemas.py, then regenerate.
-- Purpose: verified 0, reported 1, heuristic 2, asserted 3; compared
--   lower-cased; a missing or unknown word reads as asserted (3).
-- Parameters: tier VARCHAR.
-- Output: INTEGER 0..3 (higher is weaker).
CREATE OR REPLACE MACRO ocp_tier_rank(tier) AS
CASE lower(tier)
    WHEN 'verified' THEN 0
    WHEN 'reported' THEN 1
    WHEN 'heuristic' THEN 2
    ELSE 3
END;
