/* cprof's settings: parsed from cprof_options_t fields and CPROF_*
 * environment variables, validated, with one stderr line per bad value.
 *
 * The ground floor owns the constants the settings need (the unwinders,
 * the depths, the stack tables' memory): the parts that apply a setting
 * (unwind/, sample/) take them from here. */
#ifndef CPROF_CORE_CONFIG_H
#define CPROF_CORE_CONFIG_H

#include <stddef.h>

#include "cprof.h"

/* CPROF_UNWIND: the walker a sampler's handler uses (unwind/unwind.h). */
typedef enum cprof__unwinder {
  CPROF_UNWIND_DWARF = 0, /* unwind tables, cfa.c's cached walker: works without frame pointers */
  CPROF_UNWIND_FP = 1,    /* frame pointers: fast, needs -fno-omit-frame-pointer code */
} cprof__unwinder_t;

/* How many frames a stack keeps: CPROF_MAX_DEPTH, set at start, from
 * CPROF_MIN_DEPTH to CPROF_DEPTH_LIMIT. A deeper stack keeps its innermost
 * and outermost frames with a marker between (unwind/frames.h). Arrays that
 * outlive a setting (the CPU profile's buffer, the capture's slots) are
 * sized by the setting when they are made; CPROF_DEPTH_LIMIT sizes only
 * arrays that may hold any stack, never one on a signal handler's stack. */
#define CPROF_DEFAULT_DEPTH 128
#define CPROF_MIN_DEPTH 16
#define CPROF_DEPTH_LIMIT 1024

/* The limit over every stack table, in bytes (CPROF_MAX_MEMORY:
 * sample/stack_table.h). */
#define CPROF_DEFAULT_MAX_MEMORY ((size_t)32 << 20)

typedef struct cprof__addr {
  int enabled;    /* 0: no server ("0" or "") */
  char host[256]; /* "" for all interfaces (":port") */
  int port;       /* 0: the kernel picks one */
  /* A Unix socket at this path instead (a process of a tree serving its
   * owner: src/tree/tree.h); "" for TCP. Never from CPROF_ADDR. */
  char unix_path[108];
} cprof__addr_t;

typedef struct cprof__config {
  cprof__addr_t addr;
  char prefix[256]; /* "" or "/path" without a trailing slash */
  cprof__unwinder_t unwind;
  char auth[256];   /* "user:password", "" for none */
  char token[256];  /* "" for none */
  char tls_cert[512]; /* CPROF_TLS_CERT: a PEM file, "" for plain HTTP */
  char tls_key[512];  /* CPROF_TLS_KEY: its private key, set exactly when tls_cert is */
  int cpu_hz;       /* CPU profile sampling rate */
  long heap_rate;   /* mean bytes between heap samples; 0: off */
  long block_rate;  /* CPROF_BLOCK_RATE: ns (block profile); 0: off */
  long mutex_fraction; /* CPROF_MUTEX_FRACTION: 1 in n (mutex profile); 0: off */
  char output[512]; /* CPROF_OUTPUT: a directory, "" for none */
  size_t max_memory; /* CPROF_MAX_MEMORY: bytes the samplers' stack tables may hold */
  int max_depth;     /* CPROF_MAX_DEPTH: frames a stack keeps (unwind/frames.h) */
  /* The server's limits (http/limits.c) */
  long max_connections;        /* CPROF_MAX_CONNECTIONS: served at once */
  long max_connections_per_ip; /* CPROF_MAX_CONNECTIONS_PER_IP: of them, from one address */
  long read_timeout;           /* CPROF_READ_TIMEOUT: s for a whole request to arrive */
  long idle_timeout;           /* CPROF_IDLE_TIMEOUT: s a connection may stay silent */
  long max_profiles;           /* CPROF_MAX_PROFILES: expensive requests at once */
  /* The metrics sampler (metrics/sampler.c) */
  int metrics;              /* CPROF_METRICS: 0 off, 1 on (with the server) */
  long metrics_interval_ms; /* CPROF_METRICS_INTERVAL */
  long metrics_window_s;    /* CPROF_METRICS_WINDOW */
  /* The push to Pyroscope (push/push.c) */
  char push_url[512];    /* CPROF_PUSH_URL: http(s)://[user:pw@]host[:port][/path] or "" */
  char push_name[256];   /* CPROF_PUSH_NAME: APP or APP{k=v,...}; "" for the program's name */
  long push_interval_ms; /* CPROF_PUSH_INTERVAL */
  double wall_budget;    /* CPROF_WALL_BUDGET: the wall profile's share of one core, 0.02 */
} cprof__config_t;

#define CPROF_DEFAULT_CPU_HZ 100
#define CPROF_MAX_CPU_HZ 10000
#define CPROF_DEFAULT_HEAP_RATE 524288 /* Go's MemProfileRate */
#define CPROF_MAX_HEAP_RATE (1L << 30)
#define CPROF_MAX_BLOCK_RATE 1000000000000L /* 1000 s */
#define CPROF_MAX_MUTEX_FRACTION 1000000000L
#define CPROF_MIN_MAX_MEMORY ((size_t)1 << 20)
#define CPROF_DEFAULT_MAX_CONNECTIONS 64
#define CPROF_DEFAULT_MAX_CONNECTIONS_PER_IP 16
#define CPROF_DEFAULT_READ_TIMEOUT 10 /* s */
#define CPROF_DEFAULT_IDLE_TIMEOUT 30 /* s */
#define CPROF_DEFAULT_MAX_PROFILES 4
#define CPROF_LIMIT_MAX_CONNECTIONS 1024
#define CPROF_LIMIT_MAX_PROFILES 64
#define CPROF_LIMIT_TIMEOUT 3600 /* s */
#define CPROF_DEFAULT_METRICS_INTERVAL_MS 1000
#define CPROF_DEFAULT_METRICS_WINDOW_S 600
#define CPROF_MIN_METRICS_INTERVAL_MS 10
#define CPROF_MAX_METRICS_INTERVAL_MS 60000
#define CPROF_MIN_METRICS_WINDOW_S 10
#define CPROF_MAX_METRICS_WINDOW_S 86400
#define CPROF_MAX_METRICS_POINTS 100000 /* window / interval */
#define CPROF_DEFAULT_PUSH_INTERVAL_MS 15000 /* pyroscope-go's upload rate */
#define CPROF_MIN_PUSH_INTERVAL_MS 1000
#define CPROF_MAX_PUSH_INTERVAL_MS 3600000
#define CPROF_DEFAULT_WALL_BUDGET 0.02

/* Table-tested parsers. Each returns 0, or -EINVAL and a message of the
 * accepted form in err. */
int cprof__parse_addr(const char *s, cprof__addr_t *out, char *err, size_t errlen);
int cprof__parse_prefix(const char *s, char *out, size_t outlen, char *err, size_t errlen);
int cprof__parse_unwind(const char *s, cprof__unwinder_t *out, char *err, size_t errlen);
int cprof__parse_auth(const char *s, char *out, size_t outlen, char *err, size_t errlen);
int cprof__parse_token(const char *s, char *out, size_t outlen, char *err, size_t errlen);
/* A PEM file's path for CPROF_TLS_CERT or CPROF_TLS_KEY; the file is read
 * when the server starts, from its own descriptor table. */
int cprof__parse_tls_path(const char *s, char *out, size_t outlen, char *err, size_t errlen);
/* Whether a listen address reaches beyond this machine: ":port", 0.0.0.0,
 * [::], or any host that is not loopback (localhost, 127.0.0.0/8, ::1). */
int cprof__addr_is_exposed(const cprof__addr_t *a);
int cprof__parse_cpu_hz(const char *s, int *out, char *err, size_t errlen);
int cprof__parse_heap_rate(const char *s, long *out, char *err, size_t errlen);
/* A whole number from 0 (off) to max, of `what` ("nanoseconds", ...): the
 * block rate and the mutex fraction, from the environment and from
 * POST /debug/pprof/block?rate= and /mutex?fraction=. */
int cprof__parse_setting(const char *s, long max, const char *what, long *out, char *err,
                         size_t errlen);
/* A whole number from min to max of `what` ("connections", "seconds"):
 * the server's limits. */
int cprof__parse_limit(const char *s, long min, long max, const char *what, long *out, char *err,
                       size_t errlen);
/* A size in bytes, with an optional K, M or G (powers of 1024), at least
 * 1M: CPROF_MAX_MEMORY. */
int cprof__parse_memory(const char *s, size_t *out, char *err, size_t errlen);
/* A number of frames from CPROF_MIN_DEPTH to CPROF_DEPTH_LIMIT:
 * CPROF_MAX_DEPTH. */
int cprof__parse_max_depth(const char *s, int *out, char *err, size_t errlen);
/* A directory to write profiles into at exit: it must exist, or its parent
 * must, and be writable. */
int cprof__parse_output(const char *s, char *out, size_t outlen, char *err, size_t errlen);

/* CPROF_PUSH_URL: Pyroscope's base URL, http:// or https:// and a host,
 * with an optional user:password@, port and path, no query or fragment;
 * trailing slashes dropped. */
int cprof__parse_push_url(const char *s, char *out, size_t outlen, char *err, size_t errlen);
/* CPROF_PUSH_NAME: the application name, APP or APP{k=v,...}: APP of
 * letters, digits and ._-/, tag names of letters, digits and _ (not first
 * a digit), values without spaces or {},=. */
int cprof__parse_push_name(const char *s, char *out, size_t outlen, char *err, size_t errlen);

/* CPROF_WALL_BUDGET: a percentage of one core, "2" or "2%", from 0.1 to
 * 100, as a fraction (0.02). */
int cprof__parse_budget(const char *s, double *out, char *err, size_t errlen);

/* A duration, a whole number with a unit (ms, s, m, h; none: seconds),
 * from min_ms to max_ms, in milliseconds: CPROF_METRICS_INTERVAL and
 * CPROF_METRICS_WINDOW. */
int cprof__parse_duration_ms(const char *s, long min_ms, long max_ms, long *out, char *err,
                             size_t errlen);

/* Fills cfg from opts (may be NULL) and the environment. A bad value is
 * reported on stderr and its feature stays off; a bad credential turns the
 * server off instead, so a typo never exposes the endpoints. Returns 0, or
 * -EINVAL when any value was bad. */
int cprof__config_load(const cprof_options_t *opts, cprof__config_t *cfg);

/* The configuration in force for request handling: copied under a lock. */
void cprof__config_get(cprof__config_t *out);
/* Only the unwinder in force, without copying the rest: for calls the
 * program makes often (cprof_profile_add). */
cprof__unwinder_t cprof__config_unwind(void);
void cprof__config_set(const cprof__config_t *cfg);
/* Calls edit on the configuration in force, under its lock, so that two
 * settings changed at once (cprof_set_cpu_rate, cprof_set_heap_rate) do
 * not undo each other. edit must not call back into the configuration. */
void cprof__config_edit(void (*edit)(cprof__config_t *cfg, void *arg), void *arg);



void cprof__config_atfork_prepare(void);
void cprof__config_atfork_parent(void);
void cprof__config_atfork_child(void);
#endif
