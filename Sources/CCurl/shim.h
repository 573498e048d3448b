// Thin shim over libcurl's easy API: curl_easy_setopt and curl_easy_getinfo are variadic, which Swift
// cannot call, so each argument kind gets a typed wrapper.
#ifndef AGRIGPS_CCURL_SHIM_H
#define AGRIGPS_CCURL_SHIM_H

#include <curl/curl.h>

#if LIBCURL_VERSION_NUM < 0x074700
#error "agrigps needs libcurl 7.71 or later for CURLOPT_SSLCERT_BLOB"
#endif

typedef size_t (*ccurl_write_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode ccurl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

// libcurl copies the bytes (CURL_BLOB_COPY), so the caller's buffer may go away afterwards.
static inline CURLcode ccurl_set_blob(CURL *handle, CURLoption option, const void *data, size_t length) {
    struct curl_blob blob;
    blob.data = (void *)data;
    blob.len = length;
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(handle, option, &blob);
}

static inline CURLcode ccurl_set_write_callback(CURL *handle, ccurl_write_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_WRITEDATA, context);
}

typedef size_t (*ccurl_read_callback)(char *buffer, size_t size, size_t count, void *context);

// The request body comes from `callback`. No seek callback is set, so libcurl cannot rewind it: it
// never resends a body behind the caller's back on a fresh connection after a reused one died.
static inline CURLcode ccurl_set_read_callback(CURL *handle, ccurl_read_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_READFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_READDATA, context);
}

// Bytes of the request body sent; -1 when libcurl cannot say.
static inline long long ccurl_size_uploaded(CURL *handle) {
    curl_off_t size = 0;
    if (curl_easy_getinfo(handle, CURLINFO_SIZE_UPLOAD_T, &size) != CURLE_OK) return -1;
    return (long long)size;
}

// The value of the response header `name` (its last occurrence), or NULL. Owned by libcurl until the
// next request on the handle.
static inline const char *ccurl_header(CURL *handle, const char *name) {
    struct curl_header *header = NULL;
    if (curl_easy_header(handle, name, 0, CURLH_HEADER, -1, &header) != CURLHE_OK || header == NULL) return NULL;
    return header->value;
}

static inline long ccurl_response_code(CURL *handle) {
    long code = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

#endif
