#ifndef AGRIGPS_CZLIB_SHIM_H
#define AGRIGPS_CZLIB_SHIM_H

#include <zlib.h>

// inflateInit2 is a macro (it passes the library's version and the stream's size), which Swift
// cannot call. Negative window bits: raw deflate, as a zip entry holds it, without zlib's header.
static inline int agrigps_inflate_init_raw(z_stream *stream) {
    return inflateInit2(stream, -MAX_WBITS);
}

#endif
