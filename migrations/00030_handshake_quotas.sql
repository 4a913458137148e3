-- The handshake's caps (PIRCAN.md "Limits of the handshake"): what an agent
-- holds is counted by owner (resources) and by sender (open tasks), and the
-- resource search (a substring of the lower-cased title) is served by a
-- trigram index. pg_trgm ships with PostgreSQL (contrib); creating it needs
-- the CREATE privilege on the database, or an operator who created it in
-- schema public beforehand. IF NOT EXISTS does not make two sessions that
-- create it at once safe (the second fails on pg_extension_name_index), as
-- when venues migrate several schemas of one database together: a
-- transaction-scoped advisory lock makes them take turns.

-- +goose Up
SELECT pg_advisory_xact_lock(hashtext('venue: CREATE EXTENSION pg_trgm'));
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
CREATE INDEX agent_resources_owner ON agent_resources (owner);
CREATE INDEX agent_resources_title_trgm ON agent_resources USING gin (lower(title) public.gin_trgm_ops);
CREATE INDEX agent_tasks_from ON agent_tasks (from_agent, status);

-- +goose Down
DROP INDEX agent_tasks_from;
DROP INDEX agent_resources_title_trgm;
DROP INDEX agent_resources_owner;
