-- rates_by_label: acceptance rates per value of one run label and rule (docs/figures.md "Per group: rates").
--
-- Purpose: the SQL twin of ocp_analytics.rates(dataset, rules,
--   by='label.KEY', min_tier=...): runs are grouped by the value of the
--   label KEY (runs.labels), NULL when a run has no such label.
-- Parameters:
--   getvariable('ocp_label')     VARCHAR, the label key (required), e.g. 'team'.
--   getvariable('ocp_min_tier')  VARCHAR, optional, as in rates_by.sql.
--   those of acceptance (ocp_as_of, alternative_rules).
-- Output columns, ordered by label_value then rule (NULLs last):
--   label_key VARCHAR     the key (polars names its column label.KEY)
--   label_value VARCHAR   the run's value of that label
--   those of the rates view (rule, runs, accepted, …, as_of)
WITH checked AS (
    -- stops the query with a clear message when a parameter is wrong
    SELECT
        CASE
            WHEN label_key IS NULL THEN error(
                'ocp_label is not set. Hint: SET VARIABLE ocp_label = ''team'';'
            )
            -- a word that is no tier reads as another tier's word
            WHEN ocp_tier_word(ocp_tier_rank(min_tier)) <> min_tier THEN error(
                'ocp_min_tier is ''' || min_tier || '''. '
                || 'Hint: use verified, reported, heuristic or asserted.'
            )
            ELSE true
        END AS ok,
        label_key,
        min_tier
    FROM (
        SELECT
            CAST(getvariable('ocp_label') AS VARCHAR) AS label_key,
            CAST(getvariable('ocp_min_tier') AS VARCHAR) AS min_tier
    )
),
judged AS (
    SELECT
        checked.label_key,
        map_extract_value(runs.labels, checked.label_key) AS label_value,
        acceptance.rule,
        CASE
            WHEN checked.min_tier IS NULL
                OR ocp_tier_rank(acceptance.tier) <= ocp_tier_rank(checked.min_tier)
                THEN acceptance.outcome
            ELSE 'unknown'
        END AS outcome,
        acceptance.attempts_to_acceptance,
        acceptance.accepted_attempt_n,
        acceptance.tier,
        acceptance.window_open,
        acceptance.as_of
    FROM acceptance
    INNER JOIN runs ON runs.run_id = acceptance.run_id
    CROSS JOIN checked
    WHERE checked.ok
),
grouped AS (
    SELECT
        label_key,
        label_value,
        rule,
        ocp_rate_counts(
            outcome, attempts_to_acceptance, accepted_attempt_n, tier, window_open, as_of
        ) AS counts
    FROM judged
    GROUP BY label_key, label_value, rule
)
SELECT label_key, label_value, rule, unnest(ocp_rate_figures(counts))
FROM grouped
ORDER BY label_value NULLS LAST, rule NULLS LAST;
