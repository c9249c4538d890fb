-- rules: the rules rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('rules')).
-- Output columns: those of ocp_analytics.schemas.RULES (run_id VARCHAR,
--   doc_id BIGINT, name, definition VARCHAR, requires VARCHAR[], score_name
--   VARCHAR, score_target DOUBLE, score_better, score_scale VARCHAR,
--   excludes_events VARCHAR[], window_days BIGINT, valid BOOLEAN,
--   invalid_reason VARCHAR); a run with no recorded rule has no row.
CREATE OR REPLACE VIEW rules AS
SELECT *
FROM ocp_current_versions('rules');
