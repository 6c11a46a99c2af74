/* cloudsim pki: a throw-away CA made at start, the Kubernetes servers' certificate it
 * signs (127.0.0.1 / localhost), and RSA keys for generated service accounts. */
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "cloudsim/cs.h"

static char *
bio_text(BIO *b)
{
	char *p = NULL, *out;
	long n = BIO_get_mem_data(b, &p);

	out = malloc((size_t)n + 1);
	if (out == NULL)
		abort();
	memcpy(out, p, (size_t)n);
	out[n] = '\0';
	return out;
}

static EVP_PKEY *
ec_key(void)
{
	return EVP_EC_gen("P-256");
}

static bool
add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ex;

	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (ex == NULL)
		return false;
	X509_add_ext(cert, ex, -1);
	X509_EXTENSION_free(ex);
	return true;
}

static X509 *
make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, bool ca)
{
	X509 *c = X509_new();
	unsigned char serial[16];
	BIGNUM *bn = NULL;
	X509_NAME *name;

	if (c == NULL)
		return NULL;
	X509_set_version(c, 2);
	RAND_bytes(serial, sizeof(serial));
	serial[0] &= 0x7f;
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c));
	BN_free(bn);
	X509_gmtime_adj(X509_getm_notBefore(c), -3600);
	X509_gmtime_adj(X509_getm_notAfter(c), 30L * 24 * 3600);
	X509_set_pubkey(c, key);
	name = X509_get_subject_name(c);
	X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"cloudsim",
	    -1, -1, 0);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
	    0);
	X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name);
	if (ca) {
		add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign");
		add_ext(c, c, NID_subject_key_identifier, "hash");
	} else {
		add_ext(c, issuer, NID_basic_constraints, "critical,CA:FALSE");
		add_ext(c, issuer, NID_key_usage, "critical,digitalSignature,keyEncipherment");
		add_ext(c, issuer, NID_ext_key_usage, "serverAuth");
		add_ext(c, issuer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
		add_ext(c, issuer, NID_authority_key_identifier, "keyid");
	}
	if (X509_sign(c, issuer_key, EVP_sha256()) == 0) {
		X509_free(c);
		return NULL;
	}
	return c;
}

static char *
cert_pem(X509 *c)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *s;

	PEM_write_bio_X509(b, c);
	s = bio_text(b);
	BIO_free(b);
	return s;
}

static char *
key_pem(EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *s;

	PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
	s = bio_text(b);
	BIO_free(b);
	return s;
}

/* Generates the CA and the server certificate (or reuses those of an earlier run in DIR);
 * writes DIR/ca.pem.  On success the server key and certificate PEM are malloc'd into
 * *key_out / *cert_out. */
bool
cs_pki_init(const char *state_dir, char **key_out, char **cert_out, struct err *e)
{
	EVP_PKEY *cak = NULL, *srvk = NULL;
	X509 *ca = NULL, *srv = NULL;
	char *ca_text = NULL, path[1024];
	bool ok = false;

	/* a restart keeps the CA and the server certificate, so what callers stored stays
	 * valid (the state dir is 0700) */
	snprintf(path, sizeof(path), "%s/ca.pem", state_dir);
	ca_text = cs_read_file(path, NULL);
	snprintf(path, sizeof(path), "%s/tls-server-key.pem", state_dir);
	*key_out = ca_text ? cs_read_file(path, NULL) : NULL;
	snprintf(path, sizeof(path), "%s/tls-server.pem", state_dir);
	*cert_out = *key_out ? cs_read_file(path, NULL) : NULL;
	if (*cert_out != NULL) {
		free(ca_text);
		return true;
	}
	free(ca_text);
	free(*key_out);
	ca_text = *key_out = NULL;
	cak = ec_key();
	srvk = ec_key();
	if (cak == NULL || srvk == NULL) {
		err_set(e, 500, "cloudsim.pki", "key generation failed");
		goto cleanup;
	}
	ca = make_cert(cak, "cloudsim CA", NULL, cak, true);
	srv = ca ? make_cert(srvk, "127.0.0.1", ca, cak, false) : NULL;
	if (srv == NULL) {
		err_set(e, 500, "cloudsim.pki", "certificate generation failed");
		goto cleanup;
	}
	ca_text = cert_pem(ca);
	if (!cs_write_file(state_dir, "ca.pem", ca_text, e))
		goto cleanup;
	*key_out = key_pem(srvk);
	*cert_out = cert_pem(srv);
	if (!cs_write_file(state_dir, "tls-server-key.pem", *key_out, e) ||
	    !cs_write_file(state_dir, "tls-server.pem", *cert_out, e))
		goto cleanup;
	ok = true;
cleanup:
	free(ca_text);
	X509_free(ca);
	X509_free(srv);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(srvk);
	return ok;
}

/* A fresh RSA-2048 key: private PEM returned (PKCS#8), public PEM in *pub. */
char *
cs_rsa_generate_pem(char **pub)
{
	EVP_PKEY *k = EVP_RSA_gen(2048);
	BIO *b;
	char *priv;

	if (k == NULL)
		return NULL;
	priv = key_pem(k);
	b = BIO_new(BIO_s_mem());
	PEM_write_bio_PUBKEY(b, k);
	*pub = bio_text(b);
	BIO_free(b);
	EVP_PKEY_free(k);
	return priv;
}

/* Public PEM (SubjectPublicKeyInfo) of an RSA private key PEM; NULL when unreadable. */
char *
cs_public_from_private(const char *pem)
{
	BIO *in = BIO_new_mem_buf(pem, -1), *out;
	EVP_PKEY *k = PEM_read_bio_PrivateKey(in, NULL, NULL, NULL);
	char *s = NULL;

	BIO_free(in);
	if (k == NULL || EVP_PKEY_get_base_id(k) != EVP_PKEY_RSA) {
		EVP_PKEY_free(k);
		return NULL;
	}
	out = BIO_new(BIO_s_mem());
	PEM_write_bio_PUBKEY(out, k);
	s = bio_text(out);
	BIO_free(out);
	EVP_PKEY_free(k);
	return s;
}
