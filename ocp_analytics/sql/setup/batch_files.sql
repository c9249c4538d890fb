-- batch_files: the dataset's commit records, as the variable ocp_batch_files.
--
-- Purpose: list DATASET/_batches/*.json (one commit record per ingested
--   batch; dataset.py). Only files listed by these records belong to the
--   dataset. glob() is used rather than a glob inside read_json so that a
--   dataset with no batch yet gives an empty list instead of an error. The
--   folder part of the pattern is escaped (ocp_literal_path), so a dataset
--   path holding '[', '*' or '?' is read literally.
-- Parameters:
--   getvariable('ocp_dataset')  VARCHAR, the dataset folder.
-- Output: variable ocp_batch_files VARCHAR[] (literal file names, commit order).
SET VARIABLE ocp_batch_files = (
    SELECT coalesce(list(file ORDER BY file), [])
    FROM glob(ocp_literal_path(getvariable('ocp_dataset')) || '/_batches/*.json')
);
