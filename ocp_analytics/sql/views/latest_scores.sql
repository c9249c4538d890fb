-- latest_scores: the latest numeric score of every (run version, name) (SEMANTICS §4).
--
-- Purpose: the score rows of latest_signals: only scores whose value is a
--   JSON number count; among those, the latest observed_at (an unknown time
--   sorts first), then the latest position in run.signals.
-- Parameters: none.
-- Output columns:
--   doc_id BIGINT, name VARCHAR
--   value DOUBLE         the score
--   tier_rank TINYINT    0 verified … 3 asserted (ocp_tier_rank)
--   attempt_pos BIGINT   position of the attempt it names (NULL: none of the run)
--   sig_idx INTEGER      which signal won (its position in run.signals)
CREATE OR REPLACE VIEW latest_scores AS
SELECT doc_id, name, value, tier_rank, attempt_pos, sig_idx
FROM latest_signals
WHERE kind = 'score';
