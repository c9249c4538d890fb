-- attempts: the attempts rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('attempts')).
-- Output columns: those of ocp_analytics.schemas.ATTEMPTS: run_id, doc_id,
--   att_idx (position in the document's attempts), attempt_id, node, n, round,
--   status, started_at, ended_at TIMESTAMPTZ, …, cost_usd, tokens.
CREATE OR REPLACE VIEW attempts AS
SELECT *
FROM ocp_current_versions('attempts');
