-- ocp_tier_q(tier_rank): q of a tier rank (SEMANTICS §7).
--
-- Purpose: the q written next to every outcome: 0.98, 0.95, 0.80, 0.70 for
--   verified, reported, heuristic, asserted.
-- Parameters: tier_rank INTEGER 0..3, or NULL (nothing used).
-- Output: DOUBLE 0.98 | 0.95 | 0.80 | 0.70 (NULL reads asserted, 0.70).
CREATE OR REPLACE MACRO ocp_tier_q(tier_rank) AS
CASE tier_rank
    WHEN 0 THEN CAST(0.98 AS DOUBLE)
    WHEN 1 THEN CAST(0.95 AS DOUBLE)
    WHEN 2 THEN CAST(0.80 AS DOUBLE)
    ELSE CAST(0.70 AS DOUBLE)
END;
