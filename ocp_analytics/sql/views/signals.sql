-- signals: the signals rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('signals')).
-- Output columns: those of ocp_analytics.schemas.SIGNALS (run_id VARCHAR,
--   doc_id BIGINT, sig_idx INTEGER (position in run.signals), signal_id,
--   kind, name, value_text VARCHAR, value_num DOUBLE (JSON numbers only),
--   value_json VARCHAR, …, at_attempt VARCHAR, …, observed_at TIMESTAMPTZ,
--   …, tier VARCHAR).
CREATE OR REPLACE VIEW signals AS
SELECT *
FROM ocp_current_versions('signals');
