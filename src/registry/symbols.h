/* The symbolizer as the consumers reach it: the names /debug/pprof/symbol
 * serves (http/symbol.c), the server keeper's hooks that let an idle
 * symbolizer go (http/server.c), and the push thread's passing mode
 * (push/push.c). The registry's door to symbol/symbolize.h, so that no
 * consumer reaches the symbolizer: each call is the symbolizer's own, on
 * the caller's thread, under its locks and no other. */
#ifndef CPROF_REGISTRY_SYMBOLS_H
#define CPROF_REGISTRY_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

/* The process-wide symbolizer, held (cprof__symbolizer_acquire) for a run
 * of lookups: the names handed out stay valid until cprof__symbols_end. */
typedef struct cprof__symbolizer cprof__symbols_t;
cprof__symbols_t *cprof__symbols_begin(void);
void cprof__symbols_end(cprof__symbols_t *s);

/* The name the profiles give pc, for /debug/pprof/symbol: a marker's that
 * a debug=1 profile's "@" line holds (profile/marks.h, written into text),
 * else the symbol's containing pc, demangled; NULL when it has none. */
const char *cprof__symbols_name(cprof__symbols_t *s, uintptr_t pc, char *text, size_t len);

/* Names for another process's addresses, as a process tree's owner gives
 * them to its members' profiles (tree/symbolize.c): a member's code is
 * the owner's, the same files mapped at the same offsets.
 *
 * cprof__symbols_place finds where this process maps the code at
 * file_offset in file (a path as /proc/self/maps spells it) whose GNU
 * build ID is build_id ("" when the member did not say: the path alone
 * decides). Returns the mapping's index (0 or more) with the address in
 * *addr, this process's build ID of the file in *build_id_here ("" when
 * none) and in *lines whether its names come with files and lines; or
 * -ENOENT. */
int cprof__symbols_place(cprof__symbols_t *s, const char *file, const char *build_id,
                         uint64_t file_offset, uintptr_t *addr, const char **build_id_here,
                         int *lines);
/* One source-level frame (symbol/symbolize.h's cprof__frame_t). */
typedef struct cprof__symbols_frame {
  const char *function; /* NULL when unknown */
  const char *system_name;
  const char *file;
  int line;
} cprof__symbols_frame_t;
/* The frames at addr in mapping m (from cprof__symbols_place), innermost
 * first, into out[max]: how many, 0 when nothing is known. *offset (when
 * not NULL) is addr minus the start of the outermost function's symbol. */
int cprof__symbols_frames(cprof__symbols_t *s, int m, uintptr_t addr, cprof__symbols_frame_t *out,
                          int max, uintptr_t *offset);

/* The server's keeper (symbol/symbolize.h, cprof__symbolizer_trim and
 * cprof__symbolizer_set_used_hook): ends the kept instance once unused for
 * idle_ms, returning the milliseconds until it will have been, or -1 when
 * none is kept; and hook (or NULL) is called after each use of it. */
long cprof__symbols_trim(long idle_ms);
void cprof__symbols_set_used_hook(void (*hook)(void));

/* For the calling thread (cprof__symbolizer_passing): an instance that
 * comes to hold descriptors in its table is ended at its release rather
 * than kept. For the push's thread. */
void cprof__symbols_passing(int on);

#endif
