/* Addresses to names, at serve time only (never in a signal handler).
 *
 * One process-wide symbolizer, built on libdw's Dwfl over the modules listed
 * in /proc/self/maps, kept between requests and rebuilt when the maps change
 * (a dlopen, a dlclose). Callers hold it between acquire and release; the
 * strings it hands out stay valid until release. Between uses it holds no
 * descriptor, or, in the rare case it must, only in cprof's own descriptor
 * table (core/fds.h). */
#ifndef CPROF_SYMBOL_SYMBOLIZE_H
#define CPROF_SYMBOL_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One executable mapping of a file, as profile.proto's Mapping wants it. */
typedef struct cprof__mapping {
  uintptr_t start, limit; /* [start, limit) in this process */
  uint64_t offset;        /* file offset of start */
  const char *path;       /* the file; "[vdso]" for the vDSO */
  const char *build_id;   /* lower-case hex of the GNU build ID, "" if none */
  int has_symbols;        /* the module has a symbol table we read */
  int has_dwarf;          /* the module has DWARF line information */
  int heavy_dwarf;        /* ... and it is costly to load: see cprof__symbolizer_quick */
  int retired;            /* unmapped since by a dlclose (unwind/modules.h) */
} cprof__mapping_t;

/* One source-level frame. A machine address yields one or more: the
 * innermost inlined function first, the real (outermost) function last. */
typedef struct cprof__frame {
  const char *function; /* demangled, or NULL when unknown */
  /* The name as the system knows it, when it is another: the C++ mangled
   * name function was demangled from, or a symbol with its version. */
  const char *system_name;
  const char *file;     /* source path, or NULL */
  int line;             /* 0 when unknown */
} cprof__frame_t;

typedef struct cprof__symbolizer cprof__symbolizer_t;

/* Locks the process-wide symbolizer, refreshing it if /proc/self/maps has
 * changed since last time. Never NULL: without libdw's help it still knows
 * the mappings. */
cprof__symbolizer_t *cprof__symbolizer_acquire(void);
void cprof__symbolizer_release(cprof__symbolizer_t *s);

/* Ends the kept instance, with its memory, if it has not been used for
 * idle_ms. Returns the milliseconds left until it will have been, or -1
 * when none is kept. An instance that holds descriptors in cprof's own
 * table is ended only from a thread there (the server's keeper). */
long cprof__symbolizer_trim(long idle_ms);
/* hook (or NULL) is called after each use of the kept instance, with no
 * lock held: the server's keeper then knows to trim it later. */
void cprof__symbolizer_set_used_hook(void (*hook)(void));

/* The executable file-backed mappings, the main program's first, then by
 * address, then the retired modules' (unwind/modules.h), oldest first.
 * Returns the count and sets *out. */
int cprof__symbolizer_mappings(cprof__symbolizer_t *s, const cprof__mapping_t **out);
/* Index into the mappings of the one containing addr now, or -1. */
int cprof__symbolizer_mapping_of(cprof__symbolizer_t *s, uintptr_t addr);
/* Index of the mapping that held addr when a stack of module generation
 * gen was taken (unwind/modules.h): a retired module's, or else the one
 * mapped now; -1 for none. */
int cprof__symbolizer_mapping_then(cprof__symbolizer_t *s, uintptr_t addr, uint32_t gen);

/* Quick mode, for the calling thread: while on, modules whose DWARF would
 * take more than a few milliseconds to load (compressed debug sections, as
 * distributions ship libc's) are symbolized from their symbol tables alone:
 * function names without files, lines or inlined frames. For writing
 * profiles at exit, where the program is waiting: a reader of the profile
 * on the same machine gets the rest from the files (see
 * profile/builder_resolve.c). */
void cprof__symbolizer_quick(int on);

/* For the whole process, from now on: every use is in quick mode, on any
 * thread, and the instance is ended at its release, its freed memory given
 * back to the system (malloc_trim). For a member of a process tree
 * (tree/tree.h), one of maybe 64 workers, where the 16 MB that libc's
 * DWARF costs once loaded, kept between requests, would be paid by every
 * worker: its profiles name functions from the symbol tables, and `go tool
 * pprof` reads files and lines from the files themselves (the mappings
 * then claim none: see profile/builder_resolve.c). */
void cprof__symbolizer_frugal(int on);

/* For the calling thread, in a frugal process: while on, the instances
 * acquired are bare, the mappings alone (without build IDs), naming
 * nothing, built without libdw or opening a file. For a tree member
 * writing profile.proto: its owner names the addresses, once for the
 * tree, from its own mappings of the same files (tree/symbolize.c). */
void cprof__symbolizer_bare(int on);

/* For the calling thread: while on, an instance that comes to hold
 * descriptors in its table (core/fds.h) is ended at its release rather
 * than kept, so that the kept instance stays in the table of the threads
 * that use it most (the server's). For the push's thread, which
 * symbolizes once an interval, in a table of its own. */
void cprof__symbolizer_passing(int on);
/* Whether the calling thread's lookups in mapping i use its DWARF: it has
 * some, and quick mode does not leave it out. */
int cprof__symbolizer_uses_dwarf(cprof__symbolizer_t *s, int i);

/* For a profile's comments, when mapping i has no debug information
 * (DWARF) of its own or found for it: a sentence naming the file and its
 * build ID, and what would give it names (its -dbgsym package,
 * DEBUGINFOD_URLS) or how fetching it from debuginfod stands. Returns 1
 * with buf filled, or 0 when there is nothing to say. */
int cprof__symbolizer_no_symbols(cprof__symbolizer_t *s, int i, char *buf, size_t len);

/* Symbolizes one code address (an exact pc: callers pass return address - 1).
 * Fills up to max frames, innermost first, and returns how many (0: nothing
 * known). *offset is addr minus the start of the outermost function's symbol
 * (0 when unknown). */
int cprof__symbolize(cprof__symbolizer_t *s, uintptr_t addr, cprof__frame_t *frames, int max,
                     uintptr_t *offset);

/* cprof__symbolize in mapping m, from mapping_of or mapping_then: for the
 * addresses of a stack taken before a dlclose. */
int cprof__symbolize_in(cprof__symbolizer_t *s, int m, uintptr_t addr, cprof__frame_t *frames,
                        int max, uintptr_t *offset);

/* The symbol name containing addr, demangled, or NULL (for /debug/pprof/symbol). */
const char *cprof__symbolize_name(cprof__symbolizer_t *s, uintptr_t addr);

/* Unwinds a thread blocked in a system call, from the stack pointer and pc
 * in /proc/self/task/TID/syscall, without signalling it: see
 * unwind/outside.c for why and how. Same stack convention as the
 * unwinders, CPROF_PC_MODULES included. Returns the depth, at least 1 when
 * max > 0. */
int cprof__symbolizer_unwind_blocked(cprof__symbolizer_t *s, pid_t tid, uintptr_t sp, uintptr_t pc,
                                     uintptr_t *pcs, int max);

/* After fork(), in the child: forget the parent's state without touching its
 * locks' owners. */
void cprof__symbolizer_atfork_prepare(void);
void cprof__symbolizer_atfork_parent(void);
void cprof__symbolizer_atfork_child(void);

#endif
