// Thin shim over libcurl's easy API, for the CurlHTTP module alone (each module that includes it
// would hold a table of its own).
//
// libcurl is opened at its first use, not linked: it brings GnuTLS, Kerberos, LDAP, SSH and more
// with it (about 3.5 MiB resident once mapped), and a daemon that is not onboarded never talks
// HTTPS. So every function is called through a pointer looked up when `ccurl_open` runs, and the
// variadic curl_easy_setopt and curl_easy_getinfo, which Swift cannot call, get a typed wrapper for
// each kind of argument.
#ifndef AGRIGPS_CCURL_SHIM_H
#define AGRIGPS_CCURL_SHIM_H

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>
#include <stdio.h>

#if LIBCURL_VERSION_NUM < 0x074700
#error "agrigps needs libcurl 7.71 or later for CURLOPT_SSLCERT_BLOB"
#endif

// The library's soname: the ABI these headers describe (Debian's libcurl4).
#define CCURL_SONAME "libcurl.so.4"

struct ccurl_functions {
    CURLcode (*global_init)(long flags);
    curl_version_info_data *(*version_info)(CURLversion stamp);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *handle);
    void (*easy_reset)(CURL *handle);
    CURLcode (*easy_perform)(CURL *handle);
    const char *(*easy_strerror)(CURLcode code);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    CURLHcode (*easy_header)(CURL *handle, const char *name, size_t index, unsigned int origin, int request,
                             struct curl_header **header);
    time_t (*getdate)(const char *text, const time_t *unused);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *text);
    void (*slist_free_all)(struct curl_slist *list);
};

// Filled once by ccurl_open; all NULL until then, and the wrappers below then fail softly. A static
// inside a function, because Swift emits a header's inline functions but not its static variables.
static inline struct ccurl_functions *ccurl_table(void) {
    static struct ccurl_functions table;
    return &table;
}
#define ccurl_fn (*ccurl_table())

static inline int ccurl_lookup(void *library, const char *name, void **slot, char *error, size_t size) {
    *slot = dlsym(library, name);
    if (*slot == NULL) snprintf(error, size, "%s has no %s", CCURL_SONAME, name);
    return *slot != NULL;
}

// Opens libcurl and runs curl_global_init. Returns 0 when it is ready; otherwise fills `error` with
// why not. Not thread-safe: the caller runs it once (a Swift static).
static inline int ccurl_open(char *error, size_t size) {
    void *library = dlopen(CCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(error, size, "%s", reason != NULL ? reason : CCURL_SONAME " cannot be opened");
        return -1;
    }
    struct ccurl_functions found;
    int ok = ccurl_lookup(library, "curl_global_init", (void **)&found.global_init, error, size)
        && ccurl_lookup(library, "curl_version_info", (void **)&found.version_info, error, size)
        && ccurl_lookup(library, "curl_easy_init", (void **)&found.easy_init, error, size)
        && ccurl_lookup(library, "curl_easy_cleanup", (void **)&found.easy_cleanup, error, size)
        && ccurl_lookup(library, "curl_easy_reset", (void **)&found.easy_reset, error, size)
        && ccurl_lookup(library, "curl_easy_perform", (void **)&found.easy_perform, error, size)
        && ccurl_lookup(library, "curl_easy_strerror", (void **)&found.easy_strerror, error, size)
        && ccurl_lookup(library, "curl_easy_setopt", (void **)&found.easy_setopt, error, size)
        && ccurl_lookup(library, "curl_easy_getinfo", (void **)&found.easy_getinfo, error, size)
        && ccurl_lookup(library, "curl_easy_header", (void **)&found.easy_header, error, size)
        && ccurl_lookup(library, "curl_getdate", (void **)&found.getdate, error, size)
        && ccurl_lookup(library, "curl_slist_append", (void **)&found.slist_append, error, size)
        && ccurl_lookup(library, "curl_slist_free_all", (void **)&found.slist_free_all, error, size);
    if (!ok) return -1;
    // The options agrigps sets (CURLOPT_PROTOCOLS_STR the newest) need 7.85.
    curl_version_info_data *info = found.version_info(CURLVERSION_NOW);
    if (info == NULL || info->version_num < 0x075500) {
        snprintf(error, size, "%s is version %s; agrigps needs 7.85 or later", CCURL_SONAME,
                 info != NULL && info->version != NULL ? info->version : "unknown");
        return -1;
    }
    CURLcode code = found.global_init(CURL_GLOBAL_DEFAULT);
    if (code != CURLE_OK) {
        snprintf(error, size, "curl_global_init failed (CURLcode %d)", (int)code);
        return -1;
    }
    ccurl_fn = found;
    return 0;
}

static inline CURL *ccurl_easy_init(void) {
    return ccurl_fn.easy_init != NULL ? ccurl_fn.easy_init() : NULL;
}

static inline void ccurl_easy_cleanup(CURL *handle) {
    if (ccurl_fn.easy_cleanup != NULL) ccurl_fn.easy_cleanup(handle);
}

static inline void ccurl_easy_reset(CURL *handle) {
    if (ccurl_fn.easy_reset != NULL) ccurl_fn.easy_reset(handle);
}

static inline CURLcode ccurl_easy_perform(CURL *handle) {
    return ccurl_fn.easy_perform != NULL ? ccurl_fn.easy_perform(handle) : CURLE_FAILED_INIT;
}

static inline const char *ccurl_easy_strerror(CURLcode code) {
    return ccurl_fn.easy_strerror != NULL ? ccurl_fn.easy_strerror(code) : "libcurl is not loaded";
}

// -1 when `text` is not a date.
static inline time_t ccurl_getdate(const char *text) {
    return ccurl_fn.getdate != NULL ? ccurl_fn.getdate(text, NULL) : (time_t)-1;
}

// NULL when libcurl is out of memory (or not loaded); `list` is then left as it was.
static inline struct curl_slist *ccurl_slist_append(struct curl_slist *list, const char *text) {
    return ccurl_fn.slist_append != NULL ? ccurl_fn.slist_append(list, text) : NULL;
}

static inline void ccurl_slist_free_all(struct curl_slist *list) {
    if (ccurl_fn.slist_free_all != NULL) ccurl_fn.slist_free_all(list);
}

static inline CURLcode ccurl_set_long(CURL *handle, CURLoption option, long value) {
    return ccurl_fn.easy_setopt != NULL ? ccurl_fn.easy_setopt(handle, option, value) : CURLE_FAILED_INIT;
}

static inline CURLcode ccurl_set_string(CURL *handle, CURLoption option, const char *value) {
    return ccurl_fn.easy_setopt != NULL ? ccurl_fn.easy_setopt(handle, option, value) : CURLE_FAILED_INIT;
}

static inline CURLcode ccurl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return ccurl_fn.easy_setopt != NULL ? ccurl_fn.easy_setopt(handle, option, value) : CURLE_FAILED_INIT;
}

// libcurl copies the bytes (CURL_BLOB_COPY), so the caller's buffer may go away afterwards.
static inline CURLcode ccurl_set_blob(CURL *handle, CURLoption option, const void *data, size_t length) {
    struct curl_blob blob;
    blob.data = (void *)data;
    blob.len = length;
    blob.flags = CURL_BLOB_COPY;
    return ccurl_fn.easy_setopt != NULL ? ccurl_fn.easy_setopt(handle, option, &blob) : CURLE_FAILED_INIT;
}

typedef size_t (*ccurl_write_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode ccurl_set_write_callback(CURL *handle, ccurl_write_callback callback, void *context) {
    if (ccurl_fn.easy_setopt == NULL) return CURLE_FAILED_INIT;
    CURLcode code = ccurl_fn.easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
    return code != CURLE_OK ? code : ccurl_fn.easy_setopt(handle, CURLOPT_WRITEDATA, context);
}

typedef size_t (*ccurl_read_callback)(char *buffer, size_t size, size_t count, void *context);

// The request body comes from `callback`. No seek callback is set, so libcurl cannot rewind it: it
// never resends a body behind the caller's back on a fresh connection after a reused one died.
static inline CURLcode ccurl_set_read_callback(CURL *handle, ccurl_read_callback callback, void *context) {
    if (ccurl_fn.easy_setopt == NULL) return CURLE_FAILED_INIT;
    CURLcode code = ccurl_fn.easy_setopt(handle, CURLOPT_READFUNCTION, callback);
    return code != CURLE_OK ? code : ccurl_fn.easy_setopt(handle, CURLOPT_READDATA, context);
}

typedef int (*ccurl_progress_callback)(void *context, curl_off_t download_total, curl_off_t downloaded,
                                      curl_off_t upload_total, curl_off_t uploaded);
// `callback` is called about once a second, and more often while data flows; a nonzero return ends
// the transfer with CURLE_ABORTED_BY_CALLBACK. How a request waiting on a silent server is cancelled.
static inline CURLcode ccurl_set_progress_callback(CURL *handle, ccurl_progress_callback callback, void *context) {
    if (ccurl_fn.easy_setopt == NULL) return CURLE_FAILED_INIT;
    CURLcode code = ccurl_fn.easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
    if (code == CURLE_OK) code = ccurl_fn.easy_setopt(handle, CURLOPT_XFERINFODATA, context);
    return code != CURLE_OK ? code : ccurl_fn.easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
}

// Bytes of the request body sent; -1 when libcurl cannot say.
static inline long long ccurl_size_uploaded(CURL *handle) {
    curl_off_t size = 0;
    if (ccurl_fn.easy_getinfo == NULL || ccurl_fn.easy_getinfo(handle, CURLINFO_SIZE_UPLOAD_T, &size) != CURLE_OK) return -1;
    return (long long)size;
}

// The value of the response header `name` (its last occurrence), or NULL. Owned by libcurl until the
// next request on the handle.
static inline const char *ccurl_header(CURL *handle, const char *name) {
    struct curl_header *header = NULL;
    if (ccurl_fn.easy_header == NULL) return NULL;
    if (ccurl_fn.easy_header(handle, name, 0, CURLH_HEADER, -1, &header) != CURLHE_OK || header == NULL) return NULL;
    return header->value;
}

static inline long ccurl_response_code(CURL *handle) {
    long code = 0;
    if (ccurl_fn.easy_getinfo != NULL) ccurl_fn.easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

#endif
