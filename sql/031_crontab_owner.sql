-- 031_crontab_owner: a crontab schedule belongs to one file (issue 27).
--
-- source is the absolute path of the crontab file whose line made the
-- schedule (pd-cron apply FILE, pd-worker --crontab FILE); NULL for one
-- made by pd-cron add or a YAML schedules file. Applying a file that names
-- a schedule of another source is refused with the owner's path (lib/sched:
-- pd_sched_apply_types), and --prune deletes only the file's own, so two
-- files never take a schedule from each other. A crontab schedule stored
-- before this migration has no source: the first file of its scope to
-- apply it adopts it.
--
-- command is the line's command as the file had it when applied, for
-- pd-cron list's COMMAND column only: a worker runs the command of the
-- file on its own host, never this one.
ALTER TABLE pendulum.cron_schedules
    ADD COLUMN source text CONSTRAINT cron_schedules_source_check CHECK (source <> ''),
    ADD COLUMN command text;
COMMENT ON COLUMN pendulum.cron_schedules.source IS
    'The crontab file that owns the schedule (its absolute path); NULL: pd-cron add or a schedules file.';
COMMENT ON COLUMN pendulum.cron_schedules.command IS
    'A crontab line''s command, shown by pd-cron list (never run from here: the worker runs its file''s); NULL: none.';
