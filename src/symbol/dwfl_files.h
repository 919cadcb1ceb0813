/* How the symbolizer's Dwfl finds ELF files and their separate debug
 * information. libdw's standard callbacks do the job, but two of their
 * habits do not suit a library living inside someone else's program:
 *
 * - they open files without O_CLOEXEC, and libdw keeps a descriptor per
 *   module for the Dwfl's lifetime, so every program the host later
 *   executes would inherit them;
 * - dwfl_standard_find_debuginfo ends, when its local search finds nothing,
 *   by asking debuginfod: it dlopens libdebuginfod, which brings some thirty
 *   libraries (libcurl, GnuTLS, Kerberos, LDAP) into the host, and, when
 *   DEBUGINFOD_URLS is set (several distributions set it for every login),
 *   downloads debug files over the network while the symbolizer is held.
 *
 * So these callbacks open files themselves, close-on-exec, search only
 * local places, and leave to libdw only the cases that need its internals. */
#ifndef CPROF_SYMBOL_DWFL_FILES_H
#define CPROF_SYMBOL_DWFL_FILES_H

#include <elfutils/libdwfl.h>

/* For dwfl_begin with modules from dwfl_linux_proc_report. */
extern const Dwfl_Callbacks cprof__dwfl_callbacks;

#endif
