-- Sealed briefs (PROTOCOL.md "Sealed briefs"): a brand's one offer to many
-- bouncers, their offers, and the quotes sealed until collect_until.
-- briefs.ready_at is set once, by the node that sends quotes_ready (a
-- conditional UPDATE), so the push fires once across nodes; a quote or a
-- decline locks the brief row, so none lands after it.

-- +goose Up
CREATE TABLE briefs (
    id             text PRIMARY KEY,
    brand          text NOT NULL,
    brand_party    jsonb NOT NULL,
    offer          jsonb NOT NULL,
    arena          boolean NOT NULL,
    created_at     timestamptz NOT NULL,
    collect_until  timestamptz NOT NULL,
    ready_at       timestamptz,
    awarded_quote  text NOT NULL DEFAULT '',
    negotiation_id text NOT NULL DEFAULT '',
    awarded_at     timestamptz
);

CREATE INDEX briefs_brand_created ON briefs (brand, created_at);
CREATE INDEX briefs_unready ON briefs (collect_until) WHERE ready_at IS NULL;

CREATE TABLE brief_offers (
    offer_id    text PRIMARY KEY,
    brief_id    text NOT NULL REFERENCES briefs (id) ON DELETE CASCADE,
    pos         integer NOT NULL,
    bouncer     text NOT NULL,
    declined_at timestamptz,
    reason      text NOT NULL DEFAULT ''
);

CREATE INDEX brief_offers_bouncer ON brief_offers (bouncer);
CREATE INDEX brief_offers_brief ON brief_offers (brief_id);

CREATE TABLE brief_quotes (
    offer_id   text PRIMARY KEY REFERENCES brief_offers (offer_id) ON DELETE CASCADE,
    quote_id   text NOT NULL UNIQUE,
    brief_id   text NOT NULL,
    bouncer    text NOT NULL,
    terms      text NOT NULL,
    offer_hash text NOT NULL,
    content    text NOT NULL,
    at         timestamptz NOT NULL
);

CREATE INDEX brief_quotes_brief ON brief_quotes (brief_id);

-- +goose Down
DROP TABLE brief_quotes;
DROP TABLE brief_offers;
DROP TABLE briefs;
