-- latest_verdicts: the latest verdict of every (run version, name) (SEMANTICS §4–§5).
--
-- Purpose: within one document, for one verdict name (exact, case-sensitive
--   match), order the verdicts by observed_at with an unknown time FIRST,
--   then by position in run.signals; the last one wins, whatever its value.
--   One GROUP BY with arg_max over ocp_signal_order (a hash aggregate with
--   a small fixed-size key; no window over all signals). arg_max skips rows
--   whose returned value is NULL, so it returns one struct, never NULL, and
--   the columns are read from it. The value is reduced to its state before
--   the aggregate, so the state held per group stays small.
-- Parameters: none.
-- Output columns:
--   doc_id BIGINT, name VARCHAR
--   state TINYINT       0 fail, 1 unknown, 2 pass (ocp_verdict_state: any
--                       value other than accept/pass/reject/fail is unknown)
--   tier_rank TINYINT   0 verified … 3 asserted (ocp_tier_rank)
--   at_attempt VARCHAR  the attempt the verdict names (may name none)
--   sig_idx INTEGER     which signal won (its position in run.signals)
CREATE OR REPLACE VIEW latest_verdicts AS
WITH latest AS (
    SELECT
        doc_id,
        name,
        arg_max(
            {
                'state': CAST(
                    CASE ocp_verdict_state(value_text) WHEN 'fail' THEN 0 WHEN 'pass' THEN 2 ELSE 1 END
                    AS TINYINT
                ),
                'tier_rank': CAST(ocp_tier_rank(tier) AS TINYINT),
                'at_attempt': at_attempt,
                'sig_idx': sig_idx
            },
            ocp_signal_order(observed_at, sig_idx)
        ) AS s
    FROM signals
    WHERE kind = 'verdict'
    GROUP BY doc_id, name
)
SELECT doc_id, name, s.state, s.tier_rank, s.at_attempt, s.sig_idx
FROM latest;
