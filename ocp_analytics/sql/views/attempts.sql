-- attempts: the attempts rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('attempts')).
-- Output columns: those of ocp_analytics.schemas.ATTEMPTS (run_id VARCHAR,
--   doc_id BIGINT, att_idx INTEGER (position in the document's attempts),
--   attempt_id, node VARCHAR, n, round BIGINT, status VARCHAR, started_at
--   TIMESTAMPTZ, …, ended_at TIMESTAMPTZ, …, cost_usd DOUBLE, input_tokens,
--   cached_input_tokens, cache_creation_tokens, output_tokens,
--   reasoning_tokens BIGINT).
CREATE OR REPLACE VIEW attempts AS
SELECT *
FROM ocp_current_versions('attempts');
