/* hash: the one string hash of the tree (32-bit FNV-1a): cache buckets and made-up stable
 * ids. Not for anything an attacker may choose collisions in to some gain. */
#ifndef FLEET_CORE_HASH_H
#define FLEET_CORE_HASH_H

#include <stdint.h>

/* FNV-1a of the NUL-terminated s. */
uint32_t hash_str(const char *s);

#endif
