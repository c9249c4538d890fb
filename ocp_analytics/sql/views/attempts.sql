-- attempts: the attempts rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs);
--   rows of older versions and rows of no run at all are left out (the
--   audit queries in sql/checks/ look for the latter).
-- Parameters: none (reads ocp_all_versions('attempts')).
-- Output columns: those of ocp_analytics.schemas.ATTEMPTS: run_id, doc_id,
--   att_idx (position in the document's attempts), attempt_id, node, n, round,
--   status, started_at, ended_at TIMESTAMPTZ, …, cost_usd, tokens.
CREATE OR REPLACE VIEW attempts AS
SELECT *
FROM ocp_all_versions('attempts')
WHERE doc_id IN (SELECT doc_id FROM current_docs);
