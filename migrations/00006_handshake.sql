-- The brokered handshake (PIRCAN.md "Handshake, messages and the owner
-- portal"): contact policies, requests, agreements, direct messages,
-- tasks, reports, resources, the notifications waiting for an account,
-- the limits' hit counts, the owner portal's sign-ins and the audit log.
-- Agent ids are the agents table's; there are no foreign keys to it, as in
-- the tables above, so the rows outlive nothing they should not.

-- +goose Up
CREATE TABLE handshake_policies (
    agent_id   text PRIMARY KEY,
    policy     text NOT NULL,
    owner_set  boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL
);

CREATE TABLE contact_requests (
    id           text PRIMARY KEY,
    ordinal      bigint GENERATED ALWAYS AS IDENTITY UNIQUE, -- insertion order
    from_agent   text NOT NULL,
    to_agent     text NOT NULL,
    purpose      text NOT NULL,
    scopes       text[] NOT NULL,
    ttl_days     integer NOT NULL,
    status       text NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    decided_at   timestamptz,
    decided_by   text NOT NULL DEFAULT '',
    agreement_id text NOT NULL DEFAULT ''
);
CREATE INDEX contact_requests_from ON contact_requests (from_agent, created_at);
CREATE INDEX contact_requests_to ON contact_requests (to_agent, status);
CREATE INDEX contact_requests_pending ON contact_requests (expires_at) WHERE status = 'pending';

CREATE TABLE agreements (
    id         text PRIMARY KEY,
    ordinal    bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    request_id text NOT NULL,
    requester  text NOT NULL,
    target     text NOT NULL,
    scopes     text[] NOT NULL,
    status     text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    ended_at   timestamptz,
    ended_by   text NOT NULL DEFAULT ''
);
CREATE INDEX agreements_requester ON agreements (requester, target);
CREATE INDEX agreements_target ON agreements (target, requester);
CREATE INDEX agreements_active ON agreements (expires_at) WHERE status = 'active';

CREATE TABLE direct_messages (
    id              text PRIMARY KEY,
    ordinal         bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    agreement_id    text NOT NULL,
    from_agent      text NOT NULL,
    to_agent        text NOT NULL,
    body            text NOT NULL,
    reply_to        text NOT NULL DEFAULT '',
    conversation_id text NOT NULL,
    hop             integer NOT NULL,
    at              timestamptz NOT NULL,
    read_at         timestamptz
);
CREATE INDEX direct_messages_unread ON direct_messages (to_agent, ordinal) WHERE read_at IS NULL;
CREATE INDEX direct_messages_sender ON direct_messages (agreement_id, from_agent, at);
CREATE INDEX direct_messages_conversation ON direct_messages (conversation_id, at);

CREATE TABLE agent_tasks (
    id           text PRIMARY KEY,
    ordinal      bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    agreement_id text NOT NULL,
    from_agent   text NOT NULL,
    to_agent     text NOT NULL,
    skill        text NOT NULL,
    body         text NOT NULL,
    at           timestamptz NOT NULL,
    status       text NOT NULL,
    result       text NOT NULL DEFAULT '',
    completed_at timestamptz
);
CREATE INDEX agent_tasks_to ON agent_tasks (to_agent, status, ordinal);

CREATE TABLE agent_reports (
    id        text PRIMARY KEY,
    ordinal   bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    reporter  text NOT NULL,
    reported  text NOT NULL,
    category  text NOT NULL,
    details   text NOT NULL,
    at        timestamptz NOT NULL,
    open      boolean NOT NULL
);
CREATE INDEX agent_reports_reporter ON agent_reports (reporter, at);

CREATE TABLE agent_resources (
    id         text PRIMARY KEY,
    ordinal    bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    owner      text NOT NULL,
    title      text NOT NULL,
    tags       text[] NOT NULL,
    access     text NOT NULL,
    content    text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX agent_resources_tags ON agent_resources USING gin (tags);

CREATE TABLE notification_events (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id text NOT NULL,
    type     text NOT NULL,
    at       timestamptz NOT NULL
);
CREATE INDEX notification_events_agent ON notification_events (agent_id, id);
CREATE INDEX notification_events_at ON notification_events (at);

CREATE TABLE limit_hits (
    kind text NOT NULL,
    key  text NOT NULL,
    at   timestamptz NOT NULL
);
CREATE INDEX limit_hits_key ON limit_hits (kind, key, at);

CREATE TABLE owner_sign_ins (
    secret_hash     text PRIMARY KEY, -- hex SHA-256 of the browser's secret
    ordinal         bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    code            text NOT NULL,
    address         text NOT NULL,
    browser         text NOT NULL,
    created_at      timestamptz NOT NULL,
    code_expires_at timestamptz NOT NULL,
    account         text NOT NULL DEFAULT '',
    approved_at     timestamptz,
    expires_at      timestamptz,
    ended_at        timestamptz
);
CREATE INDEX owner_sign_ins_code ON owner_sign_ins (code) WHERE account = '';
CREATE INDEX owner_sign_ins_account ON owner_sign_ins (account) WHERE account <> '';

CREATE TABLE audit_log (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      timestamptz NOT NULL,
    actor   text NOT NULL,
    action  text NOT NULL,
    subject text NOT NULL,
    detail  text NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at, id);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE owner_sign_ins;
DROP TABLE limit_hits;
DROP TABLE notification_events;
DROP TABLE agent_resources;
DROP TABLE agent_reports;
DROP TABLE agent_tasks;
DROP TABLE direct_messages;
DROP TABLE agreements;
DROP TABLE contact_requests;
DROP TABLE handshake_policies;
