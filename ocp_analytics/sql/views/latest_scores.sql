-- latest_scores: the latest numeric score of every (run version, name) known at as_of (docs/figures.md "Which signal counts").
--
-- Purpose: the score rows of latest_signals: only scores not observed after
--   as_of whose value is a JSON number count; among those, the latest
--   observed_at (an unknown time sorts first), then the latest position in
--   run.signals.
-- Parameters: getvariable('ocp_as_of') through ocp_as_of() (now when unset).
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
