-- superseding: how many committed runs replaced an earlier version, as the variable ocp_superseding.
--
-- Purpose: sum the superseding count of every commit record (dataset.py
--   writes it: runs of the batch whose run_id was already stored with other
--   content). While it is 0 no run_id has two versions, so every stored row
--   is of a current version and the views can skip the current_docs filter
--   (ocp_current_versions), as the polars engine does. A record without the
--   count (written by another tool) counts as superseding, so the filter
--   stays on.
-- Parameters:
--   getvariable('ocp_batch_files')  VARCHAR[], set by batch_files.sql.
-- Output: variable ocp_superseding BIGINT (0 when nothing was superseded).
SET VARIABLE ocp_superseding = (
    SELECT coalesce(sum(coalesce(superseding, 1)), 0)
    FROM read_json(
        -- the format marker is always present, so the list is never empty
        list_transform(
            [getvariable('ocp_dataset') || '/ocp-dataset.json'] || getvariable('ocp_batch_files'),
            lambda path: ocp_literal_path(path)
        ),
        columns = {seq: 'BIGINT', superseding: 'BIGINT'}
    )
    WHERE seq IS NOT NULL
);
