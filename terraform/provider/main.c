/* terraform-provider-fleet: the go-plugin handshake (magic cookie, automatic mutual TLS,
 * the "1|6|tcp|addr|grpc|cert" line) and a gRPC server on the C core API: NWORKERS threads,
 * each with its own completion queue, serve one call at a time each (Terraform calls in
 * parallel: a phase 2 waiting for verification does not hold up the rest), handing
 * tfplugin6 calls to rpc.c and answering go-plugin's own services. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include "tf.h"

#define MAGIC_KEY	"TF_PLUGIN_MAGIC_COOKIE"
#define MAGIC_VALUE	"d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"
#define NWORKERS	4

static int stop_pipe[2];	/* a worker that served Shutdown writes one byte */

struct cert {
	char	*cert_pem;
	char	*key_pem;
	char	*der_b64;	/* raw standard base64 of the DER, no padding */
};

static char *
bio_string(BIO *b)
{
	char *p = NULL;
	long n = BIO_get_mem_data(b, &p);
	char *s = malloc((size_t)n + 1);

	if (s) {
		memcpy(s, p, (size_t)n);
		s[n] = 0;
	}
	return s;
}

static bool
add_ext(X509 *x, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	bool ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return false;
	ok = X509_add_ext(x, ext, -1) == 1;
	X509_EXTENSION_free(ext);
	return ok;
}

/* A self-signed ECDSA P-256 certificate for "localhost", a CA that may serve and be a
 * client, as go-plugin makes its own; valid from 30 s ago for ten years. */
static bool
cert_make(struct cert *c)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name;
	BIO *bc = BIO_new(BIO_s_mem()), *bk = BIO_new(BIO_s_mem());
	unsigned char *der = NULL, serial[16];
	int derlen;
	bool ok = false;

	if (!key || !x || !bc || !bk)
		goto cleanup;
	X509_set_version(x, 2);
	FILE *ur = fopen("/dev/urandom", "rb");
	if (!ur || fread(serial, 1, sizeof serial, ur) != sizeof serial) {
		if (ur)
			fclose(ur);
		goto cleanup;
	}
	fclose(ur);
	serial[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
	BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	X509_gmtime_adj(X509_getm_notBefore(x), -30);
	X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 24 * 3600);
	X509_set_pubkey(x, key);
	name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"HashiCorp",
	    -1, -1, 0);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost",
	    -1, -1, 0);
	X509_set_issuer_name(x, name);
	if (!add_ext(x, NID_basic_constraints, "critical,CA:TRUE") ||
	    !add_ext(x, NID_key_usage, "critical,digitalSignature,keyEncipherment,keyAgreement,keyCertSign") ||
	    !add_ext(x, NID_ext_key_usage, "clientAuth,serverAuth") ||
	    !add_ext(x, NID_subject_alt_name, "DNS:localhost"))
		goto cleanup;
	if (X509_sign(x, key, EVP_sha256()) == 0)
		goto cleanup;
	if (!PEM_write_bio_X509(bc, x) || !PEM_write_bio_PrivateKey(bk, key, NULL, NULL, 0,
	    NULL, NULL))
		goto cleanup;
	c->cert_pem = bio_string(bc);
	c->key_pem = bio_string(bk);
	derlen = i2d_X509(x, &der);
	if (derlen <= 0)
		goto cleanup;
	c->der_b64 = malloc((size_t)(4 * ((derlen + 2) / 3) + 1));
	if (!c->der_b64 || !c->cert_pem || !c->key_pem)
		goto cleanup;
	int n = EVP_EncodeBlock((unsigned char *)c->der_b64, der, derlen);
	while (n > 0 && c->der_b64[n - 1] == '=')
		c->der_b64[--n] = 0;
	ok = true;
cleanup:
	OPENSSL_free(der);
	BIO_free(bc);
	BIO_free(bk);
	X509_free(x);
	EVP_PKEY_free(key);
	return ok;
}

/* Waits for the completion of tag on cq (each worker has its own queue and serves one
 * call at a time, so nothing else completes on it meanwhile). */
static bool
wait_tag(grpc_completion_queue *cq, void *tag)
{
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(cq,
		    gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			return false;
		if (ev.type == GRPC_OP_COMPLETE && ev.tag == tag)
			return ev.success != 0;
	}
}

static char *
buffer_bytes(grpc_byte_buffer *bb, size_t *len)
{
	grpc_byte_buffer_reader rd;
	grpc_slice s;
	char *out;

	*len = 0;
	if (!bb || !grpc_byte_buffer_reader_init(&rd, bb))
		return calloc(1, 1);
	s = grpc_byte_buffer_reader_readall(&rd);
	grpc_byte_buffer_reader_destroy(&rd);
	*len = GRPC_SLICE_LENGTH(s);
	out = malloc(*len + 1);
	if (out)
		memcpy(out, GRPC_SLICE_START_PTR(s), *len);
	grpc_slice_unref(s);
	return out;
}

/* Serves one call: reads its request (unary), answers.  Returns false when the call
 * asked the plugin to shut down. */
static bool
serve_call(grpc_completion_queue *cq, grpc_call *call, const char *method)
{
	grpc_op ops[4];
	grpc_byte_buffer *req = NULL, *resp = NULL;
	grpc_status_code code = GRPC_STATUS_OK;
	grpc_slice details = grpc_empty_slice();
	int cancelled = 0;
	uint8_t *out = NULL;
	size_t outlen = 0, inlen = 0;
	char *in = NULL;
	bool keep = true, streaming;
	static const uint8_t serving[] = {0x08, 0x01};	/* HealthCheckResponse{SERVING} */

	streaming = strncmp(method, "/plugin.GRPCBroker/", 19) == 0 ||
	    strncmp(method, "/plugin.GRPCStdio/", 18) == 0;
	memset(ops, 0, sizeof ops);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (!streaming) {
		ops[1].op = GRPC_OP_RECV_MESSAGE;
		ops[1].data.recv_message.recv_message = &req;
	}
	if (grpc_call_start_batch(call, ops, streaming ? 1 : 2, (void *)1, NULL) != GRPC_CALL_OK ||
	    !wait_tag(cq, (void *)1))
		goto cleanup;
	in = buffer_bytes(req, &inlen);
	if (strcmp(method, "/grpc.health.v1.Health/Check") == 0) {
		out = malloc(sizeof serving);
		memcpy(out, serving, sizeof serving);
		outlen = sizeof serving;
	} else if (strcmp(method, "/plugin.GRPCController/Shutdown") == 0) {
		out = malloc(1);
		keep = false;
	} else if (strncmp(method, "/tfplugin6.Provider/", 20) == 0 &&
	    tf_rpc(method + 20, (const uint8_t *)in, inlen, &out, &outlen)) {
		/* answered */
	} else {
		code = GRPC_STATUS_UNIMPLEMENTED;
		details = grpc_slice_from_static_string("not implemented by terraform-provider-fleet");
	}
	memset(ops, 0, sizeof ops);
	int n = 0;
	if (code == GRPC_STATUS_OK) {
		grpc_slice s = grpc_slice_from_copied_buffer((const char *)out, outlen);
		resp = grpc_raw_byte_buffer_create(&s, 1);
		grpc_slice_unref(s);
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = resp;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = code;
	ops[n++].data.send_status_from_server.status_details = &details;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &cancelled;
	if (grpc_call_start_batch(call, ops, (size_t)n, (void *)2, NULL) == GRPC_CALL_OK)
		wait_tag(cq, (void *)2);
cleanup:
	if (req)
		grpc_byte_buffer_destroy(req);
	if (resp)
		grpc_byte_buffer_destroy(resp);
	grpc_slice_unref(details);
	free(in);
	free(out);
	return keep;
}

struct worker {
	grpc_server		*server;
	grpc_completion_queue	*cq;
	pthread_t		 thread;
};

static void *
serve(void *arg)
{
	struct worker *w = arg;
	grpc_server *server = w->server;
	grpc_completion_queue *cq = w->cq;

	for (bool keep = true; keep;) {
		grpc_call *call = NULL;
		grpc_call_details det;
		grpc_metadata_array md;

		grpc_call_details_init(&det);
		grpc_metadata_array_init(&md);
		if (grpc_server_request_call(server, &call, &det, &md, cq, cq, (void *)3) !=
		    GRPC_CALL_OK || !wait_tag(cq, (void *)3))
			keep = false;
		else {
			char *method = grpc_slice_to_c_string(det.method);
			if (!serve_call(cq, call, method) && write(stop_pipe[1], "x", 1) < 0)
				perror("terraform-provider-fleet: stop");
			gpr_free(method);
		}
		if (call)
			grpc_call_unref(call);
		grpc_call_details_destroy(&det);
		grpc_metadata_array_destroy(&md);
	}
	return NULL;
}

static void
drain(grpc_completion_queue *cq)
{
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
	    GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
}

/* Returns once gRPC has really shut down.  The server-side channel of each connection
 * holds a grpc_init reference of its own and is destroyed asynchronously on a gRPC executor
 * thread after the connection closes, which may be after the server's shutdown notice and
 * after our grpc_shutdown_blocking(); the last such grpc_shutdown() then runs the cleanup
 * on a detached thread.  Exiting meanwhile ran OpenSSL's and libgrpc's atexit teardown
 * under a live executor thread still freeing the connection's TLS state (a double free
 * in thread T1, the first executor) and left that thread's OpenSSL error state
 * (904 bytes, ERR_clear_error from the handshaker) unfreed (LSan).  So: wait, bounded
 * well under go-plugin's 2 s grace, for the last reference to go, then take the init
 * lock once more with grpc_init(), which waits for a cleanup in progress, and shut down
 * synchronously, joining every gRPC thread before main returns. */
static void
settle_grpc(void)
{
	for (int i = 0; i < 1000 && grpc_is_initialized(); i++)
		usleep(1000);
	grpc_init();
	grpc_shutdown_blocking();
}

int
main(void)
{
	const char *cookie = getenv(MAGIC_KEY), *client_pem = getenv("PLUGIN_CLIENT_CERT");
	struct cert c = {0};
	grpc_server_credentials *creds;
	grpc_server *server;
	grpc_completion_queue *cq;
	struct worker w[NWORKERS];
	char byte;
	int port, rc = 1;

	if (!cookie || strcmp(cookie, MAGIC_VALUE) != 0) {
		fprintf(stderr, "This binary is a Terraform plugin (terraform-provider-fleet).\n"
		    "It is not meant to be run directly: name it in a configuration's\n"
		    "required_providers as fleetd/fleet and run terraform.\n");
		return 1;
	}
	signal(SIGINT, SIG_IGN);	/* Terraform stops plugins itself, as go-plugin does */
	if (pipe(stop_pipe) != 0)
		return 1;
	tf_unknown();			/* the sentinel exists before any thread reads it */
	grpc_init();
	if (client_pem && *client_pem) {
		grpc_ssl_pem_key_cert_pair pair;

		if (!cert_make(&c)) {
			fprintf(stderr, "terraform-provider-fleet: cannot make a certificate\n");
			goto cleanup;
		}
		pair.private_key = c.key_pem;
		pair.cert_chain = c.cert_pem;
		creds = grpc_ssl_server_credentials_create_ex(client_pem, &pair, 1,
		    GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY, NULL);
	} else
		creds = grpc_insecure_server_credentials_create();
	server = grpc_server_create(NULL, NULL);
	cq = grpc_completion_queue_create_for_next(NULL);	/* shutdown notification */
	grpc_server_register_completion_queue(server, cq, NULL);
	for (int i = 0; i < NWORKERS; i++) {
		w[i].server = server;
		w[i].cq = grpc_completion_queue_create_for_next(NULL);
		grpc_server_register_completion_queue(server, w[i].cq, NULL);
	}
	port = grpc_server_add_http2_port(server, "127.0.0.1:0", creds);
	grpc_server_credentials_release(creds);
	if (port <= 0) {
		fprintf(stderr, "terraform-provider-fleet: cannot listen on 127.0.0.1\n");
		goto cleanup;
	}
	grpc_server_start(server);
	printf("1|6|tcp|127.0.0.1:%d|grpc|%s\n", port, c.der_b64 ? c.der_b64 : "");
	fflush(stdout);
	for (int i = 0; i < NWORKERS; i++)
		pthread_create(&w[i].thread, NULL, serve, &w[i]);
	while (read(stop_pipe[0], &byte, 1) < 0)
		;
	/* pending request_calls complete unsuccessfully: each worker leaves its loop */
	grpc_server_shutdown_and_notify(server, cq, (void *)4);
	grpc_server_cancel_all_calls(server);
	wait_tag(cq, (void *)4);
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(w[i].thread, NULL);
	grpc_server_destroy(server);
	drain(cq);
	for (int i = 0; i < NWORKERS; i++)
		drain(w[i].cq);
	rc = 0;
cleanup:
	grpc_shutdown_blocking();
	settle_grpc();
	free(c.cert_pem);
	free(c.key_pem);
	free(c.der_b64);
	return rc;
}
