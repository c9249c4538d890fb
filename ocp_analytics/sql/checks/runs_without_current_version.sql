-- runs_without_current_version: run ids the data mentions but the runs view does not show.
--
-- Purpose: audit (must return zero rows). Every run id written in any table
--   (any version) must have exactly one current version in the runs view;
--   one missing means its current runs row is lost or unreadable (a NULL
--   doc_id, a part not listed), and its rows vanish from every view.
-- Parameters: none (reads ocp_all_versions('runs'), ocp_run_rows and the runs view).
-- Output columns: table_name VARCHAR, run_id VARCHAR, rows BIGINT.
WITH mentioned AS (
    SELECT 'runs' AS table_name, run_id FROM ocp_all_versions('runs')
    UNION ALL
    SELECT table_name, run_id FROM ocp_run_rows()
)
SELECT table_name, run_id, count(*) AS rows
FROM mentioned
WHERE NOT EXISTS (SELECT 1 FROM runs WHERE runs.run_id IS NOT DISTINCT FROM mentioned.run_id)
GROUP BY table_name, run_id
ORDER BY table_name, run_id;
