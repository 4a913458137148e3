-- The registration each NickServ account name stood for when PIRCAN first
-- saw it (PIRCAN.md "An account registered again"): the server's account
-- id (InspIRCd's inspircd.org/account-id tag). Another id under the same
-- name (the account was dropped or expired and registered again) is kept as
-- pending, and the name's agent is suspended until its owner confirms.

-- +goose Up
CREATE TABLE pircan_accounts (
    account       text PRIMARY KEY,
    account_id    text NOT NULL,
    first_seen    timestamptz NOT NULL,
    pending_id    text,
    pending_since timestamptz
);

-- +goose Down
DROP TABLE pircan_accounts;
