/* migrate: reads the folder, compares against schema_migrations, applies what is missing. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"
#include "core/log.h"
#include "core/migrate.h"
#include "core/textbuf.h"

#define MIGRATE_LOCK	"7314001"	/* pg_advisory_lock key shared by all migrators */
#define MAX_FILES	512

struct mfile {
	int	 version;
	char	 name[256];
	char	*sql;
	char	 sum[65];
};

static int
by_version(const void *a, const void *b)
{
	return ((const struct mfile *)a)->version - ((const struct mfile *)b)->version;
}

static void
files_free(struct mfile *f, int n)
{
	for (int i = 0; i < n; i++)
		free(f[i].sql);
	free(f);
}

/* Reads NNNN_name.sql files sorted by version; on failure fills e. */
static bool
files_read(const char *dir, struct mfile **out, int *nout, struct err *e)
{
	struct mfile *f = calloc(MAX_FILES, sizeof(*f));
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (d == NULL) {
		free(f);
		return err_set(e, 500, "migrate.no_dir", "cannot open the migrations folder");
	}
	while ((de = readdir(d)) != NULL && n < MAX_FILES) {
		size_t len = strlen(de->d_name);
		char path[4096];

		if (len < 6 || strcmp(de->d_name + len - 4, ".sql") != 0 ||
		    de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		f[n].version = atoi(de->d_name);
		snprintf(f[n].name, sizeof(f[n].name), "%s", de->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if ((f[n].sql = textbuf_read_file(path, NULL)) == NULL) {
			closedir(d);
			files_free(f, n);
			return err_set(e, 500, "migrate.read", "cannot read migration %s",
			    de->d_name);
		}
		crypto_sha256_hex(f[n].sql, strlen(f[n].sql), f[n].sum);
		n++;
	}
	closedir(d);
	qsort(f, (size_t)n, sizeof(*f), by_version);
	for (int i = 1; i < n; i++) {
		if (f[i].version == f[i - 1].version) {
			files_free(f, n);
			return err_set(e, 500, "migrate.duplicate", "two migrations share a version");
		}
	}
	*out = f;
	*nout = n;
	return true;
}

static const char sql_table[] =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version int PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
    " applied_at timestamptz NOT NULL DEFAULT now())";
static const char sql_applied[] = "SELECT version, checksum, name FROM schema_migrations";
static const char sql_record[] =
    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)";

/* Compares applied rows with files; sets done[i] for applied files. */
static bool
check_applied(struct db *c, struct mfile *f, int n, bool *done, struct err *e)
{
	PGresult *r = NULL;
	bool ok = false;

	if (!db_exec(c, sql_applied, 0, NULL, &r, e))
		goto cleanup;
	for (int row = 0; row < PQntuples(r); row++) {
		int v = atoi(PQgetvalue(r, row, 0));
		bool found = false;

		for (int i = 0; i < n; i++) {
			if (f[i].version != v)
				continue;
			found = true;
			if (strcmp(f[i].sum, PQgetvalue(r, row, 1)) != 0) {
				err_set(e, 409, "migrate.checksum",
				    "applied migration %s has changed", f[i].name);
				err_detail(e, "Migrations are forward-only: restore %s and add a "
				    "new migration instead.", f[i].name);
				goto cleanup;
			}
			done[i] = true;
		}
		if (!found) {
			err_set(e, 409, "migrate.unknown",
			    "database has migration %d that this build does not know", v);
			goto cleanup;
		}
	}
	ok = true;
cleanup:
	PQclear(r);
	return ok;
}

static bool
run(struct db *c, const char *dir, bool apply, int *count, struct err *e)
{
	struct mfile *f = NULL;
	bool *done = NULL, ok = false, locked = false;
	const char *lock_p[1] = { MIGRATE_LOCK };
	int n = 0;

	*count = 0;
	if (!files_read(dir, &f, &n, e))
		return false;
	done = calloc((size_t)n + 1, sizeof(*done));
	if (apply) {
		if (!db_exec(c, "SELECT pg_advisory_lock($1::bigint)", 1, lock_p, NULL, e))
			goto cleanup;
		locked = true;
		if (!db_exec(c, sql_table, 0, NULL, NULL, e))
			goto cleanup;
	} else {
		PGresult *r = NULL;
		bool exists;

		if (!db_exec(c, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0, NULL,
		    &r, e))
			goto cleanup;
		exists = PQgetvalue(r, 0, 0)[0] == 't';
		PQclear(r);
		if (!exists) {
			*count = n;
			ok = true;
			goto cleanup;
		}
	}
	if (!check_applied(c, f, n, done, e))
		goto cleanup;
	for (int i = 0; i < n; i++) {
		char ver[16];
		const char *p[3] = { ver, f[i].name, f[i].sum };
		PGresult *r;

		if (done[i])
			continue;
		(*count)++;
		if (!apply)
			continue;
		snprintf(ver, sizeof(ver), "%d", f[i].version);
		if (!db_begin(c, e))
			goto cleanup;
		r = PQexec(db_conn(c), f[i].sql);
		if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
			log_error(NULL, "migrate", "migration failed", "{s:s, s:s}", "file",
			    f[i].name, "error", PQresultErrorMessage(r));
			PQclear(r);
			db_rollback(c);
			err_set(e, 500, "migrate.failed", "migration %s failed", f[i].name);
			goto cleanup;
		}
		PQclear(r);
		if (!db_exec(c, sql_record, 3, p, NULL, e) || !db_commit(c, e)) {
			db_rollback(c);
			goto cleanup;
		}
		log_info(NULL, "migrate", "migration applied", "{s:s}", "file", f[i].name);
	}
	ok = true;
cleanup:
	if (locked)
		db_exec(c, "SELECT pg_advisory_unlock($1::bigint)", 1, lock_p, NULL, NULL);
	free(done);
	files_free(f, n);
	return ok;
}

bool
migrate_apply(struct db *c, const char *dir, int *applied, struct err *e)
{
	return run(c, dir, true, applied, e);
}

bool
migrate_pending(struct db *c, const char *dir, int *pending, struct err *e)
{
	return run(c, dir, false, pending, e);
}
