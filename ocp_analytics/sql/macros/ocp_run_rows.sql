-- ocp_run_rows(): the (doc_id, run_id) of every row of the per-run tables, all run versions.
--
-- Purpose: what the audit queries in sql/checks/ compare with the runs
--   rows: every attempts, signals, rules, artifacts and findings row
--   belongs to one version of one run (its doc_id) and names that run
--   (run_id). Read from ocp_all_versions, so rows the views hide are here.
-- Parameters: none (reads ocp_all_versions).
-- Output: table_name VARCHAR, doc_id BIGINT, run_id VARCHAR (one row per
--   stored row).
-- Example: SELECT table_name, count(*) FROM ocp_run_rows() GROUP BY ALL;
CREATE OR REPLACE MACRO ocp_run_rows() AS TABLE
SELECT 'attempts' AS table_name, doc_id, run_id FROM ocp_all_versions('attempts')
UNION ALL
SELECT 'signals', doc_id, run_id FROM ocp_all_versions('signals')
UNION ALL
SELECT 'rules', doc_id, run_id FROM ocp_all_versions('rules')
UNION ALL
SELECT 'artifacts', doc_id, run_id FROM ocp_all_versions('artifacts')
UNION ALL
SELECT 'findings', doc_id, run_id FROM ocp_all_versions('findings');
