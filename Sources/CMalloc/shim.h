// glibc's malloc tuning (mallopt and its M_ constants), which Swift's Glibc module leaves out.
#ifndef AGRIGPS_CMALLOC_SHIM_H
#define AGRIGPS_CMALLOC_SHIM_H

#include <malloc.h>

#endif
