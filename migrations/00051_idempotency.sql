-- Idempotency-Key answers (PROTOCOL.md "Without a socket"): per agent and
-- key, the request's fingerprint and, once answered, its status and body;
-- kept 24 hours (a row older than that is taken afresh).

-- +goose Up
CREATE TABLE idempotency_keys (
    agent_id     text NOT NULL,
    key          text NOT NULL,
    fingerprint  text NOT NULL,
    created_at   timestamptz NOT NULL,
    done         boolean NOT NULL DEFAULT false,
    status       integer NOT NULL DEFAULT 0,
    content_type text NOT NULL DEFAULT '',
    body         bytea NOT NULL DEFAULT '',
    PRIMARY KEY (agent_id, key)
);

CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
