-- latest_scores: the latest numeric score of every (run version, name) (SEMANTICS §4).
--
-- Purpose: only scores whose value is a JSON number count (value_num IS NOT
--   NULL): a later null, boolean or string score does not hide an earlier
--   measured one. Among those, order by observed_at with an unknown time
--   FIRST, then by position in run.signals; the last one wins.
-- Parameters: none.
-- Output columns:
--   doc_id BIGINT, name VARCHAR
--   value DOUBLE        the score
--   tier_rank INTEGER   0 verified … 3 asserted (ocp_tier_rank)
--   at_attempt VARCHAR  the attempt the score names (may name none)
--   sig_idx INTEGER, observed_at TIMESTAMPTZ  which signal won
CREATE OR REPLACE VIEW latest_scores AS
SELECT
    doc_id,
    name,
    value_num AS value,
    ocp_tier_rank(tier) AS tier_rank,
    at_attempt,
    sig_idx,
    observed_at
FROM signals
WHERE kind = 'score' AND value_num IS NOT NULL
QUALIFY row_number() OVER (
    PARTITION BY doc_id, name
    ORDER BY observed_at DESC NULLS LAST, sig_idx DESC
) = 1;
