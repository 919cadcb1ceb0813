/*
 * cprof: live /debug/pprof/ endpoints for C and C++ programs.
 *
 * This header is the whole public API. A program gets the endpoints in one of
 * three ways:
 *
 *   1. No code change: LD_PRELOAD=libcprof.so CPROF_ADDR=127.0.0.1:6060 ./prog
 *      A library constructor reads the environment and starts the server.
 *   2. Linked: call cprof_start(NULL) (environment) or cprof_start(&opts)
 *      early in main, link with -lcprof.
 *   3. Inside the program's own HTTP server: pass each request under
 *      /debug/pprof/ to cprof_handle_request() and send back what it fills in.
 *
 * Settings: cprof_start(NULL), the LD_PRELOAD constructor, and every option
 * field left NULL read CPROF_* environment variables (CPROF_ADDR, the listen
 * address, default 127.0.0.1:6060; CPROF_HEAP_RATE; CPROF_OUTPUT; ...).
 * doc/settings.md lists every one, with its accepted form and default.
 *
 * A malformed value is reported once on stderr, naming the variable and the
 * accepted form, and that feature stays off; the program runs on.
 *
 * Names in stripped programs come from their debug files: in
 * /usr/lib/debug/.build-id (Debian's -dbgsym packages), through
 * .gnu_debuglink, and, only when libdebuginfod's own DEBUGINFOD_URLS is set,
 * from those debuginfod servers: fetched in the background (never while a
 * profile waits), each within DEBUGINFOD_MAXTIME seconds (default 30), kept
 * in libdebuginfod's cache (DEBUGINFOD_CACHE_PATH), and used from the next
 * profile on. A profile says in a comment (shown by go tool pprof -top)
 * which modules have no debug symbols, and what would give them.
 *
 * Errors: functions that return int return 0 on success or a negative
 * errno-style code (-EINVAL for a bad argument, never a crash); see
 * cprof_strerror(). The rate setters return the previous setting, or a
 * negative code; cprof_profile_new and cprof_profiles return NULL and set
 * errno. Every function may be called from any thread, before cprof_start()
 * and after cprof_stop().
 *
 * Versions: one rule lets the library grow without breaking programs
 * compiled against this header. Every struct a program allocates keeps its
 * size from version to version: it ends in reserved_ words, whose place
 * later fields take (as the reserved fields of libuv's uv.h), and the
 * library checks each size when it is built.
 *   - A struct the program fills in and passes, cprof_options_t and
 *     cprof_request_t, is zero-initialised, reserved_ included:
 *     `cprof_request_t req = {.method = "GET", .path = path};` or memset.
 *     A field added later reads as zero from a program that predates it,
 *     and zero means what its absence meant.
 *   - A struct the library fills in, cprof_response_t, needs no
 *     initialisation: cprof writes the whole of it.
 *   - A struct the library allocates and hands out, cprof_profile_info_t,
 *     may grow at its end: a program reads it through cprof's pointer and
 *     never allocates or copies one. cprof_header_t, the element of an
 *     array a program indexes, never changes.
 * A field added after its struct's first version says "Since X.Y.Z"; an
 * older library ignores it. Functions came in 0.1.0 (cprof_start, _stop,
 * _addr, _strerror, _label_set, _label_clear, _set_block_rate,
 * _set_mutex_fraction, _handle_request, _response_free), in 0.2.0 (cprof_do,
 * cprof_version, _set_cpu_rate, _set_heap_rate, the profile objects and
 * custom profiles) and in 0.3.0 (the trace calls, cprof_profiles).
 * cprof_options_t has had its reserved_ words since 0.2.0 (a program built
 * against 0.1.0 must be recompiled, once); cprof_request_t and
 * cprof_response_t have theirs since 0.3.0 (a program built against an
 * older header that calls cprof_handle_request must be recompiled, once).
 */
#ifndef CPROF_H
#define CPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CPROF_EXTERN __attribute__((visibility("default")))
#else
#define CPROF_EXTERN
#endif

#define CPROF_VERSION_MAJOR 0
#define CPROF_VERSION_MINOR 3
#define CPROF_VERSION_PATCH 0
#define CPROF_VERSION_STRING "0.3.0"

/* Options for cprof_start(). Zero-initialise, then set what you need; a NULL
 * field is taken from the environment variable named beside it, and then from
 * the default. Every field is a string in its variable's syntax (so "0" turns
 * the heap profile off, and NULL leaves it to CPROF_HEAP_RATE).
 *
 * The struct keeps its size across versions (see "Versions" above): new
 * fields take the place of reserved_ entries, which must stay zero (NULL). */
typedef struct cprof_options {
  const char *addr;   /* CPROF_ADDR; "" or "0" means no server */
  const char *prefix; /* CPROF_PREFIX */
  const char *unwind; /* CPROF_UNWIND: "dwarf" or "fp" */
  const char *auth;   /* CPROF_AUTH: "user:password" */
  const char *token;  /* CPROF_TOKEN */
  /* Since 0.2.0 */
  const char *output;          /* CPROF_OUTPUT: a directory */
  const char *cpu_hz;          /* CPROF_CPU_HZ */
  const char *heap_rate;       /* CPROF_HEAP_RATE */
  const char *block_rate;      /* CPROF_BLOCK_RATE */
  const char *mutex_fraction;  /* CPROF_MUTEX_FRACTION */
  const char *max_memory;      /* CPROF_MAX_MEMORY */
  const char *max_depth;       /* CPROF_MAX_DEPTH */
  const char *tls_cert;        /* CPROF_TLS_CERT */
  const char *tls_key;         /* CPROF_TLS_KEY */
  const char *max_connections; /* CPROF_MAX_CONNECTIONS */
  const char *max_connections_per_ip; /* CPROF_MAX_CONNECTIONS_PER_IP */
  const char *read_timeout;    /* CPROF_READ_TIMEOUT */
  const char *idle_timeout;    /* CPROF_IDLE_TIMEOUT */
  const char *max_profiles;    /* CPROF_MAX_PROFILES */
  /* Since 0.3.0 */
  const char *metrics;          /* CPROF_METRICS: "0" turns the metrics sampler off */
  const char *metrics_interval; /* CPROF_METRICS_INTERVAL: "1s", "500ms" */
  const char *metrics_window;   /* CPROF_METRICS_WINDOW: "600s", "10m" */
  const char *push_url;         /* CPROF_PUSH_URL: Pyroscope, "http://pyroscope:4040" */
  const char *push_name;        /* CPROF_PUSH_NAME: "checkout{env=prod}" */
  const char *push_interval;    /* CPROF_PUSH_INTERVAL: "15s" */
  const char *wall_budget;      /* CPROF_WALL_BUDGET: "2%" */
  const void *reserved_[25];    /* zero */
} cprof_options_t;

/* Starts cprof. With opts == NULL everything comes from the environment.
 * Returns 0, -EALREADY if cprof is already running, -EINVAL for a malformed
 * option, or the errno of a listen failure such as -EADDRINUSE. Either
 * failure is also one line on stderr, and cprof is then running with that
 * feature off: the rest stays usable through cprof_handle_request(), and
 * cprof_stop() is needed before another cprof_start(). */
CPROF_EXTERN int cprof_start(const cprof_options_t *opts);

/* Writes CPROF_OUTPUT's profiles, if recording; stops the HTTP server, if
 * any, and waits for requests in flight to end. cprof_start() may be called
 * again afterwards. */
CPROF_EXTERN void cprof_stop(void);

/* The address the server listens on ("127.0.0.1:6060"), or NULL when no
 * server runs. Useful with a port of 0. */
CPROF_EXTERN const char *cprof_addr(void);

/* A one-line description of a code returned by a cprof function. */
CPROF_EXTERN const char *cprof_strerror(int err);

/* The library's version at run time ("0.3.0"), which may differ from the
 * CPROF_VERSION_STRING a program was compiled with. */
CPROF_EXTERN const char *cprof_version(void);

/* ---- Labels: the C counterpart of Go's pprof.Do ---- */

#define CPROF_MAX_LABELS 8    /* per thread */
#define CPROF_MAX_LABEL_KEY 31  /* bytes */
#define CPROF_MAX_LABEL_VALUE 63

/* Runs fn(arg) with the labels in kv added to the calling thread's, as Go's
 * pprof.Do, and restores the thread's previous labels when fn returns.
 * kv is a NULL-terminated list of key, value pairs:
 *
 *   static const char *const kv[] = {"request", "checkout", NULL};
 *   cprof_do(kv, handle, req);
 *
 * A key already set takes the new value for the call. Nested calls stack.
 * Labels show in the CPU profile and the goroutine profile (go tool pprof
 * -tags, -tagfocus), and threads created inside fn start with them, as
 * goroutines inherit labels; a label for a thread's whole life is cprof_do
 * around its start routine's work. Keys and values are copied, non-empty,
 * at most CPROF_MAX_LABEL_KEY and CPROF_MAX_LABEL_VALUE bytes. Returns 0
 * after running fn; -EINVAL (fn not run) for a NULL kv or fn, an odd count,
 * or a NULL, empty or over-long key or value; -ENOSPC (fn not run) when the
 * thread would have more than CPROF_MAX_LABELS keys; -ENOMEM (fn not run).
 * Async-signal-unsafe; cheap. */
CPROF_EXTERN int cprof_do(const char *const *kv, void (*fn)(void *), void *arg);

/* cprof_do is cprof's one label model. The two calls below, of 0.1.0, set
 * and clear a label with no scope (one forgotten clear labels all the
 * thread's later work); they keep working, as cprof_do's own steps, and
 * warn when compiled. Define CPROF_DISABLE_DEPRECATION before including
 * this header to compile them without the warning. */
#if defined(__GNUC__) && !defined(CPROF_DISABLE_DEPRECATION)
#define CPROF_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define CPROF_DEPRECATED(msg)
#endif

/* Labels the calling thread's samples with key=value until cleared, with
 * cprof_do's rules for the pair. Returns 0; -EINVAL for a NULL, empty or
 * over-long key or value; -ENOSPC when the thread already has
 * CPROF_MAX_LABELS other keys; -ENOMEM. Setting a key again replaces its
 * value. Deprecated: use cprof_do. */
CPROF_EXTERN int cprof_label_set(const char *key, const char *value)
    CPROF_DEPRECATED("use cprof_do");

/* Removes a label of the calling thread. Returns 0, or -ENOENT.
 * Deprecated: use cprof_do. */
CPROF_EXTERN int cprof_label_clear(const char *key) CPROF_DEPRECATED("use cprof_do");

/* Turns the block profile on (ns > 0) or off (0), as Go's
 * runtime.SetBlockProfileRate: every wait in a pthread lock, condition
 * variable, semaphore, barrier, join or spin lock (timed and clock* calls
 * included) of at least ns nanoseconds is
 * recorded with the waiter's stack; shorter ones are sampled with
 * probability wait/ns and weighed up. A negative ns changes nothing.
 * Returns the previous rate. Also POST /debug/pprof/block?rate=NS. */
CPROF_EXTERN long cprof_set_block_rate(long ns);

/* Turns the mutex profile on (n > 0) or off (0), as Go's
 * runtime.SetMutexProfileFraction: 1 in n unlocks of a contended pthread
 * mutex or rwlock is recorded, with the unlocking (holding) thread's stack
 * and the delay its hold caused the waiters; the profile scales by n. A
 * negative n changes nothing. Returns the previous fraction. Also
 * POST /debug/pprof/mutex?fraction=N. */
CPROF_EXTERN long cprof_set_mutex_fraction(long n);

/* Sets the CPU profile's sampling rate, in samples per second of each
 * thread's CPU time, 1..10000, as Go's runtime.SetCPUProfileRate: it
 * applies to the next profile started, by cprof_cpu_profile_start() or a
 * /debug/pprof/profile request that starts the recording (one that joins
 * a running recording takes its rate). A negative
 * hz changes nothing. Returns the previous rate, or -EINVAL for 0 or above
 * 10000: a long, as every cprof_set_* returns (an int in 0.2.0).
 * cprof_start() sets the rate again from CPROF_CPU_HZ. */
CPROF_EXTERN long cprof_set_cpu_rate(int hz);

/* Sets the heap profile's rate, as Go's runtime.MemProfileRate: one sample
 * per this many bytes allocated, on average; 0 turns heap sampling off
 * (blocks sampled before stay in the profile until freed). A negative
 * value changes nothing. Returns the previous rate in force (0 before
 * cprof_start(), which sets it from CPROF_HEAP_RATE), -EINVAL above 2^30,
 * or -ENOTSUP for a rate above 0 when malloc is not cprof's to sample (a
 * sanitizer's, or one that comes before libcprof: cprof_start() says which
 * on stderr). */
CPROF_EXTERN long cprof_set_heap_rate(long bytes);

/* ---- Profiles as objects: the C counterpart of Go's runtime/pprof ---- */

/* Writes the profile of that name to fd, as Go's
 * pprof.Lookup(name).WriteTo(w, debug): "goroutine" (or "threads"),
 * "threadcreate", "heap", "allocs", "block", "mutex", "wall", or a custom
 * profile. debug 0 is gzip-compressed profile.proto; 1 the legacy text; 2,
 * for goroutine, every thread's stack. "wall" is a recording: the call
 * samples every thread for the next second (at 50 Hz, within
 * CPROF_WALL_BUDGET) and returns, and it is profile.proto whatever the
 * debug, as /debug/pprof/wall is. Returns 0; -ENOENT for an unknown name;
 * -EINVAL for a NULL name or a negative debug; -EBADF or another write(2)
 * error for fd; -ENOMEM. Thread-safe; usable before cprof_start and after
 * cprof_stop (a profile whose sampler is off is written empty). */
CPROF_EXTERN int cprof_profile_write(const char *name, int fd, int debug);

/* One profile of cprof_profiles()'s list. cprof allocates it and may add
 * fields at its end: read it through the list, never copy or allocate one. */
typedef struct cprof_profile_info {
  const char *name;        /* as cprof_profile_write takes it: "heap", a custom profile's */
  const char *description; /* the index's line for it; "" when it has none */
  long count;              /* Go's Profile.Count: records, threads or keys, as the index shows */
} cprof_profile_info_t;

/* The profiles cprof_profile_write can write, as Go's pprof.Profiles(): the
 * built-in ones and every custom profile, sorted by name, each with its
 * count now. A NULL-terminated array of pointers, which the caller releases
 * with cprof_profiles_free(); NULL with errno ENOMEM. The CPU profile is not
 * in it, as it is not in Go's (it is a recording: cprof_cpu_profile_start).
 *
 *   cprof_profile_info_t **all = cprof_profiles();
 *   for (size_t i = 0; all && all[i]; i++)
 *     printf("%s %ld\n", all[i]->name, all[i]->count);
 *   cprof_profiles_free(all);
 */
CPROF_EXTERN cprof_profile_info_t **cprof_profiles(void);

/* Releases what cprof_profiles() returned; NULL does nothing. */
CPROF_EXTERN void cprof_profiles_free(cprof_profile_info_t **list);

/* Starts a CPU profile of the whole process, as Go's
 * pprof.StartCPUProfile; cprof_cpu_profile_stop() ends it and writes it, as
 * gzip-compressed profile.proto, to fd (which must stay open until then).
 * The profile covers the time from this call to the stop, and shares
 * cprof's one CPU recording with whoever else profiles meanwhile
 * (/debug/pprof/profile requests, CPROF_OUTPUT, a push), without
 * conflict; if one runs already, this profile takes its rate. As the call
 * has no handle, the program has one such profile at a time, as Go's
 * StartCPUProfile: a second start before the stop is -EBUSY. Returns 0;
 * -EBUSY then, or when the program uses SIGPROF itself (its own handler or
 * setitimer(ITIMER_PROF)); -EUSERS when 16 CPU profiles already run;
 * -EBADF for a descriptor that is not open for writing; or why no thread
 * can be sampled (see cprof_strerror). */
CPROF_EXTERN int cprof_cpu_profile_start(int fd);

/* Stops the profile cprof_cpu_profile_start() started and writes it to its
 * fd. Returns 0; -ENOENT when none was started; a write(2) error. */
CPROF_EXTERN int cprof_cpu_profile_stop(void);

/* ---- Custom profiles: the C counterpart of Go's pprof.NewProfile ---- */

typedef struct cprof_profile cprof_profile_t;

/* A new profile of that name, listed in the index with its count, served at
 * /debug/pprof/NAME in every format, and written by cprof_profile_write.
 * name: 1 to 64 of A-Z a-z 0-9 . _ - ; description: one line for the index
 * (may be NULL). Returns NULL with errno EEXIST when the name is taken
 * (built-in profiles and endpoints included), EINVAL for a bad name,
 * ENOSPC past 64 profiles, ENOMEM. Profiles live as long as the process. */
CPROF_EXTERN cprof_profile_t *cprof_profile_new(const char *name, const char *description);

/* Records the caller's stack under key (any pointer, not NULL: the
 * connection, the open file), as Go's Profile.Add. skip drops that many
 * frames above the caller (0: the stack starts at the function that
 * called cprof_profile_add; a skip past the stack's end records one frame
 * that says so). Returns 0; -EEXIST if key is in the profile already;
 * -EINVAL for a NULL profile or key or a negative skip; -ENOMEM, also when
 * the profile holds 2^20 keys already. */
CPROF_EXTERN int cprof_profile_add(cprof_profile_t *p, const void *key, int skip);

/* Removes key's record. Returns 0; -ENOENT when key is not in the
 * profile; -EINVAL for a NULL profile. */
CPROF_EXTERN int cprof_profile_remove(cprof_profile_t *p, const void *key);

/* ---- Trace: regions, tasks and logs, as Go's runtime/trace ---- */

/* What /debug/pprof/trace shows of the program's own structure: regions
 * (a span of one thread's time, nested), tasks (one logical operation, which
 * may pass between threads) and log messages, on the trace's timeline; the
 * wall-clock profile labels each thread's samples with its innermost open
 * region. While neither records, each of these calls costs one relaxed
 * atomic load and returns, so they may stay in hot code. All are safe from
 * any thread, before cprof_start() and after cprof_stop(); none may be
 * called from a signal handler. A NULL string is taken as "". Longer
 * strings are cut, at a character boundary of UTF-8 text, to these lengths
 * in bytes: */
#define CPROF_MAX_TRACE_NAME 63     /* region and task names, log categories */
#define CPROF_MAX_TRACE_MESSAGE 255 /* log messages */

/* Opens a region of the calling thread, as Go's trace.StartRegion; the
 * next cprof_region_end() on the same thread closes it. Regions nest: the
 * innermost CPROF_MAX_TRACE_DEPTH (16) are kept by name, deeper ones are
 * counted (their ends come back nameless). A region begun while nothing
 * recorded is not known to a trace or wall profile started later, and its
 * end is then ignored, as is an end with no region open. */
CPROF_EXTERN void cprof_region_begin(const char *name);
CPROF_EXTERN void cprof_region_end(void);
#define CPROF_MAX_TRACE_DEPTH 16

/* Starts a task, as Go's trace.NewTask, and returns its id: unique in the
 * process, never 0. Returns 0 when no trace records; cprof_task_end(0) does
 * nothing. cprof_task_end() may be called on any thread. */
CPROF_EXTERN uint64_t cprof_task_begin(const char *name);
CPROF_EXTERN void cprof_task_end(uint64_t id);

/* Writes message on the trace's timeline under category, as Go's
 * trace.Log; nothing when no trace records. */
CPROF_EXTERN void cprof_trace_log(const char *category, const char *message);

/* 1 while a trace records (/debug/pprof/trace), else 0, as Go's
 * trace.IsEnabled: for work done only to feed cprof_trace_log. */
CPROF_EXTERN int cprof_trace_enabled(void);

/* The calls above, where the compiler allows it, test whether anything
 * listens in the caller, with one relaxed load of this word, before
 * calling into the library: with nothing listening a region pair costs a
 * load and a branch each, not two calls. So their arguments are not
 * evaluated while nothing listens (write cprof_trace_log's message
 * plainly, or test cprof_trace_enabled() first). The word is cprof's:
 * read it, never write it. Define CPROF_NO_INLINE_TRACE before including
 * this header for plain calls. */
CPROF_EXTERN extern int cprof_trace_listening_;
#if defined(__GNUC__) && !defined(CPROF_NO_INLINE_TRACE)
#define CPROF_TRACE_WORD_ __atomic_load_n(&cprof_trace_listening_, __ATOMIC_RELAXED)
/* Bit 0: a trace records; bit 1: a wall profile samples (regions only). */
#define cprof_region_begin(name) ((CPROF_TRACE_WORD_ & 3) ? cprof_region_begin(name) : (void)0)
#define cprof_region_end() ((CPROF_TRACE_WORD_ & 3) ? cprof_region_end() : (void)0)
#define cprof_task_begin(name) ((CPROF_TRACE_WORD_ & 1) ? cprof_task_begin(name) : (uint64_t)0)
#define cprof_task_end(id) ((CPROF_TRACE_WORD_ & 1) ? cprof_task_end(id) : (void)0)
#define cprof_trace_log(category, message)                                                         \
  ((CPROF_TRACE_WORD_ & 1) ? cprof_trace_log(category, message) : (void)0)
#define cprof_trace_enabled() (CPROF_TRACE_WORD_ & 1)
#endif

/* ---- Serving from the program's own HTTP server ---- */

typedef struct cprof_request {
  const char *method;        /* "GET", "POST", ... */
  const char *path;          /* URL path, without the query: "/debug/pprof/heap" */
  const char *query;         /* raw query string without '?', or NULL */
  const char *body;          /* request body (POST), or NULL */
  size_t body_len;
  const char *authorization; /* the Authorization header, or NULL */
  /* Optional: long requests poll this and give up when it returns non-zero
   * (the client went away). */
  int (*is_cancelled)(void *ctx);
  void *ctx;
  const void *reserved_[8]; /* zero: later fields take their place */
} cprof_request_t;

/* One header of a response. Never changes (see "Versions" above). */
typedef struct cprof_header {
  const char *name;
  const char *value;
} cprof_header_t;

/* The most headers a response carries in this version; a later library may
 * set more, so loop to nheaders. */
#define CPROF_MAX_HEADERS 8

/* Filled in whole by cprof_handle_request(): a program declares one and
 * need not initialise it. */
typedef struct cprof_response {
  int status;              /* HTTP status code */
  cprof_header_t *headers; /* nheaders of them; owned by the response */
  int nheaders;
  char *body; /* response body; owned by the response */
  size_t body_len;
  char *storage_;     /* internal: the headers and their values */
  void *reserved_[8]; /* cprof's: later fields take their place */
} cprof_response_t;

/* Routes one request to the profiling endpoints and fills in *resp: status,
 * every header to send, and the body. Always fills a complete response (a
 * 404 for paths it does not serve) and returns 0, or -ENOMEM when it could
 * not. Release the response with cprof_response_free(). Thread-safe. */
CPROF_EXTERN int cprof_handle_request(const cprof_request_t *req, cprof_response_t *resp);

CPROF_EXTERN void cprof_response_free(cprof_response_t *resp);

#ifdef __cplusplus
}
#endif

#endif /* CPROF_H */
