-- rules: the rules rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs);
--   rows of older versions and rows of no run at all are left out (the
--   audit queries in sql/checks/ look for the latter).
-- Parameters: none (reads ocp_all_versions('rules')).
-- Output columns: those of ocp_analytics.schemas.RULES: run_id, doc_id, name,
--   definition, requires VARCHAR[], score_name, score_target DOUBLE,
--   score_better, score_scale, excludes_events VARCHAR[], window_days BIGINT,
--   valid BOOLEAN, invalid_reason (no row: the run has no recorded rule).
CREATE OR REPLACE VIEW rules AS
SELECT *
FROM ocp_all_versions('rules')
WHERE doc_id IN (SELECT doc_id FROM current_docs);
