-- The venue's schema (PROTOCOL.md, ARCHITECTURE.md). Times are timestamptz;
-- money is integer minor units. Client-supplied JSON (offers, profiles, the
-- negotiation state with its terms and acks, grant scopes) is `json`, not
-- `jsonb`: json keeps the exact bytes (key order, number spelling) and takes
-- every JSON string, \u0000 included, which jsonb refuses.

-- +goose Up
CREATE TABLE agents (
    id                   text PRIMARY KEY,
    name                 text NOT NULL,
    role                 text NOT NULL,
    key_hash             text NOT NULL UNIQUE, -- hex SHA-256 of the api_key
    principal_key        json,                 -- public JWK, NULL until set
    principal_thumbprint text NOT NULL DEFAULT '',
    profile              json NOT NULL DEFAULT '{}',
    -- Derived by the store from name and profile for browse_bouncers:
    -- lower-cased with Go's rules, so matching is the same on every store.
    search_name          text NOT NULL DEFAULT '',
    search_description   text NOT NULL DEFAULT '',
    categories           text[] NOT NULL DEFAULT '{}',
    reputation           integer NOT NULL DEFAULT 0,
    created_at           timestamptz NOT NULL
);
CREATE INDEX agents_browse ON agents (role, reputation DESC, name COLLATE "C", id COLLATE "C");
CREATE INDEX agents_categories ON agents USING gin (categories);

CREATE TABLE offers (
    id             text PRIMARY KEY,
    brand          text NOT NULL,
    bouncer        text NOT NULL,
    body           json,
    arena          boolean NOT NULL DEFAULT false,
    negotiation_id text UNIQUE, -- set by CreateNegotiation, at most one
    created_at     timestamptz NOT NULL
);

CREATE TABLE negotiations (
    id           text PRIMARY KEY,
    ordinal      bigint GENERATED ALWAYS AS IDENTITY UNIQUE, -- insertion order
    offer_id     text NOT NULL UNIQUE,
    brand        text NOT NULL,
    bouncer      text NOT NULL,
    status       text NOT NULL,
    arena        boolean NOT NULL,
    -- negotiation.State as JSON: deadlines, turn, standing proposal, acks.
    state        json NOT NULL,
    last_seq     bigint NOT NULL DEFAULT 0,
    -- The earliest clock of a pending or live negotiation (NULL: none runs);
    -- timers are re-armed from it on start.
    next_wake_at timestamptz,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX negotiations_next_wake ON negotiations (next_wake_at) WHERE next_wake_at IS NOT NULL;
CREATE INDEX negotiations_pending ON negotiations (bouncer, ordinal) WHERE status = 'pending';
CREATE INDEX negotiations_arena ON negotiations (arena, ordinal);

-- One row per transcript frame. frame is text, the exact bytes that were
-- hashed, so the chain sha256(prev_hash || JCS(frame)) verifies from here.
CREATE TABLE transcript (
    negotiation_id text NOT NULL REFERENCES negotiations (id) ON DELETE CASCADE,
    seq            bigint NOT NULL CHECK (seq > 0),
    frame          text NOT NULL,
    hash           text NOT NULL,
    frame_type     text NOT NULL DEFAULT '', -- the frame's type
    from_agent     text NOT NULL DEFAULT '', -- negotiation_message: the sender
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (negotiation_id, seq)
);

CREATE TABLE grants (
    jti            text PRIMARY KEY,
    ordinal        bigint GENERATED ALWAYS AS IDENTITY UNIQUE, -- upload order
    agent_id       text NOT NULL,
    token          text NOT NULL,
    iss            text NOT NULL, -- principal key thumbprint
    iat            timestamptz NOT NULL,
    nbf            timestamptz,
    exp            timestamptz NOT NULL,
    negotiation_id text,          -- NULL: any negotiation
    scope          json,
    created_at     timestamptz NOT NULL,
    revoked_at     timestamptz,
    spent_cents    bigint NOT NULL DEFAULT 0 -- live deals made under the grant
);
CREATE INDEX grants_agent ON grants (agent_id, ordinal);

-- The venue's signing key: one row, shared by every node.
CREATE TABLE venue_keys (
    id         integer PRIMARY KEY CHECK (id = 1),
    pem        text NOT NULL, -- PKCS#8 PEM
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Reputation changes, one row per agent and ending (PROTOCOL.md "Endings, reputation, arena").
CREATE TABLE reputation_events (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id       text NOT NULL,
    negotiation_id text,
    delta          integer NOT NULL,
    reason         text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX reputation_events_agent ON reputation_events (agent_id, id);

-- Settlement instructions of live deals (PROTOCOL.md "Endings, reputation, arena"), for the recorder.
CREATE TABLE settlements (
    id             text PRIMARY KEY,
    negotiation_id text NOT NULL UNIQUE,
    payer          text NOT NULL,
    payee          text NOT NULL,
    amount_minor   numeric(30, 0) NOT NULL CHECK (amount_minor >= 0), -- USDC minor units (6 decimals)
    status         text NOT NULL DEFAULT 'pending',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX settlements_payer ON settlements (payer, created_at);
CREATE INDEX settlements_payee ON settlements (payee, created_at);

-- +goose Down
DROP TABLE settlements;
DROP TABLE reputation_events;
DROP TABLE venue_keys;
DROP TABLE grants;
DROP TABLE transcript;
DROP TABLE negotiations;
DROP TABLE offers;
DROP TABLE agents;
