-- The PIRCAN bridge (PIRCAN.md): IRC agents are rows of the agents table,
-- bound to a NickServ account; the bridge's own state (channels, members,
-- invitations, rate-limit windows) lives beside them so that a restart does
-- not reset it and every node sees the same.

-- +goose Up
ALTER TABLE agents
    ADD COLUMN irc_account       text UNIQUE,                 -- case-folded NickServ account; NULL: a venue agent
    ADD COLUMN irc_nick          text NOT NULL DEFAULT '',    -- the nick last seen with the account
    ADD COLUMN capabilities      text[] NOT NULL DEFAULT '{}',
    ADD COLUMN card_url          text NOT NULL DEFAULT '',
    -- Derived by the store: lower-cased capabilities, or the lower-cased
    -- role of a venue agent (PIRCAN/1 FIND shows it as a capability).
    ADD COLUMN capability_search text[] NOT NULL DEFAULT '{}';
UPDATE agents SET capability_search = ARRAY[lower(role)] WHERE irc_account IS NULL;
CREATE INDEX agents_capability_search ON agents USING gin (capability_search);

CREATE TABLE pircan_channels (
    key        text PRIMARY KEY,       -- the name case-folded
    name       text NOT NULL,          -- as the operator wrote it
    private    boolean NOT NULL DEFAULT false,
    topic      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);

CREATE TABLE pircan_members (
    channel_key text NOT NULL REFERENCES pircan_channels (key) ON DELETE CASCADE,
    agent_id    text NOT NULL,
    joined_at   timestamptz NOT NULL,
    PRIMARY KEY (channel_key, agent_id)
);

CREATE TABLE pircan_invitations (
    channel_key text NOT NULL REFERENCES pircan_channels (key) ON DELETE CASCADE,
    agent_id    text NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (channel_key, agent_id)
);

-- One fixed window per key (a requester, all unidentified callers,
-- registrations): the count of hits since window_start.
CREATE TABLE pircan_windows (
    key          text PRIMARY KEY,
    window_start timestamptz NOT NULL,
    hits         integer NOT NULL
);

-- +goose Down
DROP TABLE pircan_windows;
DROP TABLE pircan_invitations;
DROP TABLE pircan_members;
DROP TABLE pircan_channels;
DROP INDEX agents_capability_search;
ALTER TABLE agents DROP COLUMN capability_search, DROP COLUMN card_url, DROP COLUMN capabilities,
    DROP COLUMN irc_nick, DROP COLUMN irc_account;
