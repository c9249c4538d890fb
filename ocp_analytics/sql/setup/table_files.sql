-- table_files: the committed Parquet parts of every table, as the variable ocp_files.
--
-- Purpose: read the commit records listed in ocp_batch_files and gather, per
--   table, the part files they list (paths relative to the dataset folder).
--   Each list ends with _schema/<table>.parquet, an empty file holding the
--   table's schema, so a table with no committed part still has its columns.
--   It comes last because DuckDB estimates a scan's size from the first file:
--   first, every table read as empty and joins picked their sides blind.
--   Parts on disk that no record lists (crash leftovers) are never read.
--   The list is a snapshot: run setup again to see batches committed later.
--   Every path is escaped (ocp_literal_path) before read_json, which globs.
-- Parameters:
--   getvariable('ocp_dataset')      VARCHAR, the dataset folder.
--   getvariable('ocp_batch_files')  VARCHAR[], set by batch_files.sql.
-- Output: variable ocp_files MAP(VARCHAR, VARCHAR[]): table name -> part
--   files relative to the dataset folder, keys runs, attempts, signals,
--   rules, artifacts, findings, quarantine, events.
SET VARIABLE ocp_files = (
    SELECT MAP {
        'runs':       coalesce(flatten(list(files.runs       ORDER BY seq)), []) || ['_schema/runs.parquet'],
        'attempts':   coalesce(flatten(list(files.attempts   ORDER BY seq)), []) || ['_schema/attempts.parquet'],
        'signals':    coalesce(flatten(list(files.signals    ORDER BY seq)), []) || ['_schema/signals.parquet'],
        'rules':      coalesce(flatten(list(files.rules      ORDER BY seq)), []) || ['_schema/rules.parquet'],
        'artifacts':  coalesce(flatten(list(files.artifacts  ORDER BY seq)), []) || ['_schema/artifacts.parquet'],
        'findings':   coalesce(flatten(list(files.findings   ORDER BY seq)), []) || ['_schema/findings.parquet'],
        'quarantine': coalesce(flatten(list(files.quarantine ORDER BY seq)), []) || ['_schema/quarantine.parquet'],
        'events':     coalesce(flatten(list(files.events     ORDER BY seq)), []) || ['_schema/events.parquet']
    }
    FROM read_json(
        -- the format marker is always present, so the list is never empty
        list_transform(
            [getvariable('ocp_dataset') || '/ocp-dataset.json'] || getvariable('ocp_batch_files'),
            lambda path: ocp_literal_path(path)
        ),
        columns = {
            seq: 'BIGINT',
            files: 'STRUCT(runs VARCHAR[], attempts VARCHAR[], signals VARCHAR[], rules VARCHAR[], artifacts VARCHAR[], findings VARCHAR[], quarantine VARCHAR[], events VARCHAR[])'
        }
    )
    WHERE files IS NOT NULL
);
