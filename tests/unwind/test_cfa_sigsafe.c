/* The signal handlers' walker (cprof__unwind_cfa_sigsafe) against libgcc's
 * _Unwind_Backtrace, the judge, called in the same handler: past the
 * handler's own trampoline, both must give the same frames, all the way to
 * the end of the stack. The signals land anywhere in a recursion built
 * without frame pointers that keeps going down and up (so in prologues and
 * epilogues too), under a frame that realigns the stack; then in the program's own signal handler,
 * on the thread's stack and on an alternate signal stack, so that the walk crosses a signal frame
 * of the program's; with the stack's top known from TLS and from a snapshot of the address space.
 *
 * Where there are no rules to follow: code without unwind tables (made at
 * run time here, as a JIT would) is stepped over by its return address at
 * the stack pointer or by its frame pointer, and a frame that neither
 * explains ends the stack with CPROF_PC_STACK_CUT; so does a stack whose
 * top nobody knows. And contexts full of random words, with code pointers
 * among them, never make the walker read outside the stack it is given. */
#include <alloca.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unwind.h>

#include "check.h"
#include "arch/arch.h"
#include "unwind/bounds.h"
#include "unwind/cfa.h"
#include "unwind/maps.h"
#include "unwind/pc.h"

#define MAX 128
#ifdef __SANITIZE_THREAD__
#define UNDER_TSAN 1
#else
#define UNDER_TSAN 0
#endif
#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

/* ---- the handler: our walk, then the judge's ---- */

typedef struct judge {
  uintptr_t pc[MAX]; /* the pc inside each frame's instruction */
  int n, signal_frames;
} judge_t;

static _Unwind_Reason_Code collect(struct _Unwind_Context *ctx, void *arg) {
  judge_t *j = arg;
  int before = 0;
  uintptr_t ip = (uintptr_t)_Unwind_GetIPInfo(ctx, &before);
  if (ip == 0 || j->n >= MAX)
    return _URC_END_OF_STACK;
  /* The frames up to and including the handler's trampoline are the
   * handler's own; the interrupted context is the first signal frame. */
  j->signal_frames += before;
  if (j->signal_frames > 0)
    j->pc[j->n++] = before ? ip : ip - 1;
  return _URC_NO_REASON;
}

static const cprof__maps_t *snapshot; /* the walk's stack bounds, besides TLS */
static int comparing = 1;
static int handled, compared, matched, deepest, crossed;
static uintptr_t first_ours[MAX], first_judge[MAX];
static int first_n_ours = -1, first_n_judge;
static uintptr_t last[MAX]; /* the last walk, for the JIT cases */
static int last_n;

/* libgcc, the judge, is no walker for any instruction: interrupted in the
 * prologue of a frame realigned through a DRAP (realigned(), below), its
 * _Unwind_Backtrace reads through a CFA it got wrong and faults, in about
 * one run in three on an AMD EPYC (never in our walk, which bounds every
 * read). Such a fault ends the judging of that walk, which is counted
 * apart, not compared; SIGSEGV anywhere else still ends the test. */
static sigjmp_buf judge_fault;
static volatile sig_atomic_t judging;
static int judge_faults;

static void on_segv(int sig) {
  if (judging)
    siglongjmp(judge_fault, 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void on_prof(int sig, siginfo_t *si, void *ucv) {
  (void)sig, (void)si;
  uintptr_t ours[MAX];
  int n = cprof__unwind_cfa_sigsafe(ucv, snapshot, ours, MAX);
  memcpy(last, ours, sizeof ours);
  STORE(last_n, n);
  if (comparing) {
    judge_t j = {.n = 0};
    if (sigsetjmp(judge_fault, 1) != 0) {
      judging = 0;
      judge_faults++;
      __atomic_add_fetch(&handled, 1, __ATOMIC_RELEASE);
      return;
    }
    judging = 1;
    _Unwind_Backtrace(collect, &j);
    judging = 0;
    int same = n == j.n;
    for (int i = 0; i < n && same; i++)
      same = (i == 0 ? ours[0] : ours[i] - 1) == j.pc[i];
    compared++;
    matched += same;
    crossed += j.signal_frames > 1;
    if (n > deepest)
      deepest = n;
    if (!same && first_n_ours < 0) {
      memcpy(first_ours, ours, sizeof ours);
      memcpy(first_judge, j.pc, sizeof j.pc);
      first_n_judge = j.n;
      first_n_ours = n;
    }
  }
  __atomic_add_fetch(&handled, 1, __ATOMIC_RELEASE);
}

static void report_first_mismatch(const char *where) {
  if (first_n_ours < 0)
    return;
  fprintf(stderr, "%s: first mismatch: ours %d frames, libgcc %d\n", where, first_n_ours,
          first_n_judge);
  for (int i = 0; i < first_n_ours || i < first_n_judge; i++)
    fprintf(stderr, "  %2d %#lx %#lx\n", i, i < first_n_ours ? first_ours[i] : 0,
            i < first_n_judge ? first_judge[i] : 0);
  first_n_ours = -1;
}

/* Sends `count` SIGPROFs to `t`, each after the last was handled. */
static void probe(pthread_t t, int count) {
  for (int i = 0; i < count; i++) {
    int before = LOAD(handled);
    pthread_kill(t, SIGPROF);
    for (int k = 0; k < 100000 && LOAD(handled) == before; k++)
      usleep(10);
    usleep(50 + (i * 37) % 200); /* land somewhere else next time */
  }
}

/* ---- code without frame pointers, going down and up ---- */

static int stop;
static volatile uint64_t sink;

NOFP static uint64_t spin_a_little(int n) {
  uint64_t x = sink;
  for (int i = 0; i < n; i++)
    x = x * 6364136223846793005ULL + 1;
  return x;
}

/* Values live across the call keep the callee-saved registers busy, %rbp
 * among them (a general register here): pushed in the prologue, popped in
 * the epilogue, where the CFI moves the CFA but never says %rbp is back. */
NOFP static uint64_t deep(int d) {
  volatile char pad[24];
  pad[0] = (char)d;
  uint64_t a = sink * 3, b = sink ^ 5, c = sink + 7, e = sink * 11, f = sink - 13, g = sink | 17;
  uint64_t x = d == 0 ? spin_a_little(200) : deep(d - 1);
  return x + (uint64_t)pad[0] + (a ^ b) + (c ^ e) + (f ^ g) * (uint64_t)d;
}

/* A frame GCC realigns through a dynamic realignment argument pointer
 * (an over-aligned local, alloca, and an argument on the stack): its CFA is
 * %r10 in the prologue, then the word at %rbp-16 (DW_CFA_def_cfa_expression),
 * and %rbp is saved by DW_CFA_expression. */
__attribute__((noinline)) static uint64_t realigned(int d, int a, int b, int c, int e, int f,
                                                    int on_stack) {
  double v[8] __attribute__((aligned(64)));
  volatile char *p = alloca((unsigned)d + 16);
  memset(v, d, sizeof v);
  p[0] = (char)d;
  __asm__ volatile("" ::"r"(v), "r"(p) : "memory");
  return deep(d - 1) + (uint64_t)v[3] + (uint64_t)(a + b + c + e + f + on_stack) + (uint64_t)p[0];
}

/* Its caller has no frame pointer: a wrong CFA for the realigned frame
 * (its %rbp + 16, say) would show in the caller's frame. */
NOFP static uint64_t above_realigned(void) {
  volatile char pad[40];
  pad[0] = 1;
  return realigned(61, 1, 2, 3, 4, 5, 6) + (uint64_t)pad[0];
}

static int victim_ready; /* it has learnt what it was to learn */

static void *victim(void *learn) {
  if (learn)
    cprof__stack_bounds_learn();
  STORE(victim_ready, 1);
  while (!LOAD(stop))
    sink = above_realigned();
  return NULL;
}

/* The program's own handler, interrupted in turn. */
static int in_program_handler;
static void on_usr1(int sig) {
  (void)sig;
  STORE(in_program_handler, 1);
  while (!LOAD(stop))
    sink = deep(40);
}

static void *nested_victim(void *arg) {
  cprof__stack_bounds_learn();
  static char alt[1 << 16];
  stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0}, old;
  if ((uintptr_t)arg == 2)
    sigaltstack(&ss, &old);
  raise(SIGUSR1);
  /* Give back the one there was (AddressSanitizer unmaps its own at exit). */
  if ((uintptr_t)arg == 2)
    sigaltstack(&old, NULL);
  return NULL;
}

/* One phase: signals into a thread running `fn`, each walk judged. */
static void phase(const char *name, void *(*fn)(void *), void *arg, int want_depth,
                  int want_crossed) {
  matched = compared = deepest = crossed = judge_faults = 0;
  STORE(stop, 0);
  STORE(in_program_handler, 0);
  STORE(victim_ready, 0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, fn, arg) == 0);
  usleep(20000);
  /* On a loaded machine 20 ms may not see the victim learn its bounds. */
  for (int i = 0; i < 1000 && fn == victim && !LOAD(victim_ready); i++)
    usleep(1000);
  for (int i = 0; i < 1000 && want_crossed && !LOAD(in_program_handler); i++)
    usleep(1000);
  cprof__maps_t maps = {0};
  int use_maps = !arg;
  if (use_maps) { /* that thread learnt nothing: the snapshot must place its stack */
    CHECK_EQ_INT(cprof__maps_read(&maps), 0);
    snapshot = &maps;
  }
  probe(t, 300);
  STORE(stop, 1);
  pthread_join(t, NULL);
  snapshot = NULL;
  if (use_maps)
    cprof__maps_free(&maps);
  fprintf(stderr,
          "%s: %d walks, %d as libgcc's, deepest %d, %d through a program's signal frame; "
          "libgcc faulted on %d more\n",
          name, compared, matched, deepest, crossed, judge_faults);
  report_first_mismatch(name);
  CHECK(compared >= 250);
  CHECK(judge_faults <= 10); /* a few instructions of one prologue, not a broken walk */
  CHECK_EQ_INT(matched, compared);
  CHECK(deepest >= want_depth);
  if (want_crossed)
    CHECK_EQ_INT(crossed, compared);
}

/* ---- code with no unwind tables ---- */

/* Three functions written at run time, each spinning until *(int *)rdi
 * (x0 on aarch64): a leaf with no frame; one that sets up a frame pointer;
 * and one that pushes a zero and sets %rbp (x29) to a small number, and on
 * aarch64 zeroes x30 too, which neither fallback can explain. */
#if defined(__aarch64__)
/* ldr w1, [x0]; cbz w1, back; ...: every instruction a little-endian word. */
static const uint32_t jit_leaf_w[] = {0xb9400001, 0x34ffffe1, 0xd65f03c0};
static const uint32_t jit_framed_w[] = {0xa9bf7bfd, 0x910003fd, 0xb9400001,
                                        0x34ffffe1, 0xa8c17bfd, 0xd65f03c0};
static const uint32_t jit_lost_w[] = {0xa9bf7bfd, 0xd282469d, 0xa9bf7fff, 0xd280001e, 0xb9400001,
                                      0x34ffffe1, 0x910043ff, 0xa8c17bfd, 0xd65f03c0};
#define jit_leaf ((const unsigned char *)jit_leaf_w)
#define jit_framed ((const unsigned char *)jit_framed_w)
#define jit_lost ((const unsigned char *)jit_lost_w)
#define JIT_SIZES sizeof jit_leaf_w, sizeof jit_framed_w, sizeof jit_lost_w
#define JIT_LOOPS 0, 8, 16
#else
static const unsigned char jit_leaf[] = {0x8b, 0x07, 0x85, 0xc0, 0x74, 0xfa, 0xc3};
static const unsigned char jit_framed[] = {0x55, 0x48, 0x89, 0xe5, 0x8b, 0x07,
                                           0x85, 0xc0, 0x74, 0xfa, 0x5d, 0xc3};
static const unsigned char jit_lost[] = {0x55, 0x48, 0xc7, 0xc5, 0x34, 0x12, 0x00, 0x00, 0x6a, 0x00,
                                         0x8b, 0x07, 0x85, 0xc0, 0x74, 0xfa, 0x58, 0x5d, 0xc3};
#define JIT_SIZES sizeof jit_leaf, sizeof jit_framed, sizeof jit_lost
#define JIT_LOOPS 0, 4, 10
#endif
enum { JIT_SIZE_LEAF, JIT_SIZE_FRAMED, JIT_SIZE_LOST };
static const size_t jit_sizes[] = {JIT_SIZES}, jit_loops[] = {JIT_LOOPS};

typedef struct jit_case {
  const char *name;
  const unsigned char *code;
  size_t size, loop; /* where its spinning loop starts */
  int explained;     /* whether the walk gets past it */
} jit_case_t;

static jit_case_t jit_cases[] = {
    {"leaf", NULL, 0, 0, 1},
    {"framed", NULL, 0, 0, 1},
    {"unexplained", NULL, 0, 0, 0},
};

static unsigned char *jit_page;
static int jit_stop, jit_in;
static uintptr_t jit_ref[MAX]; /* call_jit's own walk: its callers */
static int jit_ref_n;

__attribute__((noinline)) static void call_jit(void (*fn)(int *)) {
  jit_ref_n = cprof__unwind_cfa_here(jit_ref, MAX, 0, cprof__stack_hi(), NULL);
  STORE(jit_in, 1);
  fn(&jit_stop);
  __asm__ volatile("" ::: "memory");
}

static void *jit_thread(void *fn) {
  cprof__stack_bounds_learn();
  call_jit((void (*)(int *))fn);
  return NULL;
}

static void jit_walks(void) {
  comparing = 0;
  jit_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(jit_page != MAP_FAILED);
  if (jit_page == MAP_FAILED)
    return;
  const unsigned char *codes[] = {jit_leaf, jit_framed, jit_lost};
  for (size_t c = 0; c < sizeof jit_cases / sizeof *jit_cases; c++) {
    jit_case_t *jc = &jit_cases[c];
    jc->code = codes[c], jc->size = jit_sizes[c], jc->loop = jit_loops[c];
    mprotect(jit_page, 4096, PROT_READ | PROT_WRITE);
    memcpy(jit_page, jc->code, jc->size);
    __builtin___clear_cache((char *)jit_page, (char *)jit_page + jc->size); /* aarch64's caches */
    mprotect(jit_page, 4096, PROT_READ | PROT_EXEC);
    STORE(jit_stop, 0);
    STORE(jit_in, 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, jit_thread, jit_page) == 0);
    while (!LOAD(jit_in))
      usleep(1000);
    usleep(10000);
    int in_loop = 0, right = 0;
    for (int i = 0; i < 50; i++) {
      STORE(last_n, 0);
      probe(t, 1);
      int n = LOAD(last_n);
      if (n < 1 || last[0] < (uintptr_t)jit_page + jc->loop ||
          last[0] >= (uintptr_t)jit_page + jc->size)
        continue; /* not in the loop (the signal came early) */
      in_loop++;
      if (!jc->explained) {
        right += n == 2 && last[1] == CPROF_PC_STACK_CUT;
        continue;
      }
      /* last[1] returns into call_jit, where jit_ref[0] also does (another
       * call); from there on the stacks are the same. */
      int same = n == jit_ref_n + 1 && last[1] > (uintptr_t)call_jit &&
                 last[1] - (uintptr_t)call_jit < 256 &&
                 memcmp(&last[2], &jit_ref[1], (size_t)(n - 2) * sizeof *last) == 0;
      if (!same && right == in_loop - 1) {
        fprintf(stderr, "jit %s: ours %d frames, want %d:\n", jc->name, n, jit_ref_n + 1);
        for (int k = 0; k < n || k < jit_ref_n; k++)
          fprintf(stderr, "  %2d %#lx %#lx\n", k, k < n ? last[k] : 0,
                  k < jit_ref_n ? jit_ref[k] : 0);
      }
      right += same;
    }
    STORE(jit_stop, 1);
    pthread_join(t, NULL);
    fprintf(stderr, "jit %s: %d walks from inside it, %d right\n", jc->name, in_loop, right);
    CHECK(in_loop >= 30);
    CHECK_EQ_INT(right, in_loop);
  }
  munmap(jit_page, 4096);
  comparing = 1;
}

/* ---- bounds ---- */

static void *unknown_top(void *arg) {
  (void)arg;
  ucontext_t uc;
  memset(&uc, 0, sizeof uc);
  getcontext(&uc);
  uintptr_t pcs[MAX];
  int n = cprof__unwind_cfa_sigsafe(&uc, NULL, pcs, MAX);
  CHECK_EQ_INT(n, 2);
  CHECK(n == 2 && pcs[1] == CPROF_PC_STACK_CUT);
  /* Known from TLS, the same context walks to the end. */
  cprof__stack_bounds_learn();
  n = cprof__unwind_cfa_sigsafe(&uc, NULL, pcs, MAX);
  CHECK(n >= 3 && pcs[n - 1] != CPROF_PC_STACK_CUT);
  /* max is respected, and 1 frame is the pc alone. */
  CHECK_EQ_INT(cprof__unwind_cfa_sigsafe(&uc, NULL, pcs, 1), 1);
  CHECK(pcs[0] == cprof__arch_pc(&uc));
  return NULL;
}

/* Random contexts on a fake stack, described as the alternate signal stack
 * (the walker's bounds): random words, and code pointers of every kind
 * among them (function starts, return addresses, the trampoline), as
 * return addresses, saved %rbp and CFAs. Nothing is read outside it: a
 * guard page on either side would fault if it were. */
static void fuzz(void) {
  long page = sysconf(_SC_PAGESIZE);
  size_t size = 4 * (size_t)page;
  unsigned char *m =
      mmap(NULL, size + 2 * (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(m != MAP_FAILED);
  if (m == MAP_FAILED)
    return;
  uintptr_t *buf = (uintptr_t *)(m + page);
  mprotect(buf, size, PROT_READ | PROT_WRITE);
  size_t words = size / sizeof *buf;
  struct sigaction cur;
  sigaction(SIGPROF, NULL, &cur); /* glibc fills in its trampoline, __restore_rt */
  uintptr_t code[] = {(uintptr_t)deep,       (uintptr_t)spin_a_little,   (uintptr_t)on_prof,
                      (uintptr_t)memcpy,     (uintptr_t)pthread_create,  (uintptr_t)getcontext,
                      (uintptr_t)jit_thread, (uintptr_t)cur.sa_restorer, 0};
  /* Return addresses that are real: the ones a walk of this stack finds. */
  uintptr_t real[MAX];
  int nreal = cprof__unwind_cfa_here(real, MAX, 0, cprof__stack_hi(), NULL);
  uint64_t x = 88172645463325252ULL;
  int walks = 0, deepest_fuzz = 0;
  for (int round = 0; round < 20000; round++) {
    for (size_t i = 0; i < words; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      switch (x % 8) {
      case 0:
        buf[i] = (uintptr_t)buf + (x >> 8) % size;
        break; /* into the stack */
      case 1:
        buf[i] = code[(x >> 8) % (sizeof code / sizeof *code)] + (x >> 16) % 64;
        break;
      case 2:
      case 3:
        buf[i] = nreal > 0 ? real[(x >> 8) % (uint64_t)nreal] : 0;
        break;
      default:
        buf[i] = x;
        break;
      }
    }
    ucontext_t uc;
    memset(&uc, 0, sizeof uc);
    uc.uc_stack = (stack_t){.ss_sp = buf, .ss_size = size, .ss_flags = SS_ONSTACK};
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    uintptr_t sp = (uintptr_t)buf + (x % words) * sizeof *buf;
    uintptr_t fp = buf[(x >> 20) % words];
    uintptr_t pc = round & 1 ? real[(x >> 30) % (uint64_t)(nreal > 0 ? nreal : 1)]
                             : code[(x >> 30) % (sizeof code / sizeof *code)] + (x >> 40) % 32;
    /* aarch64's link register: a word of the stack, as good as any. */
    cprof__arch_context_set(&uc, pc, sp, fp, buf[(x >> 44) % words]);
    uintptr_t pcs[MAX];
    int n = cprof__unwind_cfa_sigsafe(&uc, NULL, pcs, MAX);
    CHECK(n >= 1 && n <= MAX);
    walks++;
    if (n > deepest_fuzz)
      deepest_fuzz = n;
  }
  fprintf(stderr, "fuzz: %d random contexts walked, deepest %d, no read outside the stack\n", walks,
          deepest_fuzz);
  munmap(m, size + 2 * (size_t)page);
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, NULL);
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_ONSTACK; /* on the alternate stack where the thread has one */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sa.sa_flags = SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);

  if (UNDER_TSAN) {
    fprintf(stderr, "test_cfa_sigsafe: walks from signals skipped: ThreadSanitizer holds a "
                    "signal until the thread calls a function it intercepts, which code that "
                    "only computes never does, and then hands the handler a context whose stack "
                    "has moved on\n");
  } else {
    phase("no frame pointers, top from TLS", victim, (void *)1, 63, 0);
    phase("no frame pointers, top from the snapshot", victim, NULL, 63, 0);
    phase("in the program's handler", nested_victim, (void *)1, 44, 1);
    /* (void *)2: the victim sets up an alternate signal stack first. */
    phase("in the program's handler, on sigaltstack", nested_victim, (void *)2, 44, 1);
    jit_walks();
  }

  pthread_t t;
  pthread_create(&t, NULL, unknown_top, NULL);
  pthread_join(t, NULL);
  fuzz();
  return check_result("test_cfa_sigsafe");
}
