-- 0017: the accelerator catalog as data (issue 26).  The built-in flavors stay compiled in
-- (regions/catalog.c) as defaults; a row here adds a flavor or overrides a built-in one
-- with the same name (deleting the row restores the built-in).  spec is the validated
-- body of PUT /v1/flavors/{name} (regions/flavor.c).  Every change bumps
-- catalog_generation, which the readers (submission, scheduler loader, poller) compare
-- with the generation they loaded before reloading the table, and NOTIFYs fleet_catalog.
CREATE TABLE flavors (
	name		text PRIMARY KEY,
	spec		jsonb NOT NULL,
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE catalog_generation (
	one		boolean PRIMARY KEY DEFAULT true CHECK (one),
	gen		bigint NOT NULL
);
INSERT INTO catalog_generation VALUES (true, 1);
CREATE FUNCTION catalog_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE catalog_generation SET gen = gen + 1;
	PERFORM pg_notify('fleet_catalog', '');
	RETURN NULL;
END
$$;
CREATE TRIGGER flavors_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON flavors
	FOR EACH STATEMENT EXECUTE FUNCTION catalog_bump();
