-- latest_signals: the latest verdict and the latest numeric score of every (run version, name) known at as_of (docs/figures.md "Per run: the acceptance table").
--
-- Purpose: as_of is the instant of knowledge, so a signal whose observed_at
--   is a known time after ocp_as_of() is set aside first (not yet observed;
--   one predicate on the signals read; a signal with no time is always
--   known). Then, within one document, for one kind ('verdict' or 'score')
--   and one name (exact, case-sensitive match), order the signals by
--   observed_at with an unknown time FIRST, then by position in run.signals;
--   the last one wins. Every verdict counts, whatever its value; only scores
--   whose value is a JSON number count (value_num IS NOT NULL), so a later
--   null, boolean or string score does not hide an earlier measured one.
--   One GROUP BY with arg_max over ocp_signal_order: a hash aggregate with a
--   small fixed-size state (no window over all signals). Each signal is
--   reduced before it: its verdict value to a state, its tier to a rank, its
--   at_attempt to the attempt's position (attempt_positions), so no string
--   is held per group. arg_max skips rows whose returned value is NULL, so
--   it returns a struct, never NULL, and the columns are read from it.
-- Parameters: getvariable('ocp_as_of') through ocp_as_of() (now when unset).
-- Output columns:
--   doc_id BIGINT, kind VARCHAR ('verdict' | 'score'), name VARCHAR
--   state TINYINT        verdicts: 0 fail, 1 unknown, 2 pass (ocp_verdict_state:
--                        a value other than accept/pass/reject/fail is unknown)
--   value DOUBLE         scores: the score
--   tier_rank TINYINT    0 verified … 3 asserted (ocp_tier_rank)
--   attempt_pos BIGINT   attempt_positions.pos of the attempt the signal
--                        names; NULL when it names no attempt of the run
--   sig_idx INTEGER      which signal won (its position in run.signals)
CREATE OR REPLACE VIEW latest_signals AS
WITH placed AS (
    SELECT
        s.doc_id,
        s.kind,
        s.name,
        CAST(
            CASE ocp_verdict_state(s.value_text) WHEN 'fail' THEN 0 WHEN 'pass' THEN 2 ELSE 1 END
            AS TINYINT
        ) AS state,
        s.value_num AS value,
        CAST(ocp_tier_rank(s.tier) AS TINYINT) AS tier_rank,
        ap.pos AS attempt_pos,
        s.sig_idx,
        s.observed_at
    FROM signals AS s
    LEFT JOIN attempt_positions AS ap ON ap.doc_id = s.doc_id AND ap.attempt_id = s.at_attempt
    WHERE
        (s.kind = 'verdict' OR (s.kind = 'score' AND s.value_num IS NOT NULL))
        AND (s.observed_at IS NULL OR s.observed_at <= ocp_as_of())
),
latest AS (
    SELECT
        doc_id,
        kind,
        name,
        arg_max(
            {
                'state': state,
                'value': value,
                'tier_rank': tier_rank,
                'attempt_pos': attempt_pos,
                'sig_idx': sig_idx
            },
            ocp_signal_order(observed_at, sig_idx)
        ) AS s
    FROM placed
    GROUP BY doc_id, kind, name
)
SELECT
    doc_id,
    kind,
    name,
    CASE WHEN kind = 'verdict' THEN s.state END AS state,
    CASE WHEN kind = 'score' THEN s.value END AS value,
    s.tier_rank,
    s.attempt_pos,
    s.sig_idx
FROM latest;
