-- latest_scores: the latest numeric score of every (run version, name) (SEMANTICS §4).
--
-- Purpose: only scores whose value is a JSON number count (value_num IS NOT
--   NULL): a later null, boolean or string score does not hide an earlier
--   measured one. Among those, order by observed_at with an unknown time
--   FIRST, then by position in run.signals; the last one wins. One GROUP BY
--   with arg_max over ocp_signal_order, as in latest_verdicts (the returned
--   struct is never NULL, so no row is skipped).
-- Parameters: none.
-- Output columns:
--   doc_id BIGINT, name VARCHAR
--   value DOUBLE        the score
--   tier_rank TINYINT   0 verified … 3 asserted (ocp_tier_rank)
--   at_attempt VARCHAR  the attempt the score names (may name none)
--   sig_idx INTEGER     which signal won (its position in run.signals)
CREATE OR REPLACE VIEW latest_scores AS
WITH latest AS (
    SELECT
        doc_id,
        name,
        arg_max(
            {
                'value': value_num,
                'tier_rank': CAST(ocp_tier_rank(tier) AS TINYINT),
                'at_attempt': at_attempt,
                'sig_idx': sig_idx
            },
            ocp_signal_order(observed_at, sig_idx)
        ) AS s
    FROM signals
    WHERE kind = 'score' AND value_num IS NOT NULL
    GROUP BY doc_id, name
)
SELECT doc_id, name, s.value, s.tier_rank, s.at_attempt, s.sig_idx
FROM latest;
