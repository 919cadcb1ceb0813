// C++'s allocations, and jemalloc's API, held and churned from one
// function each, with the bytes each holds counted by the program itself.
// Under jemalloc and tcmalloc, whose operator new and delete bind ahead of
// libstdc++'s, these read nothing in cprof's heap profile before cprof
// interposed them, and the aligned new with its sized delete, or malloc
// with jemalloc's sdallocx, crashed.
//
// Each keep_* function holds COUNT blocks and allocates and frees 3 x COUNT
// more around them: a delete that missed a sampled block would leave it in
// use. Then the program prints "truth FUNCTION BYTES" for each, checks that
// a std::bad_alloc and the new handler pass through cprof's operators, and
// prints "ready" and sleeps until it is killed (with --exit, exits).
//
// jemalloc's functions are looked up with dlsym, where mallocx is found
// (libcprof exports the others whatever the allocator, as the C library's
// calls when the allocator lacks them).
//
// Usage: host_cxx_new COUNT [--exit]
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <new>

static const size_t SIZE = 1000;
static const int CHURN = 3;

struct Object {
  char bytes[SIZE];
};
struct alignas(64) Aligned {
  char bytes[1024];
};

// The program's own table of what it holds: a mapping, not its heap.
static void **table(size_t n) {
  void *t =
      mmap(NULL, n * sizeof(void *), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (t == MAP_FAILED)
    exit(1);
  return (void **)t;
}

static void touch(void *p, size_t n) {
  if (!p)
    exit(1);
  memset(p, 0x5a, n);
}

__attribute__((noinline)) static size_t keep_array(void **v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (int c = 0; c < CHURN; c++) {
      char *t = new char[SIZE];
      touch(t, SIZE);
      delete[] t;
    }
    touch(v[i] = new char[SIZE], SIZE);
  }
  return n * SIZE;
}

__attribute__((noinline)) static size_t keep_object(void **v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (int c = 0; c < CHURN; c++) {
      Object *t = new Object;
      touch(t, sizeof *t);
      delete t; // sized delete
    }
    touch(v[i] = new Object, sizeof(Object));
  }
  return n * sizeof(Object);
}

__attribute__((noinline)) static size_t keep_aligned(void **v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (int c = 0; c < CHURN; c++) {
      Aligned *t = new Aligned;
      touch(t, sizeof *t);
      if ((uintptr_t)t % alignof(Aligned))
        exit(3);
      delete t; // sized aligned delete
    }
    touch(v[i] = new Aligned, sizeof(Aligned));
    if ((uintptr_t)v[i] % alignof(Aligned))
      exit(3);
  }
  return n * sizeof(Aligned);
}

__attribute__((noinline)) static size_t keep_nothrow(void **v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (int c = 0; c < CHURN; c++) {
      char *t = new (std::nothrow) char[SIZE];
      touch(t, SIZE);
      delete[] t;
    }
    touch(v[i] = new (std::nothrow) char[SIZE], SIZE);
  }
  return n * SIZE;
}

typedef void *(*mallocx_fn)(size_t, int);
typedef void *(*rallocx_fn)(void *, size_t, int);
typedef size_t (*sallocx_fn)(const void *, int);
typedef void (*dallocx_fn)(void *, int);
typedef void (*sdallocx_fn)(void *, size_t, int);
static mallocx_fn mallocx;
static rallocx_fn rallocx;
static sallocx_fn sallocx;
static dallocx_fn dallocx;
static sdallocx_fn sdallocx;
#define LG_ALIGN_64 6

// mallocx grown with rallocx and freed with sdallocx and dallocx in the
// churn; the blocks held are malloc'd and grown with rallocx, 64-byte
// aligned. (cprof does not see mallocx itself, which takes no block: a
// rallocx that moves a block counts its new size, as realloc does.)
__attribute__((noinline)) static size_t keep_rallocx(void **v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (int c = 0; c < CHURN; c++) {
      char *t = (char *)mallocx(SIZE / 2, 0);
      touch(t, SIZE / 2);
      t = (char *)rallocx(t, SIZE, 0);
      touch(t, SIZE);
      if (sallocx(t, 0) < SIZE)
        exit(4);
      if (c == 0)
        dallocx(t, 0);
      else
        sdallocx(t, SIZE, 0);
    }
    char *t = (char *)malloc(SIZE / 2);
    touch(t, SIZE / 2);
    touch(v[i] = rallocx(t, SIZE, LG_ALIGN_64), SIZE);
    if ((uintptr_t)v[i] % 64)
      exit(3);
  }
  return n * SIZE;
}

// malloc, freed with jemalloc's sized free.
__attribute__((noinline)) static size_t keep_malloc_sdallocx(void **v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (int c = 0; c < CHURN; c++) {
      char *t = (char *)malloc(SIZE);
      touch(t, SIZE);
      sdallocx(t, SIZE, 0);
    }
    touch(v[i] = malloc(SIZE), SIZE);
  }
  return n * SIZE;
}

static int handler_calls;
static char *volatile kept;
static void handler() {
  handler_calls++;
  std::set_new_handler(nullptr); // the next failure throws
}

// A request no allocator can meet: the new handler is called once, then
// std::bad_alloc comes through every frame between the allocator and us.
__attribute__((noinline)) static int too_big() {
  std::set_new_handler(handler);
  volatile size_t huge = (size_t)1 << 62;
  try {
    kept = static_cast<char *>(::operator new(huge)); // kept: an unused new may be left out
    return 0;
  } catch (const std::bad_alloc &) {
    return 1;
  }
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  size_t n = strtoul(argv[1], NULL, 10);
  mallocx = (mallocx_fn)dlsym(RTLD_DEFAULT, "mallocx");
  rallocx = (rallocx_fn)dlsym(RTLD_DEFAULT, "rallocx");
  sallocx = (sallocx_fn)dlsym(RTLD_DEFAULT, "sallocx");
  dallocx = (dallocx_fn)dlsym(RTLD_DEFAULT, "dallocx");
  sdallocx = (sdallocx_fn)dlsym(RTLD_DEFAULT, "sdallocx");
  int jemalloc_api = mallocx && rallocx && sallocx && dallocx && sdallocx;
  printf("truth keep_array %zu\n", keep_array(table(n), n));
  printf("truth keep_object %zu\n", keep_object(table(n), n));
  printf("truth keep_aligned %zu\n", keep_aligned(table(n), n));
  printf("truth keep_nothrow %zu\n", keep_nothrow(table(n), n));
  if (jemalloc_api) {
    printf("truth keep_rallocx %zu\n", keep_rallocx(table(n), n));
    printf("truth keep_malloc_sdallocx %zu\n", keep_malloc_sdallocx(table(n), n));
  }
  int caught = too_big();
  printf("bad_alloc %s, new handler called %d\n", caught ? "caught" : "not thrown", handler_calls);
  printf("ready\n");
  fflush(stdout);
  if (argc > 2 && strcmp(argv[2], "--exit") == 0)
    return 0;
  for (;;)
    pause();
}
