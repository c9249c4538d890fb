-- table_files: the committed Parquet parts of every table, as the variable ocp_files.
--
-- Purpose: read the commit records listed in ocp_batch_files and gather, per
--   table, the part files they list (paths relative to the dataset folder).
--   Each list ends with _schema/<table>.parquet, an empty file holding the
--   table's schema, so a table with no committed part still has its columns.
--   It comes last because DuckDB estimates a scan's size from the first file:
--   first, every table read as empty and joins picked their sides blind.
--   Parts on disk that no record lists (crash leftovers) are never read,
--   nor parts a compaction's record lists under replaces (its own parts
--   hold their rows; store/maintenance.py): with ocp_snapshot before the
--   compaction, its record is not read and the old parts are.
--   The list is a snapshot: run setup again to see batches committed later.
--   Every path is escaped (ocp_literal_path) before read_json, which globs.
-- Parameters:
--   getvariable('ocp_dataset')      VARCHAR, the dataset folder.
--   getvariable('ocp_batch_files')  VARCHAR[], set by batch_files.sql.
-- Output: variable ocp_files MAP(VARCHAR, VARCHAR[]): table name -> part
--   files relative to the dataset folder, keys runs, attempts, signals,
--   rules, artifacts, findings, quarantine, events.
SET VARIABLE ocp_files = (
    WITH lists AS (
        SELECT
            flatten(list(files.runs       ORDER BY seq)) AS listed_runs,
            flatten(list(replaces.runs      )) AS gone_runs,
            flatten(list(files.attempts   ORDER BY seq)) AS listed_attempts,
            flatten(list(replaces.attempts  )) AS gone_attempts,
            flatten(list(files.signals    ORDER BY seq)) AS listed_signals,
            flatten(list(replaces.signals   )) AS gone_signals,
            flatten(list(files.rules      ORDER BY seq)) AS listed_rules,
            flatten(list(replaces.rules     )) AS gone_rules,
            flatten(list(files.artifacts  ORDER BY seq)) AS listed_artifacts,
            flatten(list(replaces.artifacts )) AS gone_artifacts,
            flatten(list(files.findings   ORDER BY seq)) AS listed_findings,
            flatten(list(replaces.findings  )) AS gone_findings,
            flatten(list(files.quarantine ORDER BY seq)) AS listed_quarantine,
            flatten(list(replaces.quarantine)) AS gone_quarantine,
            flatten(list(files.events     ORDER BY seq)) AS listed_events,
            flatten(list(replaces.events    )) AS gone_events
        FROM read_json(
            -- the format marker is always present, so the list is never empty
            list_transform(
                [getvariable('ocp_dataset') || '/ocp-dataset.json'] || getvariable('ocp_batch_files'),
                lambda path: ocp_literal_path(path)
            ),
            columns = {
                seq: 'BIGINT',
                files: 'STRUCT(runs VARCHAR[], attempts VARCHAR[], signals VARCHAR[], rules VARCHAR[], artifacts VARCHAR[], findings VARCHAR[], quarantine VARCHAR[], events VARCHAR[])',
                replaces: 'STRUCT(runs VARCHAR[], attempts VARCHAR[], signals VARCHAR[], rules VARCHAR[], artifacts VARCHAR[], findings VARCHAR[], quarantine VARCHAR[], events VARCHAR[])'
            }
        )
        WHERE files IS NOT NULL
    )
    SELECT MAP {
        'runs':       coalesce(list_filter(listed_runs, lambda f: NOT list_contains(coalesce(gone_runs, []), f)), [])
            || ['_schema/runs.parquet'],
        'attempts':   coalesce(list_filter(listed_attempts, lambda f: NOT list_contains(coalesce(gone_attempts, []), f)), [])
            || ['_schema/attempts.parquet'],
        'signals':    coalesce(list_filter(listed_signals, lambda f: NOT list_contains(coalesce(gone_signals, []), f)), [])
            || ['_schema/signals.parquet'],
        'rules':      coalesce(list_filter(listed_rules, lambda f: NOT list_contains(coalesce(gone_rules, []), f)), [])
            || ['_schema/rules.parquet'],
        'artifacts':  coalesce(list_filter(listed_artifacts, lambda f: NOT list_contains(coalesce(gone_artifacts, []), f)), [])
            || ['_schema/artifacts.parquet'],
        'findings':   coalesce(list_filter(listed_findings, lambda f: NOT list_contains(coalesce(gone_findings, []), f)), [])
            || ['_schema/findings.parquet'],
        'quarantine': coalesce(list_filter(listed_quarantine, lambda f: NOT list_contains(coalesce(gone_quarantine, []), f)), [])
            || ['_schema/quarantine.parquet'],
        'events':     coalesce(list_filter(listed_events, lambda f: NOT list_contains(coalesce(gone_events, []), f)), [])
            || ['_schema/events.parquet']
    }
    FROM lists
);
