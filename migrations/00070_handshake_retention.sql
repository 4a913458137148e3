-- The handshake's retention (PIRCAN.md "Retention"): the periodic purge
-- finds what is past its time by these indexes, oldest first.

-- +goose Up
CREATE INDEX owner_sign_ins_created ON owner_sign_ins (created_at);
CREATE INDEX direct_messages_at ON direct_messages (at);
CREATE INDEX contact_requests_done ON contact_requests ((COALESCE(decided_at, expires_at))) WHERE status <> 'pending';
CREATE INDEX agent_tasks_done ON agent_tasks (completed_at) WHERE status <> 'open';

-- +goose Down
DROP INDEX agent_tasks_done;
DROP INDEX contact_requests_done;
DROP INDEX direct_messages_at;
DROP INDEX owner_sign_ins_created;
