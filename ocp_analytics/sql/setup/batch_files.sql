-- batch_files: the dataset's commit records, as the variable ocp_batch_files.
--
-- Purpose: list DATASET/_batches/*.json (one commit record per ingested
--   batch; dataset.py). Only files listed by these records belong to the
--   dataset. glob() is used rather than a glob inside read_json so that a
--   dataset with no batch yet gives an empty list instead of an error.
-- Parameters:
--   getvariable('ocp_dataset')  VARCHAR, the dataset folder.
-- Output: variable ocp_batch_files VARCHAR[] (file names, commit order).
SET VARIABLE ocp_batch_files = (
    SELECT coalesce(list(file ORDER BY file), [])
    FROM glob(getvariable('ocp_dataset') || '/_batches/*.json')
);
