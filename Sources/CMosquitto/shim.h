// Thin shim over libmosquitto, the MQTT client library.
//
// libmosquitto is opened at its first use, not linked: it brings OpenSSL's libssl and libcrypto with
// it (about 1.5 MiB resident once mapped), and a daemon that is not onboarded, or talks REST, never
// connects to a broker. So every function is called through a pointer looked up when `cmosq_open`
// runs. The table's fields take their types from mosquitto.h itself, so a pointer cannot disagree
// with the function it holds.
#ifndef AGRIGPS_CMOSQUITTO_SHIM_H
#define AGRIGPS_CMOSQUITTO_SHIM_H

#include <mosquitto.h>
#include <dlfcn.h>
#include <stdio.h>

#if LIBMOSQUITTO_MAJOR < 2
#error "agrigps needs libmosquitto 2.0 or later (Debian 12: libmosquitto-dev)"
#endif

// The library's soname: the ABI these headers describe (Debian's libmosquitto1).
#define CMOSQ_SONAME "libmosquitto.so.1"

#define CMOSQ_FUNCTIONS(X) \
    X(lib_init) X(lib_version) X(new) X(destroy) X(user_data_set) X(userdata) X(int_option) X(tls_set) \
    X(reconnect_delay_set) X(connect_callback_set) X(disconnect_callback_set) X(message_callback_set) \
    X(publish_callback_set) X(strerror) X(threaded_set) X(connect_async) X(loop_forever) X(reconnect) \
    X(publish) X(disconnect) X(connack_string) X(subscribe)

#define CMOSQ_FIELD(name) __typeof__(mosquitto_##name) *name;
struct cmosq_functions {
    CMOSQ_FUNCTIONS(CMOSQ_FIELD)
};
#undef CMOSQ_FIELD

// Filled once by cmosq_open; all NULL until then, and the wrappers below then fail softly. A static
// inside a function, because Swift emits a header's inline functions but not its static variables.
static inline struct cmosq_functions *cmosq_table(void) {
    static struct cmosq_functions table;
    return &table;
}
#define cmosq_fn (*cmosq_table())

static inline int cmosq_lookup(void *library, const char *name, void **slot, char *error, size_t size) {
    *slot = dlsym(library, name);
    if (*slot == NULL) snprintf(error, size, "%s has no %s", CMOSQ_SONAME, name);
    return *slot != NULL;
}

// Opens libmosquitto and runs mosquitto_lib_init. Returns 0 when it is ready; otherwise fills
// `error` with why not. Not thread-safe: the caller runs it once (a Swift static).
static inline int cmosq_open(char *error, size_t size) {
    void *library = dlopen(CMOSQ_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(error, size, "%s", reason != NULL ? reason : CMOSQ_SONAME " cannot be opened");
        return -1;
    }
    struct cmosq_functions found;
#define CMOSQ_LOOKUP(name) && cmosq_lookup(library, "mosquitto_" #name, (void **)&found.name, error, size)
    int ok = 1 CMOSQ_FUNCTIONS(CMOSQ_LOOKUP);
#undef CMOSQ_LOOKUP
    if (!ok) return -1;
    int major = 0, minor = 0, revision = 0;
    found.lib_version(&major, &minor, &revision);
    if (major < 2) {
        snprintf(error, size, "%s is version %d.%d.%d; agrigps needs 2.0 or later", CMOSQ_SONAME, major, minor, revision);
        return -1;
    }
    int code = found.lib_init();
    if (code != MOSQ_ERR_SUCCESS) {
        snprintf(error, size, "mosquitto_lib_init failed (%d)", code);
        return -1;
    }
    cmosq_fn = found;
    return 0;
}

// The wrappers: each calls its function, or answers as a refusal when the library is not open.
static inline struct mosquitto *cmosq_new(const char *id, bool clean_session, void *object) {
    return cmosq_fn.new != NULL ? cmosq_fn.new(id, clean_session, object) : NULL;
}

static inline void cmosq_destroy(struct mosquitto *handle) {
    if (cmosq_fn.destroy != NULL) cmosq_fn.destroy(handle);
}

static inline void cmosq_user_data_set(struct mosquitto *handle, void *object) {
    if (cmosq_fn.user_data_set != NULL) cmosq_fn.user_data_set(handle, object);
}

static inline void *cmosq_userdata(struct mosquitto *handle) {
    return cmosq_fn.userdata != NULL ? cmosq_fn.userdata(handle) : NULL;
}

static inline int cmosq_int_option(struct mosquitto *handle, enum mosq_opt_t option, int value) {
    return cmosq_fn.int_option != NULL ? cmosq_fn.int_option(handle, option, value) : MOSQ_ERR_NOT_SUPPORTED;
}

typedef int (*cmosq_password_callback)(char *buffer, int size, int rwflag, void *userdata);

static inline int cmosq_tls_set(struct mosquitto *handle, const char *cafile, const char *capath, const char *certfile,
                                const char *keyfile, cmosq_password_callback callback) {
    return cmosq_fn.tls_set != NULL ? cmosq_fn.tls_set(handle, cafile, capath, certfile, keyfile, callback) : MOSQ_ERR_NOT_SUPPORTED;
}

static inline int cmosq_reconnect_delay_set(struct mosquitto *handle, unsigned int delay, unsigned int maximum, bool exponential) {
    return cmosq_fn.reconnect_delay_set != NULL ? cmosq_fn.reconnect_delay_set(handle, delay, maximum, exponential) : MOSQ_ERR_NOT_SUPPORTED;
}

typedef void (*cmosq_code_callback)(struct mosquitto *, void *, int);
typedef void (*cmosq_message_callback)(struct mosquitto *, void *, const struct mosquitto_message *);

static inline void cmosq_connect_callback_set(struct mosquitto *handle, cmosq_code_callback callback) {
    if (cmosq_fn.connect_callback_set != NULL) cmosq_fn.connect_callback_set(handle, callback);
}

static inline void cmosq_disconnect_callback_set(struct mosquitto *handle, cmosq_code_callback callback) {
    if (cmosq_fn.disconnect_callback_set != NULL) cmosq_fn.disconnect_callback_set(handle, callback);
}

static inline void cmosq_publish_callback_set(struct mosquitto *handle, cmosq_code_callback callback) {
    if (cmosq_fn.publish_callback_set != NULL) cmosq_fn.publish_callback_set(handle, callback);
}

static inline void cmosq_message_callback_set(struct mosquitto *handle, cmosq_message_callback callback) {
    if (cmosq_fn.message_callback_set != NULL) cmosq_fn.message_callback_set(handle, callback);
}

static inline const char *cmosq_strerror(int code) {
    return cmosq_fn.strerror != NULL ? cmosq_fn.strerror(code) : "libmosquitto is not loaded";
}

static inline const char *cmosq_connack_string(int code) {
    return cmosq_fn.connack_string != NULL ? cmosq_fn.connack_string(code) : "libmosquitto is not loaded";
}

static inline int cmosq_threaded_set(struct mosquitto *handle, bool threaded) {
    return cmosq_fn.threaded_set != NULL ? cmosq_fn.threaded_set(handle, threaded) : MOSQ_ERR_NOT_SUPPORTED;
}

static inline int cmosq_connect_async(struct mosquitto *handle, const char *host, int port, int keepalive) {
    return cmosq_fn.connect_async != NULL ? cmosq_fn.connect_async(handle, host, port, keepalive) : MOSQ_ERR_NOT_SUPPORTED;
}

static inline int cmosq_loop_forever(struct mosquitto *handle, int timeout, int max_packets) {
    return cmosq_fn.loop_forever != NULL ? cmosq_fn.loop_forever(handle, timeout, max_packets) : MOSQ_ERR_NOT_SUPPORTED;
}

static inline int cmosq_reconnect(struct mosquitto *handle) {
    return cmosq_fn.reconnect != NULL ? cmosq_fn.reconnect(handle) : MOSQ_ERR_NOT_SUPPORTED;
}

static inline int cmosq_publish(struct mosquitto *handle, int *mid, const char *topic, int length, const void *payload, int qos, bool retain) {
    return cmosq_fn.publish != NULL ? cmosq_fn.publish(handle, mid, topic, length, payload, qos, retain) : MOSQ_ERR_NOT_SUPPORTED;
}

static inline int cmosq_subscribe(struct mosquitto *handle, int *mid, const char *pattern, int qos) {
    return cmosq_fn.subscribe != NULL ? cmosq_fn.subscribe(handle, mid, pattern, qos) : MOSQ_ERR_NOT_SUPPORTED;
}

static inline int cmosq_disconnect(struct mosquitto *handle) {
    return cmosq_fn.disconnect != NULL ? cmosq_fn.disconnect(handle) : MOSQ_ERR_NOT_SUPPORTED;
}

#endif
