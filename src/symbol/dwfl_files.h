/* How the symbolizer's Dwfl finds ELF files and their separate debug
 * information. libdw's standard callbacks do the job, but two of their
 * habits do not suit a library living inside someone else's program:
 *
 * - they open files without O_CLOEXEC, and libdw keeps a descriptor per
 *   module for the Dwfl's lifetime, so every program the host later
 *   executes would inherit them (ours hand libdw the ELF file already
 *   mapped, with no descriptor, and debug files close-on-exec);
 * - dwfl_standard_find_debuginfo ends, when its local search finds nothing,
 *   by asking debuginfod: it dlopens libdebuginfod, which brings some thirty
 *   libraries (libcurl, GnuTLS, Kerberos, LDAP) into the host, and, when
 *   DEBUGINFOD_URLS is set (several distributions set it for every login),
 *   downloads debug files over the network while the symbolizer is held.
 *
 * So these callbacks open files themselves, close-on-exec, search only
 * local places, and leave to libdw only the cases that need its internals.
 * With DEBUGINFOD_URLS set, the local places include the files debuginfod
 * brought, which debuginfod.c fetches in the background. */
#ifndef CPROF_SYMBOL_DWFL_FILES_H
#define CPROF_SYMBOL_DWFL_FILES_H

#include "unwind/maps.h"

#include <elfutils/libdwfl.h>
#include <sys/types.h>

/* For dwfl_begin with modules from cprof__dwfl_report_maps (or
 * dwfl_linux_proc_report). */
extern const Dwfl_Callbacks cprof__dwfl_callbacks;
/* The same, noting every descriptor handed to libdw for
 * cprof__dwfl_handed_take: for the symbolizer's one Dwfl in use. */
extern const Dwfl_Callbacks cprof__dwfl_callbacks_tracked;

/* The name of the vDSO's module, which these callbacks read from memory. */
#define CPROF_DWFL_VDSO "[vdso]"

/* Reports to dwfl, between dwfl_report_begin and dwfl_report_end, a module
 * for each file of the snapshot m that has code, and the vDSO: what
 * dwfl_linux_proc_report does, without reading /proc/PID/auxv or
 * /proc/PID/maps, which a process that is not dumpable cannot read. Returns
 * 0, or -1 when libdw refused a module (the others are still reported). */
int cprof__dwfl_report_maps(Dwfl *dwfl, const cprof__maps_t *m);

/* The callbacks' search for a module's separate debug file, for a caller
 * that only looks: the descriptor returned is the caller's to close. */
int cprof__dwfl_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                               Dwarf_Addr base, const char *file_name, const char *debuglink,
                               GElf_Word crc, char **debuginfo_file_name);

/* A debug file's descriptor that the tracked callbacks handed libdw, which keeps it
 * open until dwfl_end and then closes that number. dev and ino say which
 * file it was. alt: a dwz alternate file, which libdw closes whatever
 * happens. */
typedef struct cprof__dwfl_handed {
  Dwfl_Module *mod;
  int fd;
  dev_t dev;
  ino_t ino;
  int alt;
} cprof__dwfl_handed_t;

/* Moves up to max of the descriptors handed to libdw since the last call
 * into out and returns how many; *lost counts those it could not report.
 * Under the symbolizer's lock, like every call into libdw. */
int cprof__dwfl_handed_take(cprof__dwfl_handed_t *out, int max, int *lost);
void cprof__dwfl_handed_atfork_child(void);

#endif
