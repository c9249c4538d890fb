-- current_docs: the doc_id of the current version of every run.
--
-- Purpose: a run id ingested again with new content gets a new doc_id; its
--   current version is the one with the largest doc_id among the runs rows
--   of that run_id (dataset.py). Every per-run view keeps only rows of these
--   doc_ids, so older versions never count twice.
-- Parameters: none (reads ocp_all_versions('runs')).
-- Output columns: run_id VARCHAR, doc_id BIGINT (one row per run_id).
CREATE OR REPLACE VIEW current_docs AS
SELECT run_id, max(doc_id) AS doc_id
FROM ocp_all_versions('runs')
GROUP BY run_id;
