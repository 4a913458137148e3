-- The arena, presence and house agents (PROTOCOL.md "Practising against the
-- house", "Presence").

-- +goose Up
ALTER TABLE agents ADD COLUMN house boolean NOT NULL DEFAULT false;
-- When a lobby socket of the agent last opened, closed or was confirmed open.
ALTER TABLE agents ADD COLUMN last_seen_at timestamptz;

-- One row per agent and node with a lobby socket open: the node refreshes
-- expires_at while the socket stays open and deletes the row when the last
-- one closes, so a node that dies stops counting once expires_at passes.
CREATE TABLE presence (
    agent_id   text NOT NULL,
    node       text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (agent_id, node)
);

CREATE INDEX negotiations_arena_status ON negotiations (arena, status, ordinal);

-- +goose Down
DROP INDEX negotiations_arena_status;
DROP TABLE presence;
ALTER TABLE agents DROP COLUMN last_seen_at;
ALTER TABLE agents DROP COLUMN house;
