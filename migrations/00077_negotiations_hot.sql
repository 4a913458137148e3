-- A step rewrites its negotiation's row (state, last_seq, next_wake_at,
-- updated_at). next_wake_at moves on almost every step (the turn clock), and
-- an index on it made every such UPDATE a non-HOT one: a new entry in each of
-- the table's nine indexes per step. Without it, and with room left on each
-- page (fillfactor), a step's UPDATE is a heap-only tuple that writes no
-- index (ARCHITECTURE.md "One frame's way", on Postgres). The clock sweep and a
-- restart's re-arming (Store.Overdue, Store.Wakes) read the running
-- negotiations through negotiations_running instead: its column and
-- predicate (id, status) do not change on a step; they sort the wakes of the
-- running negotiations themselves.

-- +goose Up
DROP INDEX negotiations_next_wake;
CREATE INDEX negotiations_running ON negotiations (id) WHERE status IN ('pending', 'live');
ALTER TABLE negotiations SET (fillfactor = 70);

-- +goose Down
ALTER TABLE negotiations RESET (fillfactor);
DROP INDEX negotiations_running;
CREATE INDEX negotiations_next_wake ON negotiations (next_wake_at) WHERE next_wake_at IS NOT NULL;
