// Thin shim over OpenSSL's libcrypto, for checking a credential before it is stored (that the secret
// opens the key, that the certificate parses, that the two belong together, and when the
// certificate expires), and for the cab view's password hash (PBKDF2), session tokens (RAND_bytes)
// and constant-time comparison (CRYPTO_memcmp).
//
// libcrypto is opened at the first call, not linked: it is about 1.2 MiB resident once mapped, and a
// daemon that is not onboarded never needs it. The first wrapper called opens it (once, under
// pthread_once); until then, and if it cannot be opened, every wrapper answers as a failure, so a
// check fails closed. The table's fields take their types from OpenSSL's headers.
#ifndef AGRIGPS_COPENSSL_SHIM_H
#define AGRIGPS_COPENSSL_SHIM_H

#include <time.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>

#if OPENSSL_VERSION_NUMBER < 0x30000000L
#error "agrigps needs OpenSSL 3 (Debian 12: libssl-dev), whose library is libcrypto.so.3"
#endif

// The library's soname: the ABI these headers describe (Debian's libssl3).
#define CSSL_SONAME "libcrypto.so.3"

#define CSSL_FUNCTIONS(X) \
    X(ERR_clear_error) X(PEM_read_bio_PrivateKey) X(EVP_PKEY_free) X(PEM_read_bio_X509) X(X509_free) \
    X(X509_check_private_key) X(X509_get0_notAfter) X(ASN1_TIME_to_tm) X(BIO_new_mem_buf) X(BIO_free) \
    X(PKCS5_PBKDF2_HMAC) X(EVP_sha256) X(RAND_bytes) X(CRYPTO_memcmp)

#define CSSL_FIELD(name) __typeof__(name) *name;
struct cssl_state {
    pthread_once_t once;
    int ready;
    char problem[512];
    struct cssl_functions {
        CSSL_FUNCTIONS(CSSL_FIELD)
    } fn;
};
#undef CSSL_FIELD

// A static inside a function, because Swift emits a header's inline functions but not its static
// variables.
static inline struct cssl_state *cssl_shared(void) {
    static struct cssl_state state = { PTHREAD_ONCE_INIT, 0, "", { 0 } };
    return &state;
}

static inline int cssl_lookup(void *library, const char *name, void **slot) {
    *slot = dlsym(library, name);
    if (*slot == NULL) snprintf(cssl_shared()->problem, sizeof cssl_shared()->problem, "%s has no %s", CSSL_SONAME, name);
    return *slot != NULL;
}

static inline void cssl_load(void) {
    struct cssl_state *state = cssl_shared();
    void *library = dlopen(CSSL_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(state->problem, sizeof state->problem, "%s", reason != NULL ? reason : CSSL_SONAME " cannot be opened");
        return;
    }
    struct cssl_functions found;
#define CSSL_LOOKUP(name) && cssl_lookup(library, #name, (void **)&found.name)
    int ok = 1 CSSL_FUNCTIONS(CSSL_LOOKUP);
#undef CSSL_LOOKUP
    if (!ok) return;
    state->fn = found;
    state->ready = 1;
}

// Opens libcrypto on the first call; 1 when it can be used.
static inline int cssl_ready(void) {
    struct cssl_state *state = cssl_shared();
    pthread_once(&state->once, cssl_load);
    return state->ready;
}

// Why libcrypto cannot be used, or NULL when it can.
static inline const char *cssl_problem(void) {
    return cssl_ready() ? NULL : cssl_shared()->problem;
}

#define cssl_fn (cssl_shared()->fn)

static inline void cssl_clear_error(void) {
    if (cssl_ready()) cssl_fn.ERR_clear_error();
}

static inline BIO *cssl_memory_bio(const void *bytes, int length) {
    return cssl_ready() ? cssl_fn.BIO_new_mem_buf(bytes, length) : NULL;
}

static inline void cssl_bio_free(BIO *bio) {
    if (cssl_ready()) cssl_fn.BIO_free(bio);
}

// The private key in `bio`, opened with `secret` (a NUL-terminated passphrase); NULL if it does not open.
static inline EVP_PKEY *cssl_read_private_key(BIO *bio, const char *secret) {
    return cssl_ready() ? cssl_fn.PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)secret) : NULL;
}

static inline void cssl_key_free(EVP_PKEY *key) {
    if (cssl_ready()) cssl_fn.EVP_PKEY_free(key);
}

static inline X509 *cssl_read_certificate(BIO *bio) {
    return cssl_ready() ? cssl_fn.PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
}

static inline void cssl_certificate_free(X509 *certificate) {
    if (cssl_ready()) cssl_fn.X509_free(certificate);
}

// 1 when `key` is the private key of `certificate`.
static inline int cssl_key_matches(X509 *certificate, EVP_PKEY *key) {
    return cssl_ready() ? cssl_fn.X509_check_private_key(certificate, key) : 0;
}

// Fills `expiry` with the certificate's notAfter (UTC); 1 on success.
static inline int cssl_not_after(const X509 *certificate, struct tm *expiry) {
    if (!cssl_ready()) return 0;
    const ASN1_TIME *time = cssl_fn.X509_get0_notAfter(certificate);
    return time != NULL && cssl_fn.ASN1_TIME_to_tm(time, expiry) == 1;
}

// PBKDF2 with HMAC-SHA-256; 1 on success.
static inline int cssl_pbkdf2_sha256(const char *password, int length, const unsigned char *salt, int saltLength,
                                     int iterations, int outputLength, unsigned char *output) {
    if (!cssl_ready()) return 0;
    return cssl_fn.PKCS5_PBKDF2_HMAC(password, length, salt, saltLength, iterations, cssl_fn.EVP_sha256(), outputLength, output);
}

// 1 when `buffer` was filled with cryptographically random bytes.
static inline int cssl_random_bytes(unsigned char *buffer, int count) {
    return cssl_ready() ? cssl_fn.RAND_bytes(buffer, count) : 0;
}

// 0 only when the bytes are equal and the comparison could run in constant time.
static inline int cssl_memcmp(const void *left, const void *right, size_t count) {
    return cssl_ready() ? cssl_fn.CRYPTO_memcmp(left, right, count) : 1;
}

#endif
