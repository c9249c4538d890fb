-- doc_run_mismatch: rows whose run_id differs from their doc_id's runs row.
--
-- Purpose: audit (must return zero rows). A row's (run_id, doc_id) must
--   agree with the runs row of that doc_id; a mismatch files a run's
--   attempts or signals under another run.
-- Parameters: none (reads ocp_run_rows and ocp_all_versions('runs')).
-- Output columns: table_name VARCHAR, doc_id BIGINT, run_id VARCHAR (of the
--   row), runs_run_id VARCHAR (of the runs row), rows BIGINT.
SELECT rows.table_name, rows.doc_id, rows.run_id, r.run_id AS runs_run_id, count(*) AS rows
FROM ocp_run_rows() AS rows
INNER JOIN ocp_all_versions('runs') AS r ON r.doc_id = rows.doc_id
WHERE r.run_id IS DISTINCT FROM rows.run_id
GROUP BY rows.table_name, rows.doc_id, rows.run_id, r.run_id
ORDER BY rows.table_name, rows.doc_id;
