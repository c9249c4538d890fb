-- ocp_wilson(successes, n, side): one bound of the 95 % Wilson score interval.
--
-- Purpose: the interval on accept_rate (docs/figures.md, "The Wilson interval"). The operations and
--   their order are those of ocp_analytics.engine.rates.wilson, so both engines give
--   the same doubles: with p = successes / n,
--     centre = (p + z²/(2n)) / (1 + z²/n)
--     half   = z · sqrt(p(1 − p)/n + z²/(4n²)) / (1 + z²/n)
--   and the bound is centre − half ('low') or centre + half ('high').
-- Parameters: successes BIGINT, n BIGINT (NULL result when n = 0),
--   side 'low' or 'high' (the numbers -1 and 1 are read the same way).
-- Output: DOUBLE.
CREATE OR REPLACE MACRO ocp_wilson(successes, n, side) AS
CASE WHEN n > 0 THEN
    (CAST(successes AS DOUBLE) / CAST(n AS DOUBLE) + ocp_z95() * ocp_z95() / (2 * CAST(n AS DOUBLE)))
        / (1 + ocp_z95() * ocp_z95() / CAST(n AS DOUBLE))
    + CASE CAST(side AS VARCHAR)
        WHEN 'low' THEN -1 WHEN '-1' THEN -1 WHEN 'high' THEN 1 WHEN '1' THEN 1
        ELSE error('ocp_wilson: side is ' || coalesce('''' || CAST(side AS VARCHAR) || '''', 'NULL')
            || '. Hint: use ''low'' or ''high''.')
    END * (
        ocp_z95() * sqrt(
            CAST(successes AS DOUBLE) / CAST(n AS DOUBLE)
                * (1 - CAST(successes AS DOUBLE) / CAST(n AS DOUBLE)) / CAST(n AS DOUBLE)
            + ocp_z95() * ocp_z95() / (4 * CAST(n AS DOUBLE) * CAST(n AS DOUBLE))
        )
        / (1 + ocp_z95() * ocp_z95() / CAST(n AS DOUBLE))
    )
END;
