/* The tree's runtime directory and who is in it (tree.h).
 *
 * The directory is made by the owner at its first fork, with mkdtemp
 * (mode 0700, a name nobody can guess) under $XDG_RUNTIME_DIR, else
 * $TMPDIR, else /tmp. Its path is in the memory every forked process
 * inherits; nothing else names it. A member binds PID.sock there when it
 * joins (start.c), which works across the drop of privileges a server's
 * workers make (nginx, Apache: root, then www-data): the member joins
 * before its first change of credentials, still root, and keeps the
 * listening socket after; the directory stays root's, mode 0700, and only
 * the owner (root) connects. No other user can enter it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/procfs.h"
#include "tree/tree.h"

/* Written by the process's own thread that forks, joins or takes over,
 * read by the server's: atomic. */
static int role_ = CPROF_TREE_NONE;
#define role __atomic_load_n(&role_, __ATOMIC_ACQUIRE)
static void set_role(int r) { __atomic_store_n(&role_, r, __ATOMIC_RELEASE); }
static char dir[80];
static pid_t owner_pid;
static pid_t born_of; /* a member's parent when it was forked */

int cprof__tree_role(void) { return role; }

/* The directory's "owner" file: the pid of the process that serves the
 * tree's address, replaced whole (a temporary file renamed over it). */
static void write_owner(void) {
  char tmp[sizeof dir + 32], path[sizeof dir + 16], text[24];
  snprintf(tmp, sizeof tmp, "%s/owner.%d", dir, (int)getpid());
  snprintf(path, sizeof path, "%s/owner", dir);
  int n = snprintf(text, sizeof text, "%d\n", (int)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  int ok = write(fd, text, (size_t)n) == n;
  close(fd);
  if (!ok || rename(tmp, path) != 0)
    unlink(tmp);
}

/* The pid the "owner" file of the tree at path names, or fallback when
 * it cannot be read (a member that dropped privileges). */
static pid_t read_owner_in(const char *path, pid_t fallback) {
  char file[sizeof dir + 16], text[24];
  snprintf(file, sizeof file, "%s/owner", path);
  if (cprof__procfs_read(file, text, sizeof text) <= 0)
    return fallback;
  long v = strtol(text, NULL, 10);
  return v > 0 && v <= INT_MAX ? (pid_t)v : fallback;
}

/* Each base directory a tree's may be in: $XDG_RUNTIME_DIR, $TMPDIR
 * (absolute, with room for "/cprof-PID-XXXXXX" and "/PID.sock" in a
 * socket's path), /tmp. */
static int bases(const char *out[3]) {
  int n = 0;
  const char *names[] = {"XDG_RUNTIME_DIR", "TMPDIR"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = getenv(names[i]);
    if (v && v[0] == '/' && strlen(v) < sizeof dir - 32)
      out[n++] = v;
  }
  out[n++] = "/tmp";
  return n;
}

/* A directory to make the tree's in: the first of bases we may write. */
static const char *base_dir(void) {
  const char *b[3];
  int n = bases(b);
  for (int i = 0; i < n - 1; i++)
    if (access(b[i], W_OK | X_OK) == 0)
      return b[i];
  return b[n - 1];
}

/* Calls fn on each tree directory of ours in the base directories: a
 * directory (not a link) named cprof-PID-XXXXXX, owned by this user, mode
 * 0700. Stops when fn returns nonzero, and returns that. */
static int each_tree(int (*fn)(const char *path, pid_t first, void *ctx), void *ctx) {
  const char *b[3];
  int nb = bases(b);
  for (int i = 0; i < nb; i++) {
    DIR *d = opendir(b[i]);
    if (!d)
      continue;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
      int first;
      char path[sizeof dir];
      struct stat st;
      if (strncmp(e->d_name, "cprof-", 6) != 0 || sscanf(e->d_name + 6, "%d-", &first) != 1 ||
          snprintf(path, sizeof path, "%s/%s", b[i], e->d_name) >= (int)sizeof path ||
          lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
          (st.st_mode & 0777) != 0700)
        continue;
      rc = fn(path, (pid_t)first, ctx);
    }
    closedir(d);
    if (rc)
      return rc;
  }
  return 0;
}

static pid_t entry_pid(const char *name);
static int alive(pid_t pid);

/* A tree whose owner has ended and whose members are all gone (an owner
 * killed, which removes nothing): removed. */
static int sweep_one(const char *path, pid_t first, void *ctx) {
  (void)ctx;
  pid_t owner = read_owner_in(path, first);
  if (owner == getpid() || alive(owner))
    return 0;
  DIR *d = opendir(path);
  if (!d)
    return 0;
  struct dirent *e;
  int live = 0;
  while ((e = readdir(d)))
    live += entry_pid(e->d_name) && alive(entry_pid(e->d_name));
  if (!live) {
    rewinddir(d);
    while ((e = readdir(d)))
      if (e->d_name[0] != '.')
        unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
  if (!live)
    rmdir(path);
  return 0;
}

typedef struct find_ctx {
  pid_t parent;
  char *found;
} find_ctx_t;

/* The tree whose owner is the parent, or where the parent serves. */
static int find_one(const char *path, pid_t first, void *ctx) {
  find_ctx_t *f = ctx;
  char sock[sizeof dir + 16];
  snprintf(sock, sizeof sock, "%s/%d.sock", path, (int)f->parent);
  if (read_owner_in(path, first) != f->parent && access(sock, F_OK) != 0)
    return 0;
  memcpy(f->found, path, sizeof dir);
  return 1;
}

int cprof__tree_join_parent(void) {
  char found[sizeof dir];
  find_ctx_t f = {getppid(), found};
  if (role != CPROF_TREE_NONE || !each_tree(find_one, &f))
    return 0;
  memcpy(dir, found, sizeof dir);
  owner_pid = read_owner_in(dir, 0);
  set_role(CPROF_TREE_MEMBER);
  return 1;
}

int cprof__tree_own(void) {
  if (role == CPROF_TREE_OWNER)
    return 0;
  static int failed;
  if (failed)
    return -EPERM;
  each_tree(sweep_one, NULL);
  char path[sizeof dir];
  snprintf(path, sizeof path, "%s/cprof-%d-XXXXXX", base_dir(), (int)getpid());
  if (!mkdtemp(path)) {
    int err = errno;
    failed = 1;
    cprof__log("cannot make the directory for this program's children (%s): %s; "
               "its forked children will not be profiled",
               path, strerror(err));
    return -err;
  }
  memcpy(dir, path, sizeof dir);
  owner_pid = getpid();
  set_role(CPROF_TREE_OWNER);
  write_owner();
  return 0;
}

int cprof__tree_join_child(void) {
  if (role == CPROF_TREE_NONE)
    return 0;
  set_role(CPROF_TREE_MEMBER);
  born_of = getppid();
  return 1;
}

int cprof__tree_socket_path(pid_t pid, char *out, size_t outlen) {
  if (role == CPROF_TREE_NONE)
    return -ENOENT;
  int n = snprintf(out, outlen, "%s/%d.sock", dir, (int)pid);
  return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* The pid a directory entry names ("812.sock"), or 0. */
static pid_t entry_pid(const char *name) {
  char *end;
  long v = strtol(name, &end, 10);
  return v > 0 && v <= INT_MAX && strcmp(end, ".sock") == 0 ? (pid_t)v : 0;
}

static int alive(pid_t pid);
static int listened(const char *path);

/* Whether this process has children alive: forks that may be members not
 * yet joined (a daemon's, made just before its parent exits), one of
 * which will take the owner's place. /proc/self/task/TID/children lists
 * each thread's. */
static int has_children(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return 0;
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d))) {
    char path[64], c;
    if (e->d_name[0] == '.' ||
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name) >= (int)sizeof path)
      continue;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      found = read(fd, &c, 1) == 1;
      close(fd);
    }
  }
  closedir(d);
  return found;
}

void cprof__tree_leave(void) {
  if (role != CPROF_TREE_OWNER || getpid() != owner_pid)
    return;
  set_role(CPROF_TREE_NONE);
  DIR *d = opendir(dir);
  if (!d)
    return;
  int members = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    pid_t pid = entry_pid(e->d_name);
    char path[sizeof dir + 16];
    if (!pid || snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
      continue;
    if (pid != getpid() && alive(pid) && listened(path))
      members++; /* one of them takes our place */
    else
      unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
  if (members || has_children())
    return;
  char path[sizeof dir + 16];
  snprintf(path, sizeof path, "%s/owner", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/owner.lock", dir);
  unlink(path);
  rmdir(dir);
}

/* Whether pid has ended: its pidfd readable, else signal 0 refused with
 * ESRCH or a zombie's state in /proc. */
#define PIDFD_ENDED (-2) /* pidfd_open said the process was gone */
static int ended(pid_t pid, int pidfd) {
  if (pidfd == PIDFD_ENDED)
    return 1;
  if (pidfd >= 0) {
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
  }
  if (!alive(pid))
    return 1;
  char path[40], stat[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  const char *paren = cprof__procfs_read(path, stat, sizeof stat) > 0 ? strrchr(stat, ')') : NULL;
  return paren && paren[1] == ' ' && paren[2] == 'Z';
}

int cprof__tree_ended_within(pid_t pid, long ms) {
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0)
    return errno == ESRCH;
  struct pollfd p = {.fd = pidfd, .events = POLLIN};
  int r = poll(&p, 1, (int)ms);
  close(pidfd);
  return r > 0;
}

pid_t cprof__tree_owner_wait(cprof__tree_watch_t *w, long ms) {
  if (role != CPROF_TREE_MEMBER)
    return -1;
  if (!w->owner) {
    /* A member that cannot read the directory (a worker that dropped
     * root) cannot know who serves, nor take over. */
    pid_t owner = read_owner_in(dir, 0);
    if (owner <= 0 || owner == getpid())
      return -1;
    w->owner = owner;
    w->pidfd = (int)syscall(SYS_pidfd_open, owner, 0);
    if (w->pidfd < 0 && errno == ESRCH)
      w->pidfd = PIDFD_ENDED;
  }
  if (w->pidfd >= 0) {
    struct pollfd p = {.fd = w->pidfd, .events = POLLIN};
    if (poll(&p, 1, (int)ms) <= 0)
      return 0;
  } else if (w->pidfd != PIDFD_ENDED) {
    nanosleep(&(struct timespec){ms / 1000, ms % 1000 * 1000000}, NULL);
  }
  if (!ended(w->owner, w->pidfd))
    return 0;
  pid_t now_owner = read_owner_in(dir, 0);
  if (now_owner != w->owner) { /* another took its place: watch that one */
    cprof__tree_watch_end(w);
    return 0;
  }
  if (w->owner == born_of)
    return w->owner;
  long long now = cprof__now_ms(CLOCK_MONOTONIC);
  if (!w->ended_ms)
    w->ended_ms = now;
  return now - w->ended_ms >= CPROF_TREE_GRACE_MS ? w->owner : 0;
}

void cprof__tree_watch_end(cprof__tree_watch_t *w) {
  if (w->pidfd >= 0)
    close(w->pidfd);
  w->pidfd = -1;
  w->owner = 0;
  w->ended_ms = 0;
}

int cprof__tree_claim(pid_t gone) {
  char path[sizeof dir + 16];
  snprintf(path, sizeof path, "%s/owner.lock", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0)
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
      ;
  int claimed = fd >= 0 && role == CPROF_TREE_MEMBER && read_owner_in(dir, 0) == gone;
  if (claimed) {
    cprof__tree_member_leave();
    set_role(CPROF_TREE_OWNER);
    owner_pid = getpid();
    write_owner();
  }
  if (fd >= 0)
    close(fd);
  return claimed;
}

void cprof__tree_member_leave(void) {
  char path[sizeof dir + 16];
  if (role == CPROF_TREE_MEMBER && cprof__tree_socket_path(getpid(), path, sizeof path) == 0)
    unlink(path);
}

/* Whether a process lives: signal 0, which may be refused (EPERM) for a
 * member that dropped to another user while we did not. */
static int alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

/* Whether someone listens on path: a connection made and closed. */
static int listened(const char *path) {
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sun.sun_path)
    return 0;
  strcpy(sun.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return 1; /* cannot tell: keep it */
  int ok = connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0 || errno == EAGAIN;
  close(fd);
  return ok;
}

/* The Unix sockets that listen, as /proc/net/unix lists them: one line
 * per socket, "Num RefCount Protocol Flags Type St Inode Path", a
 * listening one with flags 00010000 (__SO_ACCEPTCON). Whether path is one
 * of them; -1 when the file cannot be read. */
static int listening_in(const char *table, const char *path) {
  if (!table)
    return -1;
  size_t n = strlen(path);
  for (const char *p = table; (p = strstr(p, path)); p += n) {
    if (p[n] != '\n' && p[n] != '\0')
      continue;
    const char *line = p;
    while (line > table && line[-1] != '\n')
      line--;
    unsigned long flags;
    if (sscanf(line, "%*s %*s %*s %lx", &flags) == 1 && (flags & 0x10000))
      return 1;
  }
  return 0;
}

static char *read_small(const char *path, size_t max) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    if (len == cap) {
      char *bigger = cap < max ? realloc(buf, cap * 2 + 1) : NULL;
      if (!bigger)
        break;
      buf = bigger;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    len += (size_t)r;
  }
  close(fd);
  if (buf)
    buf[len] = '\0';
  return buf;
}

/* When the machine started, Unix time in ms (/proc/stat's btime), read
 * once; 0 unknown. */
static long long boot_ms(void) {
  static long long ms = -1;
  long long v = __atomic_load_n(&ms, __ATOMIC_RELAXED);
  if (v < 0) {
    char *st = read_small("/proc/stat", 1 << 20);
    const char *bt = st ? strstr(st, "\nbtime ") : NULL;
    v = bt ? atoll(bt + 7) * 1000LL : 0;
    free(st);
    __atomic_store_n(&ms, v, __ATOMIC_RELAXED);
  }
  return v;
}

int cprof__tree_describe(pid_t pid, cprof__tree_proc_t *out) {
  memset(out, 0, sizeof *out);
  out->pid = pid;
  out->state = '?';
  out->self = pid == getpid();
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  char *stat = read_small(path, 4096);
  if (!stat)
    return alive(pid) ? 0 : -ENOENT;
  /* "PID (COMM) S PPID ...": COMM may hold spaces and parentheses, so
   * the fields after it are counted from the last ')'. */
  char *open = strchr(stat, '('), *close_ = strrchr(stat, ')');
  if (open && close_ && close_ > open) {
    size_t n = (size_t)(close_ - open - 1);
    if (n >= sizeof out->name)
      n = sizeof out->name - 1;
    memcpy(out->name, open + 1, n);
    int ppid = 0;
    unsigned long long start = 0;
    char state = '?';
    /* Fields 3 (state), 4 (ppid) and 22 (starttime, clock ticks after boot). */
    if (sscanf(close_ + 1,
               " %c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
               "%*s %llu",
               &state, &ppid, &start) == 3) {
      out->state = state;
      out->ppid = ppid;
      long long boot = boot_ms();
      long ticks = sysconf(_SC_CLK_TCK);
      if (boot && ticks > 0)
        out->start_unix_ms = boot + (long long)(start * 1000ULL / (unsigned long long)ticks);
    }
  }
  free(stat);
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
  char *cmd = read_small(path, 4096);
  if (cmd) {
    /* NUL between words; nginx and others rewrite it as one line. */
    size_t n = 0;
    for (char *p = cmd; n + 1 < sizeof out->cmdline; p++) {
      if (*p == '\0' && (p[1] == '\0'))
        break;
      out->cmdline[n++] = *p ? *p : ' ';
    }
    while (n > 0 && out->cmdline[n - 1] == ' ')
      n--;
    out->cmdline[n] = '\0';
    free(cmd);
  }
  return 0;
}

void cprof__tree_started(const cprof__tree_proc_t *p, const char *fmt, char *out, size_t outlen) {
  time_t t = (time_t)(p->start_unix_ms / 1000);
  struct tm tm;
  out[0] = '\0';
  if (p->start_unix_ms && gmtime_r(&t, &tm))
    strftime(out, outlen, fmt, &tm);
}

static int by_pid(const void *a, const void *b) {
  const cprof__tree_proc_t *x = a, *y = b;
  return (x->pid > y->pid) - (x->pid < y->pid);
}

int cprof__tree_list(cprof__tree_proc_t *out, int max) {
  if (max <= 0)
    return 0;
  int n = 0;
  cprof__tree_describe(getpid(), &out[n++]);
  if (role != CPROF_TREE_OWNER)
    return n;
  DIR *d = opendir(dir);
  if (!d)
    return n;
  char *table = read_small("/proc/net/unix", 64 << 20);
  struct dirent *e;
  while ((e = readdir(d)) && n < max) {
    pid_t pid = entry_pid(e->d_name);
    if (!pid || pid == getpid())
      continue;
    char path[sizeof dir + 16];
    if (cprof__tree_socket_path(pid, path, sizeof path) != 0)
      continue;
    /* Not in the table: another network namespace's socket, or nobody's
     * (a process gone, or exec'd into another program): ask it. */
    int live = alive(pid) && (listening_in(table, path) == 1 || listened(path));
    if (!live) {
      unlinkat(dirfd(d), e->d_name, 0);
      continue;
    }
    if (cprof__tree_describe(pid, &out[n]) == 0)
      n++;
  }
  free(table);
  closedir(d);
  qsort(out + 1, (size_t)n - 1, sizeof *out, by_pid);
  return n;
}
