-- artifacts: the artifacts rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('artifacts')).
-- Output columns: those of ocp_analytics.schemas.ARTIFACTS (run_id VARCHAR,
--   doc_id BIGINT, art_idx INTEGER, artifact_id, path, kind, producer VARCHAR,
--   first_write_at TIMESTAMPTZ, first_write_at_raw VARCHAR).
CREATE OR REPLACE VIEW artifacts AS
SELECT *
FROM ocp_current_versions('artifacts');
