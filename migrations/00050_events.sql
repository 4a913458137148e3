-- The per-agent event log (PROTOCOL.md "Without a socket"): every frame an
-- agent is pushed, in order. agent_event_heads serializes the appends of
-- one agent (a row lock), so n is that agent's commit order and a reader
-- paging with after= never skips an event committed late.

-- +goose Up
CREATE TABLE agent_event_heads (
    agent_id text PRIMARY KEY,
    n        bigint NOT NULL
);

CREATE TABLE agent_events (
    agent_id       text NOT NULL,
    n              bigint NOT NULL,
    id             text NOT NULL UNIQUE,
    type           text NOT NULL,
    negotiation_id text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL,
    data           text NOT NULL,
    PRIMARY KEY (agent_id, n)
);

CREATE INDEX agent_events_created_at ON agent_events (created_at);

-- +goose Down
DROP TABLE agent_events;
DROP TABLE agent_event_heads;
