-- The deal after the deal (PROTOCOL.md "Deliveries"): one row per deal a
-- party has acted on since (deal_records, whose row lock serializes every
-- change of one deal across the nodes), its deliveries, and the status of
-- its settlement instruction (also written to settlements.status in the same
-- transaction). due_at is when the venue approves a delivery left
-- unanswered; the partial index is what every node's sweep reads.

-- +goose Up
CREATE TABLE deal_records (
    negotiation_id    text PRIMARY KEY,
    settlement_status text NOT NULL DEFAULT '',
    updated_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE deliveries (
    id             text PRIMARY KEY,
    negotiation_id text NOT NULL REFERENCES deal_records (negotiation_id) ON DELETE CASCADE,
    n              integer NOT NULL,
    url            text NOT NULL,
    note           text NOT NULL DEFAULT '',
    sha256         text NOT NULL DEFAULT '',
    status         text NOT NULL,
    submitted_at   timestamptz NOT NULL,
    due_at         timestamptz NOT NULL,
    answered_at    timestamptz,
    answered_by    text NOT NULL DEFAULT '',
    reason         text NOT NULL DEFAULT '',
    UNIQUE (negotiation_id, n)
);

CREATE INDEX deliveries_due ON deliveries (due_at) WHERE status = 'submitted';

-- +goose Down
DROP TABLE deliveries;
DROP TABLE deal_records;
