-- Security (SECURITY.md, DELEGATION.md "Revoking without the agent"):
-- a grant's jti is unique per issuer, not venue-wide, so one principal can
-- neither squat nor probe another's jti; revocations a principal signs are
-- kept by (issuer, jti), also for grants not uploaded yet; an API key knows
-- when it was issued, so a principal's revocation reaches only older keys;
-- the venue keeps every receipt key it signed with, the retired ones for
-- the JWKS only.

-- +goose Up
ALTER TABLE grants DROP CONSTRAINT grants_pkey;
ALTER TABLE grants ADD PRIMARY KEY (iss, jti);

CREATE TABLE grant_revocations (
    iss        text NOT NULL, -- principal key thumbprint that signed the revocation
    jti        text NOT NULL, -- the grant's jti
    agent_id   text NOT NULL,
    revoked_at timestamptz NOT NULL,
    PRIMARY KEY (iss, jti)
);

ALTER TABLE agents ADD COLUMN key_issued_at timestamptz;
UPDATE agents SET key_issued_at = created_at;
ALTER TABLE agents ALTER COLUMN key_issued_at SET NOT NULL;

-- Receipt keys: the row with retired_at NULL and the highest id signs; the
-- others stay for the JWKS. pem holds the PKCS#8 PEM, or its sealed form
-- when the venue has a key-encryption key (receipt.Sealer).
ALTER TABLE venue_keys DROP CONSTRAINT venue_keys_id_check;
ALTER TABLE venue_keys ADD COLUMN retired_at timestamptz;

-- A bouncer's blocks: requests from a blocked brand are refused.
CREATE TABLE agent_blocks (
    bouncer    text NOT NULL,
    brand      text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (bouncer, brand)
);

-- Live negotiations of one agent (a revocation withdraws its proposals).
CREATE INDEX negotiations_live_brand ON negotiations (brand) WHERE status = 'live';
CREATE INDEX negotiations_live_bouncer ON negotiations (bouncer) WHERE status = 'live';
-- Old requests are purged by creation time.
CREATE INDEX negotiations_requests ON negotiations (created_at) WHERE status IN ('pending', 'declined');

-- +goose Down
DROP INDEX negotiations_requests;
DROP INDEX negotiations_live_bouncer;
DROP INDEX negotiations_live_brand;
DROP TABLE agent_blocks;
DELETE FROM venue_keys WHERE retired_at IS NOT NULL;
UPDATE venue_keys SET id = 1;
ALTER TABLE venue_keys DROP COLUMN retired_at;
ALTER TABLE venue_keys ADD CONSTRAINT venue_keys_id_check CHECK (id = 1);
ALTER TABLE agents DROP COLUMN key_issued_at;
DROP TABLE grant_revocations;
ALTER TABLE grants DROP CONSTRAINT grants_pkey;
ALTER TABLE grants ADD PRIMARY KEY (jti);
