/* The signal handlers' paths make no system call and allocate nothing: the
 * CPU profiler's SIGPROF handler and the all-thread capture handler, with
 * each unwinder, on a thread that could not make a system call if it
 * tried.
 *
 * A worker thread puts itself (and only itself: no SECCOMP_FILTER_FLAG_TSYNC)
 * under a seccomp filter that allows rt_sigreturn, which every handler
 * returns through, and exit, and traps everything else (SECCOMP_RET_TRAP:
 * the call is not made, and a SIGSYS handler counts it by number;
 * seccomp(2)). Then it runs deep in a recursion built without frame
 * pointers while the CPU profiler samples it at 1000 Hz (its timer made by
 * the main thread) and the main thread captures every thread's stack. It
 * leaves with a raw exit system call: the kernel still clears its tid
 * (CLONE_CHILD_CLEARTID), so pthread_join returns. The malloc family is
 * replaced by counting wrappers (count_alloc.h), and the worker's count must
 * not move either.
 *
 * Nor may a handler read the time stamp counter, as the vDSO's clocks do: a
 * thread can turn it off (seccomp's strict mode does, and PR_SET_TSC), and
 * then rdtsc raises SIGSEGV. The worker turns it off for itself, and a
 * SIGSEGV handler counts every rdtsc or rdtscp on it and steps over the
 * instruction, as the kernel's trap of a system call does above. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sample/cpu.h"
#include "sample/threads.h"
#include "symbol/symbolize.h"

#include "count_alloc.h"

#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define DEPTH 50

static long violations[512]; /* by system call number */
static long violation_total;

static void on_sigsys(int sig, siginfo_t *si, void *ucv) {
  (void)sig;
  int nr = si->si_syscall;
  if (nr >= 0 && nr < 512)
    __atomic_add_fetch(&violations[nr], 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&violation_total, 1, __ATOMIC_RELAXED);
  ((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RAX] = -ENOSYS; /* what the call returns */
}

static long tsc_reads;

/* A read of the time stamp counter where it is off: counted, and stepped
 * over with 0 in edx:eax (and ecx, for rdtscp). Any other fault is one. */
static void on_sigsegv(int sig, siginfo_t *si, void *ucv) {
  (void)si;
  ucontext_t *uc = ucv;
  const unsigned char *ip = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
  int len = ip[0] == 0x0f && ip[1] == 0x31                    ? 2 /* rdtsc */
            : ip[0] == 0x0f && ip[1] == 0x01 && ip[2] == 0xf9 ? 3 /* rdtscp */
                                                              : 0;
  if (!len) {
    signal(sig, SIG_DFL); /* a real fault: let it end the test */
    return;
  }
  __atomic_add_fetch(&tsc_reads, 1, __ATOMIC_RELAXED);
  uc->uc_mcontext.gregs[REG_RAX] = 0;
  uc->uc_mcontext.gregs[REG_RDX] = 0;
  if (len == 3)
    uc->uc_mcontext.gregs[REG_RCX] = 0;
  uc->uc_mcontext.gregs[REG_RIP] += len;
}

static int confine(void) {
  /* Before the filter, which traps prctl. */
  if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0)
    return -errno;
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigreturn, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof filter / sizeof *filter, .filter = filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return -errno;
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
    return -errno;
  return 0;
}

static int stop, armed;
static int confine_err = 1;
static pid_t worker_tid;
static long worker_allocations = -1;
static volatile uint64_t sink;

NOFP static uint64_t spin(void) {
  uint64_t x = sink;
  for (int i = 0; i < 1000; i++)
    x = x * 6364136223846793005ULL + 1;
  return x;
}

NOFP static uint64_t descend(int d) {
  volatile char pad[24];
  pad[0] = (char)d;
  uint64_t x = d == 0 ? spin() : descend(d - 1);
  return x + (uint64_t)pad[0];
}

static void *worker(void *arg) {
  (void)arg;
  STORE(worker_tid, gettid());
  int err = confine();
  STORE(confine_err, err);
  STORE(armed, 1);
  if (err != 0)
    return NULL;
  long before = allocations;
  while (!LOAD(stop))
    sink = descend(DEPTH);
  STORE(worker_allocations, allocations - before);
  syscall(SYS_exit, 0); /* the one call it may make; pthread_exit would make others */
  return NULL;
}

/* Whether the stack goes through `worker`: walked all the way up through
 * the recursion, wherever in it the signal came. */
static int whole(const uintptr_t *pcs, int depth) {
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  int found = 0;
  for (int i = 0; i < depth && !found; i++) {
    const char *name = cprof__symbolize_name(s, pcs[i] - (i > 0));
    found = name && strcmp(name, "worker") == 0;
  }
  cprof__symbolizer_release(s);
  return found;
}

typedef struct tally {
  long samples, periods, whole, cut;
} tally_t;

static void count(void *arg, const cprof__cpu_sample_t *smp) {
  tally_t *t = arg;
  /* The handler's samples only: not the stop's record of the expiries it
   * never delivered (cpu_timers.c, "Expiries never delivered"), which has no stack. */
  if (smp->tid != LOAD(worker_tid) || smp->cpu_ns)
    return;
  t->samples++;
  t->periods += smp->periods;
  t->whole += whole(smp->pcs, smp->depth);
  t->cut += smp->depth > 0 && smp->pcs[smp->depth - 1] == CPROF_PC_STACK_CUT;
}

static int64_t cpu_ms(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void run(cprof__unwinder_t how, const char *name) {
  memset(violations, 0, sizeof violations);
  violation_total = 0;
  tsc_reads = 0;
  STORE(stop, 0);
  STORE(armed, 0);
  STORE(worker_allocations, -1);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, worker, NULL) == 0);
  while (!LOAD(armed))
    usleep(1000);
  CHECK_EQ_INT(LOAD(confine_err), 0);
  clockid_t clock;
  CHECK_EQ_INT(pthread_getcpuclockid(th, &clock), 0);

  /* CPU samples: until the worker has had 300 ms of CPU (20 s at most). */
  tally_t t = {0};
  CHECK_EQ_INT(cprof__cpu_start(1000, how), 0);
  int64_t c0 = cpu_ms(clock);
  for (int i = 0; i < 2000 && cpu_ms(clock) - c0 < 300; i++) {
    usleep(10000);
    cprof__cpu_track_threads();
    cprof__cpu_drain(count, &t);
  }
  cprof__cpu_stop(count, &t);

  /* Captures of every thread's stack, the worker's by its handler. */
  int captured = 0, captured_whole = 0;
  for (int k = 0; k < 50; k++) {
    cprof__thread_dump_t d;
    int rc = cprof__threads_capture(how, 1000, &d);
    if (rc != 0) {
      fprintf(stderr, "%s: capture %d failed: %d\n", name, k, rc);
      continue;
    }
    for (int i = 0; i < d.n; i++) {
      if (d.v[i].tid != LOAD(worker_tid))
        continue;
      if (d.v[i].status != CPROF_THREAD_OK) {
        fprintf(stderr, "%s: capture %d: the worker's status %d, error %d\n", name, k,
                (int)d.v[i].status, d.v[i].err);
        continue;
      }
      captured++;
      captured_whole += whole(d.v[i].pcs, d.v[i].depth);
    }
    cprof__threads_dump_free(&d);
  }

  STORE(stop, 1);
  pthread_join(th, NULL);
  fprintf(stderr,
          "%s: %ld samples of the worker (%ld periods; %ld whole stacks, %ld cut), %d captures "
          "(%d whole); %ld system calls trapped, %ld reads of the time stamp counter\n",
          name, t.samples, t.periods, t.whole, t.cut, captured, captured_whole,
          LOAD(violation_total), LOAD(tsc_reads));
  for (int nr = 0; nr < 512; nr++)
    if (violations[nr])
      fprintf(stderr, "  system call %d made %ld times on the worker\n", nr, violations[nr]);
  /* 300 ms of CPU at 1000 Hz: 300 periods, in about 75 signals where the
   * kernel checks CPU timers at a 250 Hz tick (see cpu.c). */
  CHECK(t.samples >= 50 && t.periods >= 200);
  CHECK(captured >= 45);
  CHECK_EQ_INT(LOAD(violation_total), 0);
  CHECK_EQ_INT(LOAD(tsc_reads), 0);
  if (how == CPROF_UNWIND_DWARF) {
    /* Through code without frame pointers, all the way down. */
    CHECK_EQ_INT(t.whole, t.samples);
    CHECK_EQ_INT(t.cut, 0);
    CHECK_EQ_INT(captured_whole, captured);
  }
  if (COUNTING)
    CHECK_EQ_INT(LOAD(worker_allocations), 0);
}

int main(void) {
#ifdef __SANITIZE_THREAD__
  return check_skip("test_handler_sigsafe", "ThreadSanitizer's runtime delivers signals "
                                            "itself, with system calls of its own around each");
#endif
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSYS, &sa, NULL);
  sa.sa_sigaction = on_sigsegv;
  sigaction(SIGSEGV, &sa, NULL);
  CHECK_EQ_INT(cprof__threads_init(), 0);

  /* Each unwinder in a process of its own: a thread that left by a raw
   * exit never told the C library (or a sanitizer's runtime) it was gone,
   * and the next thread may be given its stack and TLS. */
  const cprof__unwinder_t hows[2] = {CPROF_UNWIND_DWARF, CPROF_UNWIND_FP};
  const char *names[2] = {"dwarf", "fp"};
  for (int i = 0; i < 2; i++) {
    fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
      check_failures = 0; /* the child's own */
      run(hows[i], names[i]);
      fflush(stderr);
      _exit(check_failures ? 1 : 0);
    }
    int status = -1;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return check_result("test_handler_sigsafe");
}
