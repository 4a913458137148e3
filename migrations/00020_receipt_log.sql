-- The public receipt log (PROTOCOL.md "The receipt log"): one append-only
-- Merkle log of every receipt the venue signs, shared by every node. Its
-- rows have no foreign key to negotiations: the log outlives the purge of
-- arena negotiations.

-- +goose Up
CREATE TABLE receipt_log (
    idx            bigint PRIMARY KEY CHECK (idx >= 0),
    negotiation_id text NOT NULL UNIQUE,
    receipt        text NOT NULL, -- the compact JWS, the leaf's bytes
    logged_at      timestamptz NOT NULL DEFAULT now()
);

-- The one head row: the size and the latest signed checkpoint. Appending
-- locks it (SELECT ... FOR UPDATE), so appends from every node are
-- serialised and the indexes have no gap.
CREATE TABLE receipt_log_head (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    size       bigint NOT NULL DEFAULT 0,
    checkpoint text,
    key_id     bigint NOT NULL DEFAULT 0
);
INSERT INTO receipt_log_head (one) VALUES (true);

-- The log's signing keys, sealed like the receipt keys (venue_keys).
CREATE TABLE receipt_log_keys (
    id           bigint PRIMARY KEY,
    key          bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    retired_at   timestamptz,
    retired_size bigint
);

-- Ended negotiations whose receipts wait to be appended, queued by the
-- trigger below in the ending's own transaction, so no ending is missed
-- whichever node commits it or fails after.
CREATE TABLE receipt_log_queue (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    negotiation_id text NOT NULL UNIQUE
);

-- +goose StatementBegin
CREATE FUNCTION receipt_log_enqueue() RETURNS trigger AS $$
BEGIN
    INSERT INTO receipt_log_queue (negotiation_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER receipt_log_ended AFTER UPDATE OF status ON negotiations
    FOR EACH ROW
    WHEN (NEW.status IN ('deal', 'walked', 'turn_missed', 'expired') AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION receipt_log_enqueue();
CREATE TRIGGER receipt_log_ended_insert AFTER INSERT ON negotiations
    FOR EACH ROW
    WHEN (NEW.status IN ('deal', 'walked', 'turn_missed', 'expired'))
    EXECUTE FUNCTION receipt_log_enqueue();

-- Receipts made before the log existed are appended once, in the order
-- they were made.
INSERT INTO receipt_log_queue (negotiation_id)
SELECT id FROM negotiations
WHERE status IN ('deal', 'walked', 'turn_missed', 'expired')
ORDER BY (state->>'ended_at')::timestamptz, ordinal;

-- +goose Down
DROP TRIGGER receipt_log_ended_insert ON negotiations;
DROP TRIGGER receipt_log_ended ON negotiations;
DROP FUNCTION receipt_log_enqueue();
DROP TABLE receipt_log_queue;
DROP TABLE receipt_log_keys;
DROP TABLE receipt_log_head;
DROP TABLE receipt_log;
