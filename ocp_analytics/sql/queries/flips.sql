-- flips: for every ordered pair of rules, the flips and the paired test of the two bars.
--
-- Purpose: the SQL twin of ocp_analytics.engine.flips.flips_from (the flips
--   of oa.compare without groups): compare teams' bars run by run. A flip is
--   a run accepted under rule_a and not accepted (rejected or unknown) under
--   rule_b. Over the runs decided (accepted or rejected) under both rules,
--   the paired 2x2 table a, b, c, d, the difference of the two accept rates
--   with Newcombe's paired interval (method 10), McNemar's test and Holm's
--   adjustment across the pairs (docs/statistics.md gives the formulas).
--   Rules are 'recorded' and the rows of alternative_rules.
--   DuckDB has no normal or chi-square tail: the exact test sums binom()
--   terms, and the chi-square tail (one degree of freedom) is computed as
--   erfc(sqrt(x / 2)), by its series below 2 and its continued fraction from
--   2 (agrees with scipy.stats.chi2.sf to 1e-13, relative).
-- Parameters:
--   getvariable('ocp_sample')  BIGINT, how many run ids to show per pair
--                              (default 5).
--   those of acceptance (ocp_as_of).
-- Output columns, ordered by rule_a, rule_b:
--   rule_a VARCHAR, rule_b VARCHAR
--   runs_compared BIGINT       runs evaluated under both rules
--   flips BIGINT               accepted under rule_a, not under rule_b
--   a BIGINT                   accepted under both rules
--   b BIGINT                   accepted under rule_a, rejected under rule_b
--   c BIGINT                   rejected under rule_a, accepted under rule_b
--   d BIGINT                   rejected under both rules
--   n BIGINT                   a + b + c + d, the runs decided under both
--   difference DOUBLE          accept rate under rule_a minus under rule_b,
--                              (b - c) / n (NULL when n = 0)
--   difference_low DOUBLE      its 95 % interval (Newcombe, paired)
--   difference_high DOUBLE
--   p_value DOUBLE             McNemar's two-sided p-value (NULL when n = 0)
--   p_method VARCHAR           'exact' (b + c < 25) or 'chi2-cc'
--   p_holm DOUBLE              Holm's adjustment across the pairs; a pair
--                              and its reverse are one test
--   sample_run_ids VARCHAR[]   the first flips' run ids, sorted ([] when none)
WITH judged AS (
    SELECT run_id, rule, outcome
    FROM acceptance
),
counted AS (
    SELECT
        x.rule AS rule_a,
        y.rule AS rule_b,
        count(*) AS runs_compared,
        count(*) FILTER (WHERE x.outcome = 'accepted' AND y.outcome <> 'accepted') AS flips,
        count(*) FILTER (WHERE x.outcome = 'accepted' AND y.outcome = 'accepted') AS a,
        count(*) FILTER (WHERE x.outcome = 'accepted' AND y.outcome = 'rejected') AS b,
        count(*) FILTER (WHERE x.outcome = 'rejected' AND y.outcome = 'accepted') AS c,
        count(*) FILTER (WHERE x.outcome = 'rejected' AND y.outcome = 'rejected') AS d,
        list_slice(
            coalesce(
                list(x.run_id ORDER BY x.run_id)
                    FILTER (WHERE x.outcome = 'accepted' AND y.outcome <> 'accepted'),
                CAST([] AS VARCHAR[])
            ),
            1,
            coalesce(CAST(getvariable('ocp_sample') AS BIGINT), 5)
        ) AS sample_run_ids
    FROM judged AS x
    INNER JOIN judged AS y ON y.run_id = x.run_id AND y.rule <> x.rule
    GROUP BY x.rule, y.rule
),
rated AS (
    -- the two accept rates over the n runs decided under both, their Wilson
    -- bounds (cut to [0, 1], as engine.rates.wilson) and Newcombe's phi
    SELECT
        *,
        CAST(a + b AS DOUBLE) / (a + b + c + d) AS p1,
        CAST(a + c AS DOUBLE) / (a + b + c + d) AS p2,
        greatest(least(ocp_wilson(a + b, a + b + c + d, 'low'), 1.0), 0.0) AS l1,
        greatest(least(ocp_wilson(a + b, a + b + c + d, 'high'), 1.0), 0.0) AS u1,
        greatest(least(ocp_wilson(a + c, a + b + c + d, 'low'), 1.0), 0.0) AS l2,
        greatest(least(ocp_wilson(a + c, a + b + c + d, 'high'), 1.0), 0.0) AS u2,
        CASE
            WHEN CAST(a + b AS DOUBLE) * (c + d) * (a + c) * (b + d) > 0 THEN
                CASE
                    WHEN CAST(a AS DOUBLE) * d - CAST(b AS DOUBLE) * c > 0 THEN greatest(
                        CAST(a AS DOUBLE) * d - CAST(b AS DOUBLE) * c
                        - CAST(a + b + c + d AS DOUBLE) / 2,
                        0.0
                    )
                    ELSE CAST(a AS DOUBLE) * d - CAST(b AS DOUBLE) * c
                END / sqrt(CAST(a + b AS DOUBLE) * (c + d) * (a + c) * (b + d))
            ELSE 0.0
        END AS phi,
        -- McNemar's chi-square statistic with continuity correction, as z = sqrt(x / 2)
        sqrt(pow(greatest(abs(b - c) - 1, 0), 2) / CAST(b + c AS DOUBLE) / 2) AS z
    FROM counted
),
tested AS (
    SELECT
        rule_a,
        rule_b,
        runs_compared,
        flips,
        a,
        b,
        c,
        d,
        a + b + c + d AS n,
        CASE WHEN a + b + c + d > 0 THEN CAST(b - c AS DOUBLE) / (a + b + c + d) END
            AS difference,
        CASE WHEN a + b + c + d > 0 THEN
            CAST(b - c AS DOUBLE) / (a + b + c + d) - sqrt(greatest(
                (p1 - l1) * (p1 - l1) - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) * (u2 - p2),
                0.0
            ))
        END AS difference_low,
        CASE WHEN a + b + c + d > 0 THEN
            CAST(b - c AS DOUBLE) / (a + b + c + d) + sqrt(greatest(
                (u1 - p1) * (u1 - p1) - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) * (p2 - l2),
                0.0
            ))
        END AS difference_high,
        CASE
            WHEN a + b + c + d = 0 THEN NULL
            WHEN b + c = 0 THEN 1.0
            WHEN b + c < 25 THEN least(
                1.0,
                2 * CAST(
                    list_sum(list_transform(
                        range(0, least(b, c) + 1),
                        lambda k: binom(CAST(b + c AS INTEGER), CAST(k AS INTEGER))
                    ))
                    AS DOUBLE
                ) / pow(2, b + c)
            )
            WHEN z < 2 THEN 1 - 2 / sqrt(pi()) * exp(-z * z) * z * list_reduce(
                range(200, 0, -1), lambda s, k: 1 + 2 * z * z / (2 * k + 1) * s, 1.0
            )
            ELSE exp(-z * z) / sqrt(pi()) / list_reduce(
                range(200, 0, -1), lambda s, k: z + k / 2 / s, z
            )
        END AS p_value,
        CASE
            WHEN a + b + c + d = 0 THEN NULL
            WHEN b + c < 25 THEN 'exact'
            ELSE 'chi2-cc'
        END AS p_method,
        sample_run_ids
    FROM rated
),
family AS (
    -- Holm's family: each tested pair once (rule_a < rule_b), sorted by p-value
    SELECT
        rule_a,
        rule_b,
        p_value,
        count(*) OVER () - row_number() OVER (ORDER BY p_value, rule_a, rule_b) + 1 AS factor
    FROM tested
    WHERE rule_a < rule_b AND p_value IS NOT NULL
),
adjusted AS (
    SELECT
        rule_a,
        rule_b,
        least(
            1.0,
            max(factor * p_value) OVER (
                ORDER BY p_value, rule_a, rule_b ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
            )
        ) AS p_holm
    FROM family
)
SELECT
    tested.rule_a,
    tested.rule_b,
    tested.runs_compared,
    tested.flips,
    tested.a,
    tested.b,
    tested.c,
    tested.d,
    tested.n,
    tested.difference,
    tested.difference_low,
    tested.difference_high,
    tested.p_value,
    tested.p_method,
    adjusted.p_holm,
    tested.sample_run_ids
FROM tested
LEFT JOIN adjusted
    ON adjusted.rule_a = least(tested.rule_a, tested.rule_b)
    AND adjusted.rule_b = greatest(tested.rule_a, tested.rule_b)
ORDER BY tested.rule_a, tested.rule_b;
