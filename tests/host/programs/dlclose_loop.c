/* A program that loads and unloads a library over and over (dlopen,
 * dlclose of libexpat, which cprof itself never loads), busy in CPU both
 * inside it (in expat's callbacks, so a profiler walks through expat's
 * frames) and after it is gone, with an address of expat's code left on
 * the stack: the word at the stack pointer of code that has no unwind
 * tables, where a walker must decide whether it is a return address. A
 * walker that reads the code before that address, as it was when the
 * library was there, faults. Prints what expat parsed: the same with cprof
 * and without.
 *
 *   dlclose_loop [ROUNDS]   (default 12)
 *
 * A thread made with clone(2) directly, after the first second, makes
 * cprof take a new snapshot of the address space while expat is loaded
 * (it does for threads the pthread_create interposer did not see). */
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Spins `n` times with `word` at the stack pointer, in code without
 * unwind tables (no CFI directives: no FDE describes it). */
__asm__(".text\n"
        ".globl spin_with_word\n"
        ".type spin_with_word, @function\n"
        "spin_with_word:\n"
        "  push %rdi\n"
        "1:\n"
        "  dec %rsi\n"
        "  jnz 1b\n"
        "  pop %rdi\n"
        "  ret\n"
        ".size spin_with_word, .-spin_with_word\n");
void spin_with_word(uintptr_t word, long n);

typedef void *(*create_fn)(const char *);
typedef void (*set_handlers_fn)(void *, void (*)(void *, const char *, const char **),
                                void (*)(void *, const char *));
typedef int (*parse_fn)(void *, const char *, int, int);
typedef void (*free_fn)(void *);

static uintptr_t expat_return; /* where expat calls our handler from */
static volatile uint64_t sink;
static long elements;

static void burn(long n) {
  uint64_t x = sink;
  for (long i = 0; i < n; i++)
    x = x * 6364136223846793005ULL + 1;
  sink = x;
}

static void on_start(void *data, const char *name, const char **attrs) {
  expat_return = (uintptr_t)__builtin_return_address(0);
  elements++;
  burn(2000000); /* sampled inside expat's parse */
}
static void on_end(void *data, const char *name) {}

static int parse_once(void) {
  void *lib = dlopen("libexpat.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return -1;
  }
  create_fn create = (create_fn)dlsym(lib, "XML_ParserCreate");
  set_handlers_fn set = (set_handlers_fn)dlsym(lib, "XML_SetElementHandler");
  parse_fn parse = (parse_fn)dlsym(lib, "XML_Parse");
  free_fn release = (free_fn)dlsym(lib, "XML_ParserFree");
  if (!create || !set || !parse || !release)
    return -1;
  void *p = create(NULL);
  set(p, on_start, on_end);
  static const char doc[] = "<a><b/><c><d/><e/></c><f/></a>";
  int ok = parse(p, doc, (int)strlen(doc), 1);
  release(p);
  dlclose(lib);
  return ok;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A thread pthread_create never saw. It shares our TLS (no CLONE_SETTLS),
 * so it calls nothing of the C library's but raw system calls. */
static char clone_stack[1 << 16] __attribute__((aligned(16)));
static volatile int clone_stop;
static volatile pid_t clone_tid;

static int clone_body(void *arg) {
  struct timespec ts = {0, 10 * 1000 * 1000};
  while (!clone_stop)
    syscall(SYS_nanosleep, &ts, NULL);
  syscall(SYS_exit, 0);
  return 0;
}

static void new_snapshot(void) {
  int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
              CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
  pid_t ptid;
  if (clone(clone_body, clone_stack + sizeof clone_stack, flags, NULL, &ptid, NULL,
            &clone_tid) < 0)
    return;
  clone_tid = ptid;
  double end = now() + 0.6; /* two looks at the threads, 250 ms apart */
  while (now() < end)
    usleep(10000);
  clone_stop = 1;
  while (clone_tid != 0) /* cleared by the kernel as it exits */
    usleep(1000);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 12;
  long parsed = 0;
  double start = now();
  for (int r = 0; r < rounds; r++) {
    if (r == 1) {
      /* expat loaded, over a second since the program started. */
      void *keep = dlopen("libexpat.so.1", RTLD_NOW | RTLD_LOCAL);
      while (now() - start < 1.1)
        usleep(10000);
      new_snapshot();
      if (keep)
        dlclose(keep);
    }
    if (parse_once() != 1)
      return 1;
    parsed++;
    spin_with_word(expat_return, 60 * 1000 * 1000);
  }
  printf("parsed %ld documents, %ld elements\n", parsed, elements);
  return 0;
}
