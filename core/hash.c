/* hash: 32-bit FNV-1a of a string. */
#include "core/hash.h"

uint32_t
hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}
