-- Event sequence for the SSE streams: job_events.id is taken at insert, so ids commit out
-- of order and a reader that resumes after id N could miss an id < N committed later.
-- seq is given to committed rows only, by one sequencer at a time (advisory lock 7320/1,
-- see queue/events.c): seq order is commit-visibility order, so "seq > N" never skips.
ALTER TABLE job_events ADD COLUMN seq bigint;
CREATE UNIQUE INDEX job_events_seq ON job_events (seq);
CREATE INDEX job_events_unsequenced ON job_events (id) WHERE seq IS NULL;

-- Rows already there, in id order.
UPDATE job_events e SET seq = s.n
  FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM job_events) s
 WHERE e.id = s.id;

-- Wakes the sequencer at commit (NOTIFY is delivered only when the inserting transaction
-- commits; one per statement, folded per transaction).
CREATE FUNCTION job_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('fleet_events', '');
	RETURN NULL;
END $$;
CREATE TRIGGER job_events_notify AFTER INSERT ON job_events
	FOR EACH STATEMENT EXECUTE FUNCTION job_events_notify();

-- The last number given; its row lock serializes sequencers across replicas.
CREATE TABLE job_event_seq (
	one	boolean PRIMARY KEY DEFAULT true CHECK (one),
	last	bigint NOT NULL
);
INSERT INTO job_event_seq (last) SELECT coalesce(max(seq), 0) FROM job_events;
