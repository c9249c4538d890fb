-- ocp_signal_order(observed_at, sig_idx): the order in which signals become "the latest" (docs/figures.md "Which signal counts").
--
-- Purpose: one sort key, so that arg_max(x, ocp_signal_order(...)) picks
--   the latest signal of a group: an unknown time sorts before every known
--   one, then the instant (equal instants written with different offsets
--   are ties), then the position in run.signals. A single HUGEINT
--   (epoch µs × 2^32 + sig_idx; unknown time reads as -(2^63 - 1), below every real instant)
--   keeps the aggregate state fixed-size and small, which a ROW key does not.
-- Parameters: observed_at TIMESTAMPTZ (NULL = unknown time),
--   sig_idx INTEGER (>= 0, the position in run.signals).
-- Output: HUGEINT, larger is later.
CREATE OR REPLACE MACRO ocp_signal_order(observed_at, sig_idx) AS
CAST(coalesce(epoch_us(observed_at), -9223372036854775807) AS HUGEINT) * 4294967296
+ sig_idx;
