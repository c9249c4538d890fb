-- findings: the findings rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs);
--   rows of older versions and rows of no run at all are left out (the
--   audit queries in sql/checks/ look for the latter).
-- Parameters: none (reads ocp_all_versions('findings')).
-- Output columns: those of ocp_analytics.schemas.FINDINGS: run_id, doc_id,
--   code, json_path, message, source_path, source_line, source_index.
CREATE OR REPLACE VIEW findings AS
SELECT *
FROM ocp_all_versions('findings')
WHERE doc_id IN (SELECT doc_id FROM current_docs);
