/* cprof run [OPTIONS] -- PROGRAM ARGS...: runs PROGRAM with libcprof
 * preloaded and its settings in cprof's environment variables (the
 * library's constructor reads them: src/core/config_load.c), then ends as
 * PROGRAM ended: the same exit status, or the same signal.
 *
 * Preloading is the dynamic loader's work (ld.so(8)), so it cannot reach a
 * statically linked program, and the loader ignores it for a program run
 * in secure-execution mode (setuid, setgid, file capabilities). Those are
 * refused with a line saying so, instead of running unprofiled. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "commands.h"

#ifndef CPROF_LIBDIR
#error "CPROF_LIBDIR and CPROF_FULL_LIBDIR come from CMake's GNUInstallDirs"
#endif

#define DEFAULT_ADDR "127.0.0.1:6060" /* the library's, when CPROF_ADDR is unset */

static void usage(FILE *out) {
  fprintf(out,
          "usage: cprof run [OPTIONS] [--] PROGRAM [ARGS...]\n"
          "\n"
          "Runs PROGRAM with libcprof preloaded: its profiles are served on /debug/pprof/\n"
          "while it runs. Ends with PROGRAM's exit status (or its signal).\n"
          "\n"
          "  --addr HOST:PORT       where to serve (CPROF_ADDR; default 127.0.0.1:6060;\n"
          "                         port 0: any free port, printed; 0: no server)\n"
          "  --output DIR           write the profiles to DIR when PROGRAM exits (CPROF_OUTPUT)\n"
          "  --heap-rate N          bytes between heap samples; 0: off (CPROF_HEAP_RATE)\n"
          "  --cpu-rate HZ          CPU samples a second (CPROF_CPU_HZ)\n"
          "  --block-rate N         record blocking events of N ns or more; 0: off\n"
          "                         (CPROF_BLOCK_RATE)\n"
          "  --mutex-fraction N     record 1 in N mutex contentions; 0: off\n"
          "                         (CPROF_MUTEX_FRACTION)\n"
          "  --children             programs PROGRAM runs (exec) are profiled too, each\n"
          "                         in PROGRAM's process tree (CPROF_CHILDREN=1; forked\n"
          "                         processes always are)\n"
          "  --env NAME=VALUE       any other setting, e.g. --env CPROF_AUTH=user:password\n"
          "  -h, --help             this text\n"
          "\n"
          "The library is found beside cprof (a build tree), in the installed library\n"
          "directory, or at $CPROF_LIB. An existing LD_PRELOAD is kept.\n");
}

/* A name for a one-line message: control characters and bytes that are not
 * printable ASCII shown as \xHH. */
static const char *shown(const char *s, char *buf, size_t n) {
  size_t o = 0;
  for (; *s && o + 5 < n; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c >= 0x7f)
      o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
    else
      buf[o++] = (char)c;
  }
  buf[o] = '\0';
  return buf;
}

/* ---- finding the library -------------------------------------------------- */

static int usable(const char *path, char *out, size_t n) {
  char real[PATH_MAX];
  if (access(path, R_OK) != 0 || !realpath(path, real) || strlen(real) >= n)
    return 0;
  strcpy(out, real);
  return 1;
}

/* libcprof.so beside the cprof binary (a build tree), then in the library
 * directory of the prefix cprof is installed under (relocatable), then in
 * the configured one; CPROF_LIB overrides them all. */
static int find_library(char *out, size_t n) {
  char exe[PATH_MAX], path[PATH_MAX + 64];
  const char *lib = getenv("CPROF_LIB");
  if (lib && *lib)
    return usable(lib, out, n) ? 0 : -ENOENT;
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len > 0) {
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
      *slash = '\0';
    snprintf(path, sizeof path, "%s/libcprof.so", exe);
    if (usable(path, out, n))
      return 0;
    snprintf(path, sizeof path, "%s/../%s/libcprof.so.0", exe, CPROF_LIBDIR);
    if (usable(path, out, n))
      return 0;
  }
  return usable(CPROF_FULL_LIBDIR "/libcprof.so.0", out, n) ? 0 : -ENOENT;
}

/* ---- what PROGRAM is --------------------------------------------------------- */

/* Finds PROGRAM as execvp(3) would. Returns 0 with its path in out, 127
 * when there is none, 126 when one exists but cannot be executed, with
 * errno telling why. */
static int resolve(const char *prog, char *out, size_t n) {
  struct stat st;
  if (strchr(prog, '/')) {
    snprintf(out, n, "%s", prog);
    if (stat(prog, &st) != 0)
      return errno == ENOENT || errno == ENOTDIR ? 127 : 126;
    if (S_ISDIR(st.st_mode))
      return errno = EISDIR, 126;
    return access(prog, X_OK) == 0 ? 0 : 126;
  }
  const char *path = getenv("PATH");
  int found = 127, why = ENOENT;
  if (!path)
    path = "/bin:/usr/bin"; /* execvp's default */
  for (const char *p = path;; p++) {
    size_t len = strcspn(p, ":");
    snprintf(out, n, "%.*s%s%s", (int)len, len ? p : ".", "/", prog);
    if (stat(out, &st) == 0) {
      if (!S_ISDIR(st.st_mode) && access(out, X_OK) == 0)
        return 0;
      found = 126;
      why = S_ISDIR(st.st_mode) ? EISDIR : EACCES;
    }
    p += len;
    if (!*p)
      break;
  }
  errno = why;
  return found;
}

typedef struct elf_info {
  int elf; /* an ELF file (else a script, or unknown: left to the kernel) */
  unsigned char cls;
  unsigned short machine;
  int interp; /* has PT_INTERP: run by the dynamic loader */
} elf_info_t;

/* Reads the ELF header and program headers of path (elf(5)). */
static void read_elf(const char *path, elf_info_t *e) {
  unsigned char h[sizeof(Elf64_Ehdr)];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  memset(e, 0, sizeof *e);
  if (fd < 0)
    return;
  if (pread(fd, h, sizeof h, 0) < (ssize_t)sizeof(Elf32_Ehdr) || memcmp(h, ELFMAG, SELFMAG) != 0 ||
      h[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
    goto out;
  e->cls = h[EI_CLASS];
  uint64_t phoff;
  unsigned phnum, phentsize;
  if (e->cls == ELFCLASS64) {
    Elf64_Ehdr eh;
    memcpy(&eh, h, sizeof eh);
    e->machine = eh.e_machine, phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
  } else if (e->cls == ELFCLASS32) {
    Elf32_Ehdr eh;
    memcpy(&eh, h, sizeof eh);
    e->machine = eh.e_machine, phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
  } else {
    goto out;
  }
  e->elf = 1;
  for (unsigned i = 0; i < phnum && i < 4096; i++) {
    uint32_t type;
    if (phentsize < sizeof type ||
        pread(fd, &type, sizeof type, (off_t)(phoff + (uint64_t)i * phentsize)) != sizeof type)
      break;
    if (type == PT_INTERP) {
      e->interp = 1;
      break;
    }
  }
out:
  close(fd);
}

/* Whether the kernel will run path in secure-execution mode, where ld.so
 * ignores LD_PRELOAD (ld.so(8)): its effective user or group will differ
 * from the real one (setuid or setgid bit, honoured unless the file
 * system is mounted nosuid), or it has file capabilities. Returns the
 * reason, or NULL. */
static const char *secure_exec(const char *path) {
  struct stat st;
  struct statvfs vfs;
  if (stat(path, &st) != 0)
    return NULL;
  int nosuid = statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID);
  if (!nosuid && (st.st_mode & S_ISUID) && st.st_uid != getuid())
    return "setuid";
  if (!nosuid && (st.st_mode & S_ISGID) && st.st_gid != getgid())
    return "setgid";
  if (getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0)
    return "given file capabilities";
  return NULL;
}

/* ---- the environment ----------------------------------------------------- */

/* LD_PRELOAD with lib after whatever it already names (ld.so(8): names are
 * separated by spaces or colons), unless it is there already. */
static int add_preload(const char *lib) {
  const char *old = getenv("LD_PRELOAD");
  if (!old || !*old)
    return setenv("LD_PRELOAD", lib, 1);
  size_t n = strlen(lib);
  for (const char *p = old; *p;) {
    size_t len = strcspn(p, " :");
    if (len == n && strncmp(p, lib, n) == 0)
      return 0;
    p += len;
    p += *p != '\0';
  }
  char *v;
  if (asprintf(&v, "%s %s", old, lib) < 0)
    return -1;
  int rc = setenv("LD_PRELOAD", v, 1);
  free(v);
  return rc;
}

/* Says where the endpoints will be. With port 0 the library prints the
 * port it got ("cprof: serving http://127.0.0.1:PORT/debug/pprof/"), and a
 * port it cannot take is its own line too; this line is for the fixed
 * address the library takes without a word. */
static void tell_endpoints(const char *prog) {
  const char *addr = getenv("CPROF_ADDR");
  const char *prefix = getenv("CPROF_PREFIX");
  const char *tls = getenv("CPROF_TLS_CERT");
  char name[256];
  if (!addr)
    addr = DEFAULT_ADDR;
  size_t n = strlen(addr);
  if (!*addr || strcmp(addr, "0") == 0 || (n >= 2 && strcmp(addr + n - 2, ":0") == 0))
    return;
  if (!prefix)
    prefix = "";
  size_t plen = strlen(prefix);
  while (plen && prefix[plen - 1] == '/')
    plen--;
  fprintf(stderr, "cprof run: %s will serve its profiles on %s://%s%s%s%.*s/debug/pprof/\n",
          shown(prog, name, sizeof name), tls && *tls ? "https" : "http",
          addr[0] == ':' ? "localhost" : "", addr, plen && prefix[0] != '/' ? "/" : "", (int)plen,
          prefix);
}

/* ---- the child ----------------------------------------------------------- */

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static volatile sig_atomic_t child_pid;

/* Passes a signal sent to cprof on to PROGRAM. One from the terminal
 * (^C, ^\, a hangup: si_code SI_KERNEL) has gone to the whole foreground
 * process group, PROGRAM included, and is not sent a second time. */
static void forward_sigsafe(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  (void)uc;
  if (child_pid > 0 && si->si_code != SI_KERNEL)
    kill((pid_t)child_pid, sig);
  errno = saved;
}

/* Ends cprof the way PROGRAM ended, so that the shell sees the same
 * status: an exit code, or death by the same signal (with cprof's own core
 * dump suppressed: PROGRAM's is the one that matters). */
static int end_like(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  int sig = WTERMSIG(status);
  struct rlimit none = {0, 0};
  sigset_t set;
  fflush(NULL);
  setrlimit(RLIMIT_CORE, &none);
  signal(sig, SIG_DFL);
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  raise(sig);
  return 128 + sig; /* a signal whose default is to be ignored */
}

static int run_child(const char *path, char **argv) {
  struct sigaction fwd = {.sa_sigaction = forward_sigsafe, .sa_flags = SA_SIGINFO | SA_RESTART};
  struct sigaction old[4], dfl = {.sa_handler = SIG_DFL};
  int installed[4] = {0};
  sigset_t block, mask;
  char name[256];
  sigemptyset(&block);
  for (int i = 0; i < 4; i++)
    sigaddset(&block, forwarded[i]);
  sigfillset(&fwd.sa_mask);
  /* Blocked until child_pid is set, so that none is lost in between. */
  sigprocmask(SIG_BLOCK, &block, &mask);
  for (int i = 0; i < 4; i++) {
    sigaction(forwarded[i], NULL, &old[i]);
    /* One ignored by whoever started cprof stays ignored for PROGRAM too
     * (a shell ignores SIGINT in a background job). */
    if (old[i].sa_handler != SIG_IGN)
      installed[i] = sigaction(forwarded[i], &fwd, NULL) == 0;
  }
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "cprof run: cannot start %s: %s\n", shown(argv[0], name, sizeof name),
            strerror(errno));
    return 1;
  }
  if (pid == 0) {
    for (int i = 0; i < 4; i++)
      if (installed[i])
        sigaction(forwarded[i], &dfl, NULL);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    execv(path, argv);
    int e = errno;
    fprintf(stderr, "cprof run: %s: %s\n", shown(argv[0], name, sizeof name), strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  child_pid = pid;
  sigprocmask(SIG_SETMASK, &mask, NULL);
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      fprintf(stderr, "cprof run: waiting for %s: %s\n", shown(argv[0], name, sizeof name),
              strerror(errno));
      return 1;
    }
  }
  child_pid = 0;
  for (int i = 0; i < 4; i++)
    if (installed[i])
      sigaction(forwarded[i], &old[i], NULL);
  return end_like(status);
}

/* ---- the command ---------------------------------------------------------- */

static int set(const char *name, const char *value) {
  if (setenv(name, value, 1) == 0)
    return 0;
  fprintf(stderr, "cprof run: cannot set %s: %s\n", name, strerror(errno));
  return -1;
}

/* Takes the options before PROGRAM into the environment PROGRAM gets.
 * -1 to go on, or the exit status: 0 after --help, 1, 2 after a usage
 * error. */
static int take_options(int argc, char **argv) {
  enum { ADDR = 256, OUTPUT, HEAP, CPU, BLOCK, MUTEX, ENV, CHILDREN };
  static const struct option longs[] = {{"addr", required_argument, NULL, ADDR},
                                        {"output", required_argument, NULL, OUTPUT},
                                        {"heap-rate", required_argument, NULL, HEAP},
                                        {"cpu-rate", required_argument, NULL, CPU},
                                        {"block-rate", required_argument, NULL, BLOCK},
                                        {"mutex-fraction", required_argument, NULL, MUTEX},
                                        {"env", required_argument, NULL, ENV},
                                        {"children", no_argument, NULL, CHILDREN},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  static const char *const vars[] = {
      [ADDR - ADDR] = "CPROF_ADDR",        [OUTPUT - ADDR] = "CPROF_OUTPUT",
      [HEAP - ADDR] = "CPROF_HEAP_RATE",   [CPU - ADDR] = "CPROF_CPU_HZ",
      [BLOCK - ADDR] = "CPROF_BLOCK_RATE", [MUTEX - ADDR] = "CPROF_MUTEX_FRACTION"};
  char name[256], cwd[PATH_MAX], *abs = NULL;
  int c;
  opterr = 0;
  optind = 1;
  /* "+": the options end at PROGRAM, whose own options are its business. */
  while ((c = getopt_long(argc, argv, "+:h", longs, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c == '?' || c == ':') {
      fprintf(stderr, "cprof run: %s %s (cprof run --help)\n", argv[optind - 1],
              c == ':' ? "wants a value" : "is not an option");
      return 2;
    }
    if (c == CHILDREN) {
      if (set("CPROF_CHILDREN", "1") != 0)
        return 1;
      continue;
    }
    if (c == ENV) {
      char *eq = strchr(optarg, '=');
      if (!eq || eq == optarg) {
        fprintf(stderr, "cprof run: --env wants NAME=VALUE, not \"%s\"\n",
                shown(optarg, name, sizeof name));
        return 2;
      }
      *eq = '\0';
      if (set(optarg, eq + 1) != 0)
        return 1;
      *eq = '=';
      continue;
    }
    const char *v = optarg;
    /* The program may change directory before it writes its profiles. */
    if (c == OUTPUT && v[0] != '/' && getcwd(cwd, sizeof cwd) &&
        asprintf(&abs, "%s/%s", cwd, v) > 0)
      v = abs;
    int rc = set(vars[c - ADDR], v);
    free(abs);
    abs = NULL;
    if (rc)
      return 1;
  }
  return -1;
}

/* Finds prog (into path) and libcprof (into lib), and checks that the
 * dynamic loader will preload the one into the other: 0, or the exit
 * status after a line on stderr. */
static int check_preload(const char *prog, char path[PATH_MAX], char lib[PATH_MAX]) {
  char name[256];
  int rc = resolve(prog, path, PATH_MAX);
  if (rc) {
    if (rc == 127 && !strchr(prog, '/'))
      fprintf(stderr, "cprof run: %s: command not found\n", shown(prog, name, sizeof name));
    else
      fprintf(stderr, "cprof run: %s: %s\n", shown(prog, name, sizeof name), strerror(errno));
    return rc;
  }
  if (find_library(lib, PATH_MAX) != 0) {
    fprintf(stderr, "cprof run: cannot find libcprof (%s); set CPROF_LIB to its path\n",
            getenv("CPROF_LIB") && *getenv("CPROF_LIB")
                ? "CPROF_LIB names no readable file"
                : "looked beside cprof and in " CPROF_FULL_LIBDIR);
    return 1;
  }
  if (strpbrk(lib, " :")) {
    fprintf(stderr, "cprof run: %s: LD_PRELOAD cannot name a path with a space or a colon\n",
            shown(lib, name, sizeof name));
    return 1;
  }

  elf_info_t pe, le;
  const char *why;
  read_elf(path, &pe);
  read_elf(lib, &le);
  if (pe.elf && !pe.interp) {
    fprintf(stderr,
            "cprof run: %s is statically linked: preloading is done by the dynamic loader, "
            "which it does not use; link it with -lcprof and call cprof_start() instead\n",
            shown(prog, name, sizeof name));
    return 1;
  }
  if (pe.elf && le.elf && (pe.cls != le.cls || pe.machine != le.machine)) {
    fprintf(stderr,
            "cprof run: %s is built for another architecture (%d-bit, ELF machine %u) than "
            "%s: the dynamic loader would not preload it\n",
            shown(prog, name, sizeof name), pe.cls == ELFCLASS64 ? 64 : 32, pe.machine, lib);
    return 1;
  }
  if ((why = secure_exec(path))) {
    fprintf(stderr,
            "cprof run: %s is %s: the dynamic loader ignores LD_PRELOAD for it "
            "(secure-execution mode, ld.so(8)), so it cannot be profiled this way\n",
            shown(prog, name, sizeof name), why);
    return 1;
  }
  return 0;
}

int cmd_run(int argc, char **argv) {
  char lib[PATH_MAX], path[PATH_MAX];
  int rc = take_options(argc, argv);
  if (rc >= 0)
    return rc;
  if (optind >= argc) {
    fprintf(stderr, "cprof run: no PROGRAM given (cprof run --help)\n");
    return 2;
  }
  const char *prog = argv[optind];
  if ((rc = check_preload(prog, path, lib)) != 0)
    return rc;
  if (add_preload(lib) != 0) {
    fprintf(stderr, "cprof run: cannot set LD_PRELOAD: %s\n", strerror(errno));
    return 1;
  }
  tell_endpoints(prog);
  return run_child(path, argv + optind);
}
