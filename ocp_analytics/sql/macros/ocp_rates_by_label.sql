-- ocp_rates_by_label(wanted_key, wanted_tier): acceptance rates per value of one run label and rule.
--
-- Purpose: the work of queries/rates_by_label.sql, which names the group
--   column label.KEY as polars does; call this macro directly for the
--   value column under a fixed name (label_value).
-- Parameters:
--   wanted_key   VARCHAR, the label key (required), e.g. 'team'.
--   wanted_tier  VARCHAR or NULL: count outcomes below this tier as unknown.
-- Output: label_value VARCHAR (the run's value of that label, NULL when it
--   has none), then the columns of the rates view, ordered by label_value
--   then rule (NULLs last).
-- Example: SELECT * FROM ocp_rates_by_label('team', NULL);
CREATE OR REPLACE MACRO ocp_rates_by_label(wanted_key, wanted_tier) AS TABLE
WITH checked AS (
    -- stops the query with a clear message when a parameter is wrong
    SELECT
        CASE
            WHEN label_key IS NULL THEN error(
                'the label key is NULL. Hint: SET VARIABLE ocp_label = ''team'';'
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
            CAST(wanted_key AS VARCHAR) AS label_key,
            CAST(wanted_tier AS VARCHAR) AS min_tier
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
SELECT label_value, rule, unnest(ocp_rate_figures(counts))
FROM grouped
ORDER BY label_value NULLS LAST, rule NULLS LAST;
