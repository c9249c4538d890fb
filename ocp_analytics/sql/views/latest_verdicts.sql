-- latest_verdicts: the latest verdict of every (run version, name) (SEMANTICS §4–§5).
--
-- Purpose: within one document, for one verdict name (exact, case-sensitive
--   match), order the verdicts by observed_at with an unknown time FIRST,
--   then by position in run.signals; the last one wins, whatever its value.
--   Written here as "first in the reversed order" so the tie-break is explicit.
-- Parameters: none.
-- Output columns:
--   doc_id BIGINT, name VARCHAR
--   state VARCHAR       'pass' | 'fail' | NULL (unknown), see ocp_verdict_state
--   value_text VARCHAR  the value as written
--   tier_rank INTEGER   0 verified … 3 asserted (ocp_tier_rank)
--   at_attempt VARCHAR  the attempt the verdict names (may name none)
--   sig_idx INTEGER, observed_at TIMESTAMPTZ  which signal won
CREATE OR REPLACE VIEW latest_verdicts AS
SELECT
    doc_id,
    name,
    ocp_verdict_state(value_text) AS state,
    value_text,
    ocp_tier_rank(tier) AS tier_rank,
    at_attempt,
    sig_idx,
    observed_at
FROM signals
WHERE kind = 'verdict'
QUALIFY row_number() OVER (
    PARTITION BY doc_id, name
    ORDER BY observed_at DESC NULLS LAST, sig_idx DESC
) = 1;
