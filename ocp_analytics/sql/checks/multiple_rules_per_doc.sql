-- multiple_rules_per_doc: run versions with more than one rules row.
--
-- Purpose: audit (must return zero rows). A document records at most one
--   acceptance rule; a second rules row for the same doc_id would evaluate
--   the run twice under 'recorded'.
-- Parameters: none (reads ocp_all_versions('rules')).
-- Output columns: doc_id BIGINT, run_id VARCHAR, rules_rows BIGINT.
SELECT doc_id, any_value(run_id) AS run_id, count(*) AS rules_rows
FROM ocp_all_versions('rules')
GROUP BY doc_id
HAVING count(*) > 1
ORDER BY doc_id;
