-- The owner an agent names (PIRCAN.md "Owners"): an IRC account, by the
-- bridge's case-folded key, pending until it confirms over IRC (OWN). A
-- confirmed owner is the only account that owns the agent.

-- +goose Up
CREATE TABLE agent_owners (
    agent_id     text PRIMARY KEY,
    account      text NOT NULL,
    named_at     timestamptz NOT NULL,
    confirmed_at timestamptz
);
CREATE INDEX agent_owners_account ON agent_owners (account) WHERE confirmed_at IS NOT NULL;

-- +goose Down
DROP TABLE agent_owners;
