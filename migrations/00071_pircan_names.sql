-- The names PIRCAN agents registered under, by their key (PIRCAN.md
-- "HELLO": the confusable skeleton of the case-folded name), so that HELLO
-- refuses a name that reads like another agent's.

-- +goose Up
CREATE TABLE pircan_names (
    key        text PRIMARY KEY,
    agent_id   text NOT NULL,
    created_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE pircan_names;
