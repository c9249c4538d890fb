-- check_dataset: stop early, with a hint, when ocp_dataset is not set.
--
-- Purpose: every later statement reads the dataset folder from the variable
--   ocp_dataset; without it DuckDB's own errors ("glob cannot take NULL")
--   would not say what to do.
-- Parameters:
--   getvariable('ocp_dataset')  VARCHAR, the dataset folder (required).
-- Output: none (the variable is set again to its own value).
SET VARIABLE ocp_dataset = CASE
    WHEN getvariable('ocp_dataset') IS NULL THEN error(
        'ocp_dataset is not set. Hint: run SET VARIABLE ocp_dataset = ''/path/to/dataset''; '
        || 'before .read sql/setup.sql'
    )
    ELSE CAST(getvariable('ocp_dataset') AS VARCHAR)
END;
