-- latest_verdicts: the latest verdict of every (run version, name) known at as_of (docs/figures.md "Which signal counts", "outcome and reasons").
--
-- Purpose: the verdict rows of latest_signals: within one document, for one
--   verdict name, among the verdicts not observed after as_of, the one with
--   the latest observed_at (an unknown time sorts first), then the latest
--   position in run.signals, whatever its value.
-- Parameters: getvariable('ocp_as_of') through ocp_as_of() (now when unset).
-- Output columns:
--   doc_id BIGINT, name VARCHAR
--   state TINYINT        0 fail, 1 unknown, 2 pass (ocp_verdict_state)
--   tier_rank TINYINT    0 verified … 3 asserted (ocp_tier_rank)
--   attempt_pos BIGINT   position of the attempt it names (NULL: none of the run)
--   sig_idx INTEGER      which signal won (its position in run.signals)
CREATE OR REPLACE VIEW latest_verdicts AS
SELECT doc_id, name, state, tier_rank, attempt_pos, sig_idx
FROM latest_signals
WHERE kind = 'verdict';
