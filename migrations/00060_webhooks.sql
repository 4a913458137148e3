-- Webhooks (PROTOCOL.md "Webhooks"): one per agent, the deliveries queued
-- for it from the event log (agent_events; cursor_n is the last event fed)
-- and their attempts. A delivery is claimed by moving next_at past now
-- (SKIP LOCKED): one node attempts it at a time, and a node that dies
-- mid-attempt leaves it due again once the lease is over.

-- +goose Up
CREATE TABLE agent_webhooks (
    agent_id    text PRIMARY KEY,
    url         text NOT NULL,
    events      text[] NOT NULL DEFAULT '{}',
    secret      bytea NOT NULL,
    created_at  timestamptz NOT NULL,
    disabled_at timestamptz,
    cursor_n    bigint NOT NULL DEFAULT 0
);

CREATE TABLE webhook_deliveries (
    agent_id         text NOT NULL,
    event_id         text NOT NULL,
    type             text NOT NULL,
    negotiation_id   text NOT NULL DEFAULT '',
    event_created_at timestamptz NOT NULL,
    data             text NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    next_at          timestamptz NOT NULL,
    ended_at         timestamptz,
    PRIMARY KEY (agent_id, event_id)
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE ended_at IS NULL;
CREATE INDEX webhook_deliveries_ended ON webhook_deliveries (ended_at) WHERE ended_at IS NOT NULL;

CREATE TABLE webhook_attempts (
    id         bigserial PRIMARY KEY,
    agent_id   text NOT NULL,
    event_id   text NOT NULL,
    event_type text NOT NULL,
    n          integer NOT NULL,
    at         timestamptz NOT NULL,
    url        text NOT NULL,
    status     integer NOT NULL,
    error      text NOT NULL,
    result     text NOT NULL,
    next_at    timestamptz
);

CREATE INDEX webhook_attempts_agent ON webhook_attempts (agent_id, id);
CREATE INDEX webhook_attempts_at ON webhook_attempts (at);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE agent_webhooks;
