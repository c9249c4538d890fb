-- batch_files: the dataset's commit records, as the variable ocp_batch_files.
--
-- Purpose: list DATASET/_batches/*.json (one commit record per ingested
--   batch; dataset.py). Only files listed by these records belong to the
--   dataset. glob() is used rather than a glob inside read_json so that a
--   dataset with no batch yet gives an empty list instead of an error. The
--   folder part of the pattern is escaped (ocp_literal_path), so a dataset
--   path holding '[', '*' or '?' is read literally. With ocp_snapshot set,
--   only the records of commits up to that seq (a record is named by its
--   seq: NNNNNNNN.json) are listed: the dataset as that commit left it, late
--   events included (docs/dataset.md, "Snapshots"); a record named otherwise
--   is kept, as store/commits.py keeps it.
-- Parameters:
--   getvariable('ocp_dataset')   VARCHAR, the dataset folder.
--   getvariable('ocp_snapshot')  BIGINT or unset (NULL): the last commit read.
-- Output: variable ocp_batch_files VARCHAR[] (literal file names, commit order).
SET VARIABLE ocp_batch_files = (
    SELECT coalesce(list(file ORDER BY file), [])
    FROM glob(ocp_literal_path(getvariable('ocp_dataset')) || '/_batches/*.json')
    WHERE getvariable('ocp_snapshot') IS NULL
       OR coalesce(
            TRY_CAST(regexp_extract(file, '/([0-9]+)\.json$', 1) AS BIGINT)
                <= getvariable('ocp_snapshot'),
            true
          )
);
