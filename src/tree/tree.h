/* A process tree: a forking server (nginx's master and its workers, a
 * prefork pool) profiled through one address.
 *
 * The process that serves CPROF_ADDR is the tree's owner. At its first
 * fork it makes the tree's runtime directory (dir.c: mode 0700, its own
 * user's); every forked process that lives on (a member) serves its own
 * endpoints on PID.sock there, and the owner answers for all: it lists
 * them (the index, /debug/pprof/processes), hands a request with ?pid=N to
 * N's socket, and merges the profiles of all of them into one with a `pid`
 * label on every sample (fetch.c, merge.c). Members never merge: a request
 * that reaches one is about that process alone. */
#ifndef CPROF_TREE_TREE_H
#define CPROF_TREE_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/buf.h"

enum { CPROF_TREE_NONE, CPROF_TREE_OWNER, CPROF_TREE_MEMBER };

/* ---- dir.c ------------------------------------------------------------- */

/* This process's part: none (no server, or never forked), the owner, or
 * a member. */
int cprof__tree_role(void);
/* The owner, before its first fork: makes the runtime directory (once) and
 * becomes the owner. 0 or a negative errno (said once on stderr: the
 * children then stay unprofiled). */
int cprof__tree_own(void);
/* In a forked child of the owner or of a member (fork handler): the child
 * is a member of the same tree, if there is one. Returns 1 when it is. */
int cprof__tree_join_child(void);
/* A program exec'd by a process of a tree (CPROF_CHILDREN=1): a member of
 * its parent's tree, if the parent owns one or serves in one (found in
 * the base directories, by the "owner" file or the parent's socket).
 * Returns 1 when it is. */
int cprof__tree_join_parent(void);
/* Where a member of the tree serves (PID.sock in the directory), into out;
 * 0, or -ENAMETOOLONG, or -ENOENT without a tree. */
int cprof__tree_socket_path(pid_t pid, char *out, size_t outlen);
/* The owner ending (exit): the sockets of members gone are removed, and
 * the directory too if none is left; else a member takes its place. */
void cprof__tree_leave(void);
/* A member ending or exec'ing as another program: its socket is removed
 * (when the directory lets it). */
void cprof__tree_member_leave(void);

/* A member watching its tree's owner: which process, and a pidfd for it
 * (-1 without). */
typedef struct cprof__tree_watch {
  pid_t owner;
  int pidfd;
  long long ended_ms; /* when it was first seen ended, CLOCK_MONOTONIC; 0 not yet */
} cprof__tree_watch_t;
#define CPROF_TREE_WATCH_INIT                                                                      \
  { 0, -1, 0 }
/* Waits up to ms for the owner the member serves (the directory's "owner"
 * file says which: the first, or one that took its place) to end. Returns
 * its pid when it has and this member should take its place; 0 when not
 * (yet); -1 when this member cannot watch (it cannot read the directory:
 * a worker that dropped root). The owner's own child (a daemon's: the
 * fork its parent made before ending) takes its place at once; another
 * member only if none has after CPROF_TREE_GRACE_MS (its parent, a member
 * too, ended as well): an nginx started as a daemon makes its master so,
 * and the master's workers must not come first. */
#define CPROF_TREE_GRACE_MS 600
pid_t cprof__tree_owner_wait(cprof__tree_watch_t *w, long ms);
void cprof__tree_watch_end(cprof__tree_watch_t *w);
/* A member whose owner gone has ended takes its place: returns 1 when this
 * process is now the tree's owner (its socket removed, the "owner" file
 * naming it), 0 when another member was first. One at a time, under a
 * lock on the directory's "owner.lock". */
int cprof__tree_claim(pid_t gone);
/* Whether process pid has ended, or ends within ms (a pidfd's wait):
 * for a member whose connection closed unanswered. */
int cprof__tree_ended_within(pid_t pid, long ms);

/* A process of the tree, as the index lists it. */
typedef struct cprof__tree_proc {
  pid_t pid, ppid;
  char name[64];           /* /proc/PID/comm, or its command line's first word */
  char cmdline[160];       /* its command line, spaces between words ("nginx: worker process") */
  char state;              /* /proc/PID/stat's letter, '?' when it cannot be read */
  long long start_unix_ms; /* when it started, Unix time in ms; 0 unknown */
  int self;                /* the owner itself */
} cprof__tree_proc_t;

/* When p started, UTC, in strftime's fmt, into out ("" unknown). */
void cprof__tree_started(const cprof__tree_proc_t *p, const char *fmt, char *out, size_t outlen);
/* The owner and its members, owner first then by pid, into out[max]:
 * how many. Sockets of processes gone (or exec'd into another program:
 * nobody listens) are removed on the way. */
int cprof__tree_list(cprof__tree_proc_t *out, int max);
/* Reads what the index says of one process (from /proc). 0 or -ENOENT. */
int cprof__tree_describe(pid_t pid, cprof__tree_proc_t *out);

/* ---- fetch.c ----------------------------------------------------------- */

/* One member's answer to a request the owner made on its socket. */
typedef struct cprof__tree_reply {
  pid_t pid;
  int status;      /* HTTP status, 0 when none came */
  char error[200]; /* why there is no answer: "connection refused", "timed out" */
  char content_type[96];
  char disposition[160]; /* Content-Disposition, "" when none */
  cprof__buf_t body;
} cprof__tree_reply_t;

/* GETs target (path and query, "/debug/pprof/heap?debug=1") from each of
 * the n members in replies[i].pid at once, waiting at most timeout_ms for
 * all. Each reply's body is initialised here; the caller frees them
 * (cprof__tree_replies_free). cancelled, when not NULL, is asked between
 * waits: nonzero ends the wait early (the replies not in then say so). */
void cprof__tree_fetch(cprof__tree_reply_t *replies, int n, const char *target, long timeout_ms,
                       int (*cancelled)(void *), void *ctx);
void cprof__tree_replies_free(cprof__tree_reply_t *replies, int n);

/* ---- merge.c ----------------------------------------------------------- */

/* One process's profile.proto (gzip or not), by pid. */
typedef struct cprof__tree_part {
  pid_t pid;
  const void *data;
  size_t len;
} cprof__tree_part_t;

/* The parts merged into one gzip-compressed profile.proto appended to out:
 * every sample labelled pid=PID (a number, so that -tagfocus=pid=N and
 * -tags work), the header as pprof's merge makes it, and a comment for
 * each of the missing lines ("pid 812 (nginx): not reached: timed out").
 * 0, or -EINVAL with a line in err (a part that is not a profile, parts of
 * different types), or -ENOMEM. */
int cprof__tree_merge(const cprof__tree_part_t *parts, int n, const char *const *missing,
                      int nmissing, cprof__buf_t *out, char *err, size_t errlen);

/* ---- figures.c --------------------------------------------------------- */

/* A process's figures, read from /proc/PID by another process (the tree's
 * owner, for its metrics): cumulative but the gauges; -1 where a file
 * cannot be read (io and fd need the right to ptrace it). */
typedef struct cprof__tree_figures {
  pid_t pid;
  char name[64];         /* /proc/PID/stat's comm */
  long long start_ticks; /* its start, clock ticks after boot: a pid reused is another process */
  int64_t cpu_user_us, cpu_system_us; /* every thread's */
  int64_t rss_bytes, vm_bytes, threads;
  int64_t faults_minor, faults_major;     /* every thread's */
  int64_t ctx_voluntary, ctx_involuntary; /* the main thread's (/proc/PID/status) */
  int64_t read_bytes, write_bytes;        /* /proc/PID/io rchar, wchar */
  int64_t open_fds;
} cprof__tree_figures_t;

/* Reads process pid's figures into f. 0, or -ENOENT when it is gone. Only
 * from a thread in cprof's own descriptor table; allocates nothing. */
int cprof__tree_figures(pid_t pid, cprof__tree_figures_t *f);

/* ---- symbolize.c ------------------------------------------------------- */

/* A member writes profile.proto with addresses and mappings only (it loads
 * no debug information: symbol/symbolize.h, cprof__symbolizer_bare); the
 * owner names them, once for the tree. Each location without lines is
 * placed in the owner's own mapping of its mapping's file, at the same
 * file offset, and named by the owner's symbolizer; what the owner cannot
 * place (a library the member dlopen'd after the fork) stays an address.
 * 0 or -ENOMEM. */
struct cprof__pf;
int cprof__tree_symbolize(struct cprof__pf *p);
/* The same for a member's answer as it came (profile.proto, gzip or not):
 * 1 with the profile named, gzip-compressed, appended to out; 0 when data
 * is not a profile (to pass on as it is); or -ENOMEM. */
int cprof__tree_symbolize_proto(const void *data, size_t len, cprof__buf_t *out);
/* A member's goroutine?debug=2 dump, whose frames it wrote as addresses
 * ("0xPC (FILE+0xOFFSET)"), with each frame the owner can place named as
 * the member would have named it, appended to out. 0 or -ENOMEM. */
int cprof__tree_name_dump(const char *text, size_t len, cprof__buf_t *out);

#endif
