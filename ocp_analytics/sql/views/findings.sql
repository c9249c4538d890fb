-- findings: the findings rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('findings')).
-- Output columns: those of ocp_analytics.schemas.FINDINGS (run_id VARCHAR,
--   doc_id BIGINT, code, json_path, message, source_path VARCHAR,
--   source_line, source_index BIGINT).
CREATE OR REPLACE VIEW findings AS
SELECT *
FROM ocp_current_versions('findings');
