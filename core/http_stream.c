/* http_stream: long-lived streaming GETs on one curl multi handle (Kubernetes watches):
 * body pieces go to a callback as they arrive, one end callback per stream. */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "core/http.h"

struct stream {
	CURL			*easy;
	struct curl_slist	*slist;
	http_chunk_fn		 on_chunk;
	http_end_fn		 on_end;
	void			*user;
	bool			 aborted;
	char			 error[CURL_ERROR_SIZE];
	struct stream		*next;
};

struct http_streams {
	CURLM		*multi;
	struct stream	*all;
	int		 open;
};

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	struct stream *s = arg;
	long status = 0;

	curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
	if (!s->on_chunk(s->user, status, p, size * n)) {
		s->aborted = true;
		return 0;	/* curl ends the transfer with a write error */
	}
	return size * n;
}

struct http_streams *
http_streams_new(void)
{
	struct http_streams *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if ((s->multi = curl_multi_init()) == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

static void
stream_free(struct http_streams *ss, struct stream *s)
{
	curl_multi_remove_handle(ss->multi, s->easy);
	curl_easy_cleanup(s->easy);
	curl_slist_free_all(s->slist);
	free(s);
}

bool
http_streams_add(struct http_streams *ss, const struct http_req *req, http_chunk_fn on_chunk,
    http_end_fn on_end, void *user, struct err *e)
{
	struct stream *s = calloc(1, sizeof(*s));
	char auth[4096];
	bool ok;

	if (s == NULL)
		return err_set(e, 500, "http.bad_request", "out of memory");
	s->on_chunk = on_chunk;
	s->on_end = on_end;
	s->user = user;
	if ((s->easy = curl_easy_init()) == NULL) {
		free(s);
		return err_set(e, 500, "http.bad_request", "cannot make a curl handle");
	}
	for (size_t i = 0; i < req->nheaders; i++) {
		snprintf(auth, sizeof(auth), "%s: %s", req->headers[i].name, req->headers[i].value);
		s->slist = curl_slist_append(s->slist, auth);
	}
	if (req->bearer != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", req->bearer);
		s->slist = curl_slist_append(s->slist, auth);
	}
	ok = curl_easy_setopt(s->easy, CURLOPT_URL, req->url) == CURLE_OK &&
	    curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
	    curl_easy_setopt(s->easy, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
	    curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, req->timeout_ms) == CURLE_OK &&
	    curl_easy_setopt(s->easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L) == CURLE_OK &&
	    curl_easy_setopt(s->easy, CURLOPT_ERRORBUFFER, s->error) == CURLE_OK &&
	    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
	    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s) == CURLE_OK &&
	    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s) == CURLE_OK &&
	    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, s->slist) == CURLE_OK;
	if (ok && req->ca_pem != NULL) {
		struct curl_blob blob = { (void *)req->ca_pem, strlen(req->ca_pem),
		    CURL_BLOB_COPY };

		ok = curl_easy_setopt(s->easy, CURLOPT_CAINFO_BLOB, &blob) == CURLE_OK;
	}
	if (!ok || curl_multi_add_handle(ss->multi, s->easy) != CURLM_OK) {
		curl_easy_cleanup(s->easy);
		curl_slist_free_all(s->slist);
		free(s);
		return err_set(e, 500, "http.bad_request", "cannot start the stream");
	}
	s->next = ss->all;
	ss->all = s;
	ss->open++;
	return true;
}

int
http_streams_poll(struct http_streams *ss, int ms)
{
	int running = 0, left = 0;
	CURLMsg *m;

	curl_multi_perform(ss->multi, &running);
	/* waits the whole ms even with no stream open: a caller's loop never spins */
	curl_multi_poll(ss->multi, NULL, 0, ms, NULL);
	curl_multi_perform(ss->multi, &running);
	while ((m = curl_multi_info_read(ss->multi, &left)) != NULL) {
		struct stream *s = NULL, **pp;
		long status = 0;
		struct err e = { 0 };

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
		for (pp = &ss->all; *pp != NULL && *pp != s; pp = &(*pp)->next)
			;
		if (*pp == NULL)
			continue;
		*pp = s->next;
		ss->open--;
		if (m->data.result == CURLE_OK || m->data.result == CURLE_PARTIAL_FILE) {
			s->on_end(s->user, status, NULL);
		} else {
			if (m->data.result == CURLE_OPERATION_TIMEDOUT)
				err_set(&e, 504, "http.timeout", "stream timed out");
			else
				err_set(&e, 502, "http.transport", "%s", s->aborted ? "aborted" :
				    s->error[0] ? s->error : curl_easy_strerror(m->data.result));
			s->on_end(s->user, status, &e);
		}
		stream_free(ss, s);
	}
	return ss->open;
}

void
http_streams_free(struct http_streams *ss)
{
	if (ss == NULL)
		return;
	while (ss->all != NULL) {
		struct stream *s = ss->all;

		ss->all = s->next;
		stream_free(ss, s);
	}
	curl_multi_cleanup(ss->multi);
	free(ss);
}
