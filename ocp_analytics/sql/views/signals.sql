-- signals: the signals rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs);
--   rows of older versions and rows of no run at all are left out (the
--   audit queries in sql/checks/ look for the latter).
-- Parameters: none (reads ocp_all_versions('signals')).
-- Output columns: those of ocp_analytics.schemas.SIGNALS: run_id, doc_id,
--   sig_idx (position in run.signals), signal_id, kind, name, value_text,
--   value_num DOUBLE (JSON numbers only), value_json, …, at_attempt,
--   observed_at TIMESTAMPTZ, tier.
CREATE OR REPLACE VIEW signals AS
SELECT *
FROM ocp_all_versions('signals')
WHERE doc_id IN (SELECT doc_id FROM current_docs);
