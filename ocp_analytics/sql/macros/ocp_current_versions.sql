-- ocp_current_versions(table_name): the rows of a table that belong to the current version of their run.
--
-- Purpose: the rows whose doc_id is a current doc_id (current_docs). When
--   no commit record superseded a run (ocp_superseding = 0) every stored
--   row is current and the filter is skipped: the two branches test a
--   variable, a constant for the planner, which drops the branch that
--   cannot return rows, so the runs are not grouped by run_id for every
--   table a query reads. Rows of no run at all (a damaged dataset) are then
--   kept, as the polars engine keeps them; sql/checks/orphan_rows.sql finds
--   them.
-- Parameters:
--   table_name                     VARCHAR, as for ocp_all_versions.
--   getvariable('ocp_superseding') BIGINT, set by setup/superseding.sql.
-- Output columns: those of the table's schema (ocp_analytics/schemas.py).
-- Example: SELECT count(*) FROM ocp_current_versions('signals');
CREATE OR REPLACE MACRO ocp_current_versions(table_name) AS TABLE
SELECT *
FROM ocp_all_versions(table_name)
WHERE getvariable('ocp_superseding') = 0
UNION ALL
SELECT *
FROM ocp_all_versions(table_name)
WHERE getvariable('ocp_superseding') <> 0 AND doc_id IN (SELECT doc_id FROM current_docs);
