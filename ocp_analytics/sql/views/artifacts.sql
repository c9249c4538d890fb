-- artifacts: the artifacts rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs);
--   rows of older versions and rows of no run at all are left out (the
--   audit queries in sql/checks/ look for the latter).
-- Parameters: none (reads ocp_all_versions('artifacts')).
-- Output columns: those of ocp_analytics.schemas.ARTIFACTS: run_id, doc_id,
--   art_idx, artifact_id, path, kind, producer, first_write_at TIMESTAMPTZ.
CREATE OR REPLACE VIEW artifacts AS
SELECT *
FROM ocp_all_versions('artifacts')
WHERE doc_id IN (SELECT doc_id FROM current_docs);
