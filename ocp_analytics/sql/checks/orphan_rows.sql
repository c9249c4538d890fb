-- orphan_rows: rows of per-run tables whose doc_id has no runs row at all.
--
-- Purpose: audit (must return zero rows). Every attempts, signals, rules,
--   artifacts and findings row belongs to one version of one run, written in
--   the same batch; a doc_id no runs row has (in any version) means a part
--   file was lost or a foreign one was listed. The views hide such rows.
-- Parameters: none (reads ocp_run_rows and ocp_all_versions('runs')).
-- Output columns: table_name VARCHAR, doc_id BIGINT, run_id VARCHAR
--   (as the orphan rows say), orphan_rows BIGINT.
WITH docs AS (
    SELECT DISTINCT doc_id FROM ocp_all_versions('runs')
)
SELECT table_name, doc_id, any_value(run_id) AS run_id, count(*) AS orphan_rows
FROM ocp_run_rows() AS rows
WHERE NOT EXISTS (SELECT 1 FROM docs WHERE docs.doc_id = rows.doc_id)
GROUP BY table_name, doc_id
ORDER BY table_name, doc_id;
