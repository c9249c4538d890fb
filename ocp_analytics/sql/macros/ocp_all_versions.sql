-- ocp_all_versions(table_name): every committed row of a table, all run versions.
--
-- Purpose: read the committed Parquet parts of one table (ocp_files) plus
--   its empty schema file, each path escaped (ocp_literal_path) so that
--   read_parquet reads it literally. Older versions of re-ingested runs are still
--   here; the views runs, attempts, … keep current versions only. The audit
--   queries in sql/checks/ read this to find what the views hide.
-- Parameters:
--   table_name                  VARCHAR, one of runs, attempts, signals,
--                               rules, artifacts, findings, quarantine.
--   getvariable('ocp_dataset')  VARCHAR, the dataset folder.
--   getvariable('ocp_files')    MAP(VARCHAR, VARCHAR[]), set by table_files.sql.
-- Output columns: those of the table's schema (ocp_analytics/schemas.py).
-- Example: SELECT count(*) FROM ocp_all_versions('runs');
CREATE OR REPLACE MACRO ocp_all_versions(table_name) AS TABLE
SELECT *
FROM read_parquet(
    CASE
        WHEN getvariable('ocp_files') IS NULL THEN error(
            'the ocp-analytics views are not set up in this session. Hint: run '
            || 'SET VARIABLE ocp_dataset = ''/path/to/dataset''; then .read sql/setup.sql '
            || '(DuckDB variables last one session, even in a database file).'
        )
        WHEN getvariable('ocp_files')[table_name] IS NULL THEN error(
            'ocp_all_versions: no table ' || table_name || '. Hint: use runs, attempts, '
            || 'signals, rules, artifacts, findings or quarantine.'
        )
        ELSE list_transform(
            getvariable('ocp_files')[table_name],
            lambda part: ocp_literal_path(getvariable('ocp_dataset') || '/' || part)
        )
    END
);
