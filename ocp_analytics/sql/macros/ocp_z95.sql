-- ocp_z95(): the z of a two-sided 95 % interval, as in ocp_analytics.engine.rates.Z95.
--
-- Purpose: one place for the constant, parsed from text so the double is
--   exactly Python's float('1.959963984540054').
-- Parameters: none.
-- Output: DOUBLE 1.959963984540054.
CREATE OR REPLACE MACRO ocp_z95() AS CAST('1.959963984540054' AS DOUBLE);
