-- duplicate_current_runs: run ids with more than one row in the runs view.
--
-- Purpose: audit (must return zero rows). The current version of a run is
--   its row with the largest doc_id; two rows sharing that doc_id (a part
--   listed twice, or two batches writing the same doc_id) would count the
--   run twice in every figure.
-- Parameters: none (reads the runs view).
-- Output columns: run_id VARCHAR, current_rows BIGINT, doc_ids BIGINT[].
SELECT run_id, count(*) AS current_rows, list(doc_id ORDER BY doc_id) AS doc_ids
FROM runs
GROUP BY run_id
HAVING count(*) > 1
ORDER BY run_id;
