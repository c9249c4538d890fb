-- duplicate_doc_ids: doc_ids carried by more than one runs row (any version).
--
-- Purpose: audit (must return zero rows). doc_id is the key joining a run
--   version to its attempts, signals, rules, artifacts and findings; a doc_id
--   on two runs rows (the same or different run ids) mixes their rows.
-- Parameters: none (reads ocp_all_versions('runs')).
-- Output columns: doc_id BIGINT, runs_rows BIGINT, run_ids VARCHAR[].
SELECT doc_id, count(*) AS runs_rows, list(run_id ORDER BY run_id) AS run_ids
FROM ocp_all_versions('runs')
GROUP BY doc_id
HAVING count(*) > 1
ORDER BY doc_id;
