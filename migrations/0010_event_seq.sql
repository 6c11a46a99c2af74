-- Event sequence for the SSE streams: job_events.id is taken at insert, so ids commit out
-- of order and a reader that resumes after id N could miss an id < N committed later.
-- seq is given to committed rows only, by one sequencer at a time (the row lock of
-- job_event_seq, see queue/events.c): seq order is commit-visibility order, so "seq > N"
-- never skips.  No trigger: writers' transactions stay as they are (no NOTIFY in them).
ALTER TABLE job_events ADD COLUMN seq bigint;
CREATE UNIQUE INDEX job_events_seq ON job_events (seq);
CREATE INDEX job_events_unsequenced ON job_events (id) WHERE seq IS NULL;

-- Rows already there, in id order.
UPDATE job_events e SET seq = s.n
  FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM job_events) s
 WHERE e.id = s.id;

-- The last number given; its row lock serializes sequencers across replicas.
CREATE TABLE job_event_seq (
	one	boolean PRIMARY KEY DEFAULT true CHECK (one),
	last	bigint NOT NULL
);
INSERT INTO job_event_seq (last) SELECT coalesce(max(seq), 0) FROM job_events;
