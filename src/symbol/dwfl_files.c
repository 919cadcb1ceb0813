/* Finding a module's ELF file and its separate debug information; see
 * dwfl_files.h for why we do not use libdw's standard callbacks as they are. */
#include "symbol/dwfl_files.h"

#include "core/hex.h"

#include "symbol/debuginfod.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/procfs.h"

/* What the kernel appends to the path of an unlinked file in
 * /proc/self/maps and /proc/self/exe, and libdw keeps in module names. */
static const char deleted_suffix[] = " (deleted)";

static int ends_deleted(const char *path) {
  size_t len = strlen(path), sl = sizeof deleted_suffix - 1;
  return len > sl && strcmp(path + len - sl, deleted_suffix) == 0;
}

/* The main program through /proc/thread-self/exe, when name is its path
 * as the kernel shows it. The link opens the file we run without walking
 * its path: after the file was deleted or replaced (a new version deployed
 * under a running server), and after a program started by root from a
 * directory only root may enter has dropped to another user. */
static int open_exe(const char *name, char **file_name) {
  char exe[PATH_MAX], link[64];
  snprintf(link, sizeof link, "%s/exe", cprof__procfs_self());
  ssize_t n = readlink(link, exe, sizeof exe - 1);
  if (n <= 0)
    return -1;
  exe[n] = '\0';
  if (strcmp(exe, name) != 0)
    return -1;
  int fd = open(link, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  /* The name without the marker, so that the debuglink search looks in the
   * directory the program came from. */
  size_t len = strlen(name) - (ends_deleted(name) ? sizeof deleted_suffix - 1 : 0);
  *file_name = strndup(name, len);
  if (!*file_name) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Hands libdw the file open as an Elf, and closes fd: libdw would keep a
 * descriptor per module for the Dwfl's life otherwise (twenty-five in a
 * small program), and it needs none. The file is mapped, as libdw maps it
 * (ELF_C_READ_MMAP_PRIVATE, libdwfl/open.c), and the mapping keeps it;
 * ELF_C_FDREAD reads it into memory first on the odd file system that
 * cannot map, then tells libelf the descriptor is gone. libdw accepts an Elf
 * with no descriptor from this callback, as it does for the vDSO. Returns
 * -1, the callback's "no descriptor"; on failure *elfp stays NULL and
 * *file_name is dropped, or libdw would open the file itself by name. */
static int elf_from(int fd, char **file_name, Elf **elfp) {
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP_PRIVATE, NULL);
  if (elf && elf_cntl(elf, ELF_C_FDREAD) != 0) {
    elf_end(elf);
    elf = NULL;
  }
  close(fd);
  if (!elf) {
    free(*file_name);
    *file_name = NULL;
  }
  *elfp = elf;
  return -1;
}

/* The vDSO has no file, but the kernel maps its whole ELF image, section
 * headers included, so a copy of the mapping is as good as one. libdw's
 * callback reads it through /proc/PID/mem, which is root's in a process
 * that is not dumpable (proc(5)). We copy it where it is: the module is
 * reported only where the maps snapshot shows the vDSO mapped and
 * readable, it is copied only from where the kernel's AT_SYSINFO_EHDR says
 * it starts, and nothing but a program that unmaps its own vDSO removes it. The copy is made once
 * and kept for the life of the process: the vDSO does not move, and an
 * Elf libdw holds points into the copy (libelf may write to an image it
 * reads, which the vDSO's pages would not allow). Called under the
 * symbolizer's lock, like everything here. */
static Elf *vdso_elf(Dwfl_Module *mod) {
  static char *image;
  static uintptr_t image_at;
  static size_t image_size;
  Dwarf_Addr start, end;
  if (!dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL) || end <= start ||
      start != getauxval(AT_SYSINFO_EHDR))
    return NULL;
  size_t size = (size_t)(end - start);
  if (!image || image_at != start || image_size != size) {
    char *copy = malloc(size);
    if (!copy)
      return NULL;
    memcpy(copy, (const void *)(uintptr_t)start, size);
    /* A copy made before is left as it is: an Elf may still point into it. */
    image = copy;
    image_at = start;
    image_size = size;
  }
  return elf_memory(image, size);
}

static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
                    char **file_name, Elf **elfp) {
  if (strcmp(name, CPROF_DWFL_VDSO) == 0) {
    *elfp = vdso_elf(mod);
    return -1;
  }
  if (name[0] == '/' && ends_deleted(name)) {
    int fd = open_exe(name, file_name);
    if (fd >= 0)
      return elf_from(fd, file_name, elfp);
  }
  /* Other deleted files are read from memory (their loaded parts only),
   * which libdw's callback knows how to do, through /proc/PID/mem: not in
   * a process that is not dumpable. */
  if (name[0] != '/' || ends_deleted(name)) {
    int fd = dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
    return fd >= 0 && !*elfp ? elf_from(fd, file_name, elfp) : fd;
  }
  /* Only regular files: opening a device that happens to be mapped could
   * block or have side effects, as libdw's callback also guards against. */
  struct stat st;
  if (stat(name, &st) != 0) {
    int fd = errno == EACCES ? open_exe(name, file_name) : -1;
    return fd >= 0 ? elf_from(fd, file_name, elfp) : -1;
  }
  if (!S_ISREG(st.st_mode))
    return -1;
  int fd = open(name, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  *file_name = strdup(name); /* libdw owns and frees it */
  if (!*file_name) {
    close(fd);
    return -1;
  }
  return elf_from(fd, file_name, elfp);
}

/* Opens path as the module's debug file if it carries the module's build
 * ID. libdw checks this in its own search; without it a stale debug file
 * would give wrong lines. */
static int open_debug_file(const char *path, const unsigned char *id, int idlen,
                           char **debuginfo_file_name) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  const void *have = NULL;
  ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &have) : -1;
  int same = n > 0 && n == idlen && memcmp(have, id, (size_t)idlen) == 0;
  if (elf)
    elf_end(elf);
  if (same && (*debuginfo_file_name = strdup(path)) != NULL)
    return fd;
  close(fd);
  return -1;
}

/* The build-ID tree: /usr/lib/debug/.build-id/ab/cdef….debug */
static int find_in_build_id_tree(const unsigned char *id, int idlen, char **debuginfo_file_name) {
  char path[PATH_MAX];
  size_t n = (size_t)snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%02x/", id[0]);
  for (int i = 1; i < idlen && n + 3 < sizeof path; i++)
    n += (size_t)snprintf(path + n, sizeof path - n, "%02x", id[i]);
  if (n + sizeof ".debug" > sizeof path)
    return -1;
  memcpy(path + n, ".debug", sizeof ".debug");
  return open_debug_file(path, id, idlen, debuginfo_file_name);
}

/* The .gnu_debuglink name (or, without one, "<file>.debug", as libdw
 * assumes) next to the file, in its .debug/, and under /usr/lib/debug:
 * the directories GDB and libdw search by default. */
static int find_by_debuglink(const char *file_name, const char *debuglink, const unsigned char *id,
                             int idlen, char **debuginfo_file_name) {
  if (!file_name || file_name[0] != '/')
    return -1;
  const char *slash = strrchr(file_name, '/');
  int dirlen = (int)(slash - file_name);
  char invented[NAME_MAX + 1];
  if (!debuglink || !debuglink[0]) {
    int k = snprintf(invented, sizeof invented, "%s.debug", slash + 1);
    if (k < 0 || (size_t)k >= sizeof invented)
      return -1;
    debuglink = invented;
  }
  char path[PATH_MAX];
  for (int i = 0; i < 3; i++) {
    int k;
    if (i == 0)
      k = snprintf(path, sizeof path, "%.*s/%s", dirlen, file_name, debuglink);
    else if (i == 1)
      k = snprintf(path, sizeof path, "%.*s/.debug/%s", dirlen, file_name, debuglink);
    else
      k = snprintf(path, sizeof path, "/usr/lib/debug%.*s/%s", dirlen, file_name, debuglink);
    /* The main file under another name is no debug file. */
    if (k < 0 || (size_t)k >= sizeof path || strcmp(path, file_name) == 0)
      continue;
    int fd = open_debug_file(path, id, idlen, debuginfo_file_name);
    if (fd >= 0)
      return fd;
  }
  return -1;
}

/* ---- the modules ----------------------------------------------------------
 * What dwfl_linux_proc_report does, from the maps snapshot the symbolizer
 * has already read (/proc/thread-self/maps). libdw's report reads
 * /proc/PID/auxv first, for the vDSO's address, and gives up before
 * reporting any module when it cannot: that file is mode 0400 and root's
 * in a process that is not dumpable (PR_SET_DUMPABLE 0, or any change of
 * uid from root), proc(5). It then reads /proc/PID/maps, the main thread's,
 * which reads empty once main has called pthread_exit. The calling thread's
 * maps can be read in both cases, and one snapshot for the symbolizer's
 * mappings and the Dwfl's modules means they cannot disagree about a
 * dlopen that happened between two reads. */

/* Whether e maps a file: libdw's test (a path, and a device or an inode). */
static int maps_file(const cprof__map_entry_t *e) {
  return e->path[0] == '/' && (e->dev != 0 || e->inode != 0);
}

static int same_file(const cprof__map_entry_t *a, const cprof__map_entry_t *b) {
  return a->dev == b->dev && a->inode == b->inode && a->deleted == b->deleted &&
         strcmp(a->path, b->path) == 0;
}

/* Reports one module over [first->start, high). The name is the one
 * find_elf expects: the path, with the kernel's marker for a deleted
 * file, which the snapshot leaves out of the path. */
static int report_module(Dwfl *dwfl, const cprof__map_entry_t *first, uintptr_t high) {
  char name[PATH_MAX + sizeof deleted_suffix];
  if (first->deleted &&
      (size_t)snprintf(name, sizeof name, "%s%s", first->path, deleted_suffix) >= sizeof name)
    return 0; /* no such path on Linux */
  const char *as = first->deleted ? name : first->path;
  return dwfl_report_module(dwfl, as, first->start, high) ? 0 : -1;
}

int cprof__dwfl_report_maps(Dwfl *dwfl, const cprof__maps_t *m) {
  int err = 0;
  for (int i = 0; i < m->n;) {
    const cprof__map_entry_t *first = &m->v[i++];
    if (strcmp(first->path, "[vdso]") == 0) {
      /* Readable, as the kernel maps it: find_elf copies it from there. */
      if (first->perms[0] == 'r' &&
          !dwfl_report_module(dwfl, CPROF_DWFL_VDSO, first->start, first->end))
        err = -1;
      continue;
    }
    if (!maps_file(first))
      continue;
    /* The file's later mappings, as libdw groups them: up to the next
     * mapping of another file, anonymous ones (.bss) in between skipped.
     * Only files with code are modules: a data file the program maps is
     * nothing to symbolize against. */
    uintptr_t high = first->end;
    int code = first->perms[2] == 'x';
    for (int j = i; j < m->n && strcmp(m->v[j].path, "[vdso]") != 0; j++) {
      if (!maps_file(&m->v[j]))
        continue;
      if (!same_file(first, &m->v[j]))
        break;
      high = m->v[j].end;
      code |= m->v[j].perms[2] == 'x';
      i = j + 1;
    }
    if (code && report_module(dwfl, first, high) != 0)
      err = -1;
  }
  return err;
}

/* A file debuginfod brought, in this process or an earlier one (see
 * debuginfod.c; nothing at all without DEBUGINFOD_URLS). Local files only:
 * fetching happens elsewhere, in the background. */
static int find_fetched(const unsigned char *id, int idlen, char **debuginfo_file_name) {
  char hex[2 * 64 + 1], path[PATH_MAX];
  if (idlen > 64)
    return -1;
  cprof__hex_encode(id, (size_t)idlen, hex);
  for (int k = 0; k < 2; k++) {
    if (cprof__debuginfod_candidate(hex, k, path, sizeof path) != 0)
      continue;
    int fd = open_debug_file(path, id, idlen, debuginfo_file_name);
    if (fd >= 0)
      return fd;
  }
  return -1;
}

/* The build ID by which a debug file names its dwz alternate file: its
 * .gnu_debugaltlink section holds that file's path, a NUL, then the ID. */
static int altlink_id(const char *debug_file, unsigned char *id, int max) {
  int fd = open(debug_file, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  size_t shstrndx;
  int n = -1;
  if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
    goto out;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
    GElf_Shdr sh;
    const char *name;
    if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
        strcmp(name, ".gnu_debugaltlink") != 0)
      continue;
    Elf_Data *d = elf_getdata(scn, NULL);
    size_t path = d && d->d_buf ? strnlen(d->d_buf, d->d_size) : 0;
    if (d && d->d_buf && path + 3 <= d->d_size && d->d_size - path - 1 <= (size_t)max) {
      n = (int)(d->d_size - path - 1);
      memcpy(id, (const char *)d->d_buf + path + 1, (size_t)n);
    }
    break;
  }
out:
  if (elf)
    elf_end(elf);
  close(fd);
  return n;
}

/* A dwz alternate file debuginfod brought, for the debug file libdw is
 * reading (debuginfod.c; nothing at all without DEBUGINFOD_URLS). Debian's
 * -dbgsym files have one: what several of a package's files share (types,
 * inlined functions' names) is in it. Not here yet: asked for, and the
 * symbolizer builds its Dwfl again when it comes. */
static int find_fetched_alt(const char *debug_file, char **debuginfo_file_name) {
  unsigned char id[64];
  int idlen = cprof__debuginfod_enabled() && debug_file && debug_file[0] == '/'
                  ? altlink_id(debug_file, id, (int)sizeof id)
                  : -1;
  if (idlen < 2)
    return -1;
  int fd = find_fetched(id, idlen, debuginfo_file_name);
  if (fd < 0) {
    char hex[2 * sizeof id + 1];
    cprof__hex_encode(id, (size_t)idlen, hex);
    cprof__debuginfod_want(hex);
  }
  return fd;
}

int cprof__dwfl_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                               Dwarf_Addr base, const char *file_name, const char *debuglink,
                               GElf_Word crc, char **debuginfo_file_name) {
  /* libdw calls this also for a dwz alternate file (.gnu_debugaltlink), with
   * that file's path as the debuglink, a zero CRC, and the debug file that
   * names it as file_name. libdw's build-ID lookup, which stays local, finds
   * an installed one; else one from debuginfod may be there. */
  if (debuglink && (strchr(debuglink, '/') || crc == 0)) {
    int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink, crc,
                                          debuginfo_file_name);
    return fd >= 0 ? fd : find_fetched_alt(file_name, debuginfo_file_name);
  }

  /* Without a build ID there is nothing to check a candidate against, so we
   * do not guess. */
  const unsigned char *id;
  GElf_Addr vaddr;
  int idlen = dwfl_module_build_id(mod, &id, &vaddr);
  if (idlen < 2)
    return -1;
  int fd = find_in_build_id_tree(id, idlen, debuginfo_file_name);
  if (fd < 0)
    fd = find_by_debuglink(file_name, debuglink, id, idlen, debuginfo_file_name);
  if (fd < 0)
    fd = find_fetched(id, idlen, debuginfo_file_name);
  return fd;
}

/* ---- descriptors handed to libdw ------------------------------------------
 * Only the symbolizer's lock serialises calls into libdw, so this needs no
 * lock of its own. */

#define MAX_HANDED 64
static cprof__dwfl_handed_t handed[MAX_HANDED];
static int nhanded, lost;

static void note_handed(Dwfl_Module *mod, int fd, int alt) {
  struct stat st;
  if (nhanded == MAX_HANDED || fstat(fd, &st) != 0) {
    lost++;
    return;
  }
  handed[nhanded++] = (cprof__dwfl_handed_t){
      .mod = mod, .fd = fd, .dev = st.st_dev, .ino = st.st_ino, .alt = alt};
}

int cprof__dwfl_handed_take(cprof__dwfl_handed_t *out, int max, int *nlost) {
  int n = nhanded < max ? nhanded : max;
  memcpy(out, handed, (size_t)n * sizeof *out);
  *nlost = lost + (nhanded - n);
  nhanded = lost = 0;
  return n;
}

void cprof__dwfl_handed_atfork_child(void) { nhanded = lost = 0; }

/* The search above, each descriptor it returns noted. A dwz alternate file
 * (debuglink a path, or no CRC) is libdw's to close for good, whatever its
 * Elf's references say. */
static int find_debuginfo_tracked(Dwfl_Module *mod, void **userdata, const char *modname,
                          Dwarf_Addr base, const char *file_name, const char *debuglink,
                          GElf_Word crc, char **debuginfo_file_name) {
  int fd = cprof__dwfl_find_debuginfo(mod, userdata, modname, base, file_name, debuglink, crc,
                                      debuginfo_file_name);
  if (fd >= 0)
    note_handed(mod, fd, debuglink && (strchr(debuglink, '/') || crc == 0));
  return fd;
}

const Dwfl_Callbacks cprof__dwfl_callbacks = {
    .find_elf = find_elf,
    .find_debuginfo = cprof__dwfl_find_debuginfo,
};

const Dwfl_Callbacks cprof__dwfl_callbacks_tracked = {
    .find_elf = find_elf,
    .find_debuginfo = find_debuginfo_tracked,
};
