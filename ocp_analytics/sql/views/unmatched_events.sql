-- unmatched_events: stored late events that concern no current run.
--
-- Purpose: an event whose commit is named by no current run's 'commit' or
--   'merge' artifact (path, else id) counts for no run yet; a run naming the
--   commit may still arrive, and is matched when it does (matched_events).
--   The same list as ocp_analytics.unmatched_events.
-- Parameters: none (reads events, artifacts).
-- Output columns: those of the events view.
CREATE OR REPLACE VIEW unmatched_events AS
SELECT *
FROM events
WHERE commit NOT IN (
    SELECT coalesce(path, artifact_id)
    FROM artifacts
    WHERE kind IN ('commit', 'merge') AND coalesce(path, artifact_id) IS NOT NULL
);
