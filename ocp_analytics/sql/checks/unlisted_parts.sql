-- unlisted_parts: Parquet files in the table folders that no commit record lists.
--
-- Purpose: audit (must return zero rows). A part no record lists is left by
--   an ingest that crashed before its commit; readers ignore it and the next
--   ingest deletes it (dataset.remove_orphans). Rows here after a clean
--   ingest mean files were copied in by hand.
-- Parameters: getvariable('ocp_dataset'), getvariable('ocp_files') (setup).
-- Output columns: file VARCHAR (path as globbed; the dataset part is read literally).
WITH listed AS (
    SELECT getvariable('ocp_dataset') || '/' || unnest(flatten(map_values(getvariable('ocp_files')))) AS file
)
SELECT on_disk.file
FROM glob(ocp_literal_path(getvariable('ocp_dataset')) || '/*/*.parquet') AS on_disk
WHERE NOT starts_with(on_disk.file, getvariable('ocp_dataset') || '/_schema/')
    AND on_disk.file NOT IN (SELECT file FROM listed)
ORDER BY on_disk.file;
