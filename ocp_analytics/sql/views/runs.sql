-- runs: the current version of every run, one row per run_id.
--
-- Purpose: the runs rows whose doc_id is the current doc_id of their run
--   (current_docs, through ocp_current_versions). The audit
--   sql/checks/duplicate_current_runs.sql makes sure no run_id has two
--   such rows.
-- Parameters: none (reads ocp_current_versions('runs')).
-- Output columns: those of ocp_analytics.schemas.RUNS (run_id VARCHAR,
--   doc_id BIGINT, ocp_version, …, started_at TIMESTAMPTZ, …, ended_at
--   TIMESTAMPTZ, …, labels MAP(VARCHAR, VARCHAR), task_id, task_type, …,
--   repo, org, …, rule_name, …, batch_id).
CREATE OR REPLACE VIEW runs AS
SELECT *
FROM ocp_current_versions('runs');
