// OpenSSL's libcrypto (the one libcurl already loads), for checking a credential before it is
// stored: that the secret opens the key, that the certificate parses, that the two belong together,
// and when the certificate expires; and for the cab view's password hash (PBKDF2), session tokens
// (RAND_bytes) and constant-time comparison (CRYPTO_memcmp). Swift calls these functions directly; this header only gathers
// what it needs to see.
#ifndef AGRIGPS_COPENSSL_SHIM_H
#define AGRIGPS_COPENSSL_SHIM_H

#include <time.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>

#if OPENSSL_VERSION_NUMBER < 0x10101000L
#error "agrigps needs OpenSSL 1.1.1 or later for ASN1_TIME_to_tm"
#endif

#endif
