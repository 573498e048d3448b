// Thin shim over libcurl's easy and multi APIs, for one Swift file alone, CurlClient.swift: the
// table below is a static of an inline function, of which every object file that calls it (each
// Swift file in a debug build) holds a copy of its own, filled only where ccurl_open ran.
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
#include <pthread.h>
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
    const char *(*easy_strerror)(CURLcode code);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    CURLHcode (*easy_header)(CURL *handle, const char *name, size_t index, unsigned int origin, int request,
                             struct curl_header **header);
    time_t (*getdate)(const char *text, const time_t *unused);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *text);
    void (*slist_free_all)(struct curl_slist *list);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_perform)(CURLM *multi, int *running);
    CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *ready);
    CURLMcode (*multi_wakeup)(CURLM *multi);
    CURLMsg *(*multi_info_read)(CURLM *multi, int *queued);
    CURLSH *(*share_init)(void);
    CURLSHcode (*share_setopt)(CURLSH *share, CURLSHoption option, ...);
    CURLSHcode (*share_cleanup)(CURLSH *share);
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
        && ccurl_lookup(library, "curl_easy_strerror", (void **)&found.easy_strerror, error, size)
        && ccurl_lookup(library, "curl_easy_setopt", (void **)&found.easy_setopt, error, size)
        && ccurl_lookup(library, "curl_easy_getinfo", (void **)&found.easy_getinfo, error, size)
        && ccurl_lookup(library, "curl_easy_header", (void **)&found.easy_header, error, size)
        && ccurl_lookup(library, "curl_getdate", (void **)&found.getdate, error, size)
        && ccurl_lookup(library, "curl_slist_append", (void **)&found.slist_append, error, size)
        && ccurl_lookup(library, "curl_slist_free_all", (void **)&found.slist_free_all, error, size)
        && ccurl_lookup(library, "curl_multi_init", (void **)&found.multi_init, error, size)
        && ccurl_lookup(library, "curl_multi_add_handle", (void **)&found.multi_add_handle, error, size)
        && ccurl_lookup(library, "curl_multi_remove_handle", (void **)&found.multi_remove_handle, error, size)
        && ccurl_lookup(library, "curl_multi_perform", (void **)&found.multi_perform, error, size)
        && ccurl_lookup(library, "curl_multi_poll", (void **)&found.multi_poll, error, size)
        && ccurl_lookup(library, "curl_multi_wakeup", (void **)&found.multi_wakeup, error, size)
        && ccurl_lookup(library, "curl_multi_info_read", (void **)&found.multi_info_read, error, size)
        && ccurl_lookup(library, "curl_share_init", (void **)&found.share_init, error, size)
        && ccurl_lookup(library, "curl_share_setopt", (void **)&found.share_setopt, error, size)
        && ccurl_lookup(library, "curl_share_cleanup", (void **)&found.share_cleanup, error, size);
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

// The multi handle all transfers run in, on one thread; NULL when libcurl is not loaded or out of memory.
static inline CURLM *ccurl_multi_init(void) {
    return ccurl_fn.multi_init != NULL ? ccurl_fn.multi_init() : NULL;
}

static inline CURLMcode ccurl_multi_add_handle(CURLM *multi, CURL *handle) {
    return ccurl_fn.multi_add_handle != NULL ? ccurl_fn.multi_add_handle(multi, handle) : CURLM_INTERNAL_ERROR;
}

static inline CURLMcode ccurl_multi_remove_handle(CURLM *multi, CURL *handle) {
    return ccurl_fn.multi_remove_handle != NULL ? ccurl_fn.multi_remove_handle(multi, handle) : CURLM_INTERNAL_ERROR;
}

static inline CURLMcode ccurl_multi_perform(CURLM *multi) {
    int running = 0;
    return ccurl_fn.multi_perform != NULL ? ccurl_fn.multi_perform(multi, &running) : CURLM_INTERNAL_ERROR;
}

// Waits for activity on any transfer, for libcurl's own next timeout, for `timeout_ms` at most, or
// until ccurl_multi_wakeup is called from another thread.
static inline CURLMcode ccurl_multi_poll(CURLM *multi, int timeout_ms) {
    return ccurl_fn.multi_poll != NULL ? ccurl_fn.multi_poll(multi, NULL, 0, timeout_ms, NULL) : CURLM_INTERNAL_ERROR;
}

// The one multi call that may come from any thread.
static inline CURLMcode ccurl_multi_wakeup(CURLM *multi) {
    return ccurl_fn.multi_wakeup != NULL ? ccurl_fn.multi_wakeup(multi) : CURLM_INTERNAL_ERROR;
}

// The next finished transfer: 1 with its handle and result, 0 when none is left to report.
static inline int ccurl_multi_next_done(CURLM *multi, CURL **handle, CURLcode *result) {
    if (ccurl_fn.multi_info_read == NULL) return 0;
    int queued = 0;
    CURLMsg *message;
    while ((message = ccurl_fn.multi_info_read(multi, &queued)) != NULL) {
        if (message->msg != CURLMSG_DONE) continue;
        *handle = message->easy_handle;
        *result = message->data.result;
        return 1;
    }
    return 0;
}

// One lock for every share: a share is used by the HTTP thread's transfers and, when a handle is
// given it or cleaned up, by the caller's thread.
static inline pthread_mutex_t *ccurl_share_mutex(void) {
    static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    return &mutex;
}

static inline void ccurl_share_lock(CURL *handle, curl_lock_data data, curl_lock_access access, void *context) {
    (void)handle, (void)data, (void)access, (void)context;
    pthread_mutex_lock(ccurl_share_mutex());
}

static inline void ccurl_share_unlock(CURL *handle, curl_lock_data data, void *context) {
    (void)handle, (void)data, (void)context;
    pthread_mutex_unlock(ccurl_share_mutex());
}

// A connection cache of its own, for the handles given it with CURLOPT_SHARE, inside the one multi
// handle: the connections of one client and one set of credentials never serve another. NULL when
// libcurl is not loaded, out of memory, or refuses.
static inline CURLSH *ccurl_share_connections(void) {
    if (ccurl_fn.share_init == NULL) return NULL;
    CURLSH *share = ccurl_fn.share_init();
    if (share == NULL) return NULL;
    if (ccurl_fn.share_setopt(share, CURLSHOPT_LOCKFUNC, ccurl_share_lock) != CURLSHE_OK
        || ccurl_fn.share_setopt(share, CURLSHOPT_UNLOCKFUNC, ccurl_share_unlock) != CURLSHE_OK
        || ccurl_fn.share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK
        || ccurl_fn.share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
        ccurl_fn.share_cleanup(share);
        return NULL;
    }
    return share;
}

// Closes the share's connections; fails (CURLSHE_IN_USE) while a handle still has it.
static inline CURLSHcode ccurl_share_cleanup(CURLSH *share) {
    return ccurl_fn.share_cleanup != NULL ? ccurl_fn.share_cleanup(share) : CURLSHE_NOT_BUILT_IN;
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
