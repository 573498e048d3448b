// glibc (2.34 and later) declares posix_spawn_file_actions_addclosefrom_np only under _GNU_SOURCE,
// and defining that here would change struct layouts other modules import: declare it alone.
#ifndef AGRIGPS_CSPAWN_SHIM_H
#define AGRIGPS_CSPAWN_SHIM_H

#include <spawn.h>

extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);

#endif
