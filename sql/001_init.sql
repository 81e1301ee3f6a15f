-- 001_init: the pendulum schema and the migrations ledger.
CREATE SCHEMA IF NOT EXISTS pendulum;

CREATE TABLE pendulum.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON SCHEMA pendulum IS 'Pendulum: durable jobs on PostgreSQL';
