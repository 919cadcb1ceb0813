// C++ functions that only their full names keep apart, for names.sh: two
// lambdas in main, two overloads of one function, two instances of one
// template, each out of line as `nm -C` lists it; and, inlined into other
// functions (frames that come from DW_TAG_inlined_subroutine), a template
// instance, a lambda that also has an out-of-line copy, and a lambda that
// has none. Knows nothing of cprof: it runs under LD_PRELOAD.
//
//   cxx_names heap   allocates a known number of bytes in each, keeps them,
//                    prints "ready" and waits
//   cxx_names cpu    prints "ready" and spins, main's second lambda doing 3
//                    units of work for the first one's 1
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <cstring>

#define NOINLINE __attribute__((noinline))
#define INLINE __attribute__((always_inline))

static void *volatile kept;
static volatile uint64_t sink;

// A block of n bytes that stays in use (the heap test reads in-use bytes).
// From operator new, as C++ allocates: that also makes libstdc++, whose
// demangler cprof uses, a dependency of this program.
static void *keep(size_t n) {
  void *p = ::operator new(n);
  std::memset(p, 1, n);
  kept = p;
  return p;
}

namespace shop {

NOINLINE void fill(int n) { keep(static_cast<size_t>(n)); }
NOINLINE void fill(double x) { keep(static_cast<size_t>(x)); }

template <typename T>
NOINLINE T *make(size_t n) {
  return static_cast<T *>(keep(n * sizeof(T)));
}

template <int N>
INLINE inline void *grab() {
  return keep(N);
}

}  // namespace shop

// shop::grab<4096>'s only code is inlined here.
NOINLINE void *outer() { return shop::grab<4096>(); }

static void kernel(int n) {
  uint64_t x = sink;
  for (int i = 0; i < n; i++)
    x = x * 6364136223846793005ULL + static_cast<uint64_t>(i);
  sink = x;
}

int main(int argc, char **argv) {
  bool cpu = argc > 1 && std::strcmp(argv[1], "cpu") == 0;
  // nm -C: main::{lambda(int)#1}::operator()(int) const, and #2.
  auto one = [cpu](int n) NOINLINE {
    if (cpu)
      kernel(n);
    else
      keep(static_cast<size_t>(n));
  };
  auto two = [cpu](int n) NOINLINE {
    if (cpu)
      kernel(3 * n);
    else
      keep(3 * static_cast<size_t>(n));
  };
  if (cpu) {
    std::puts("ready");
    std::fflush(stdout);
    for (;;) {
      one(200000);
      two(200000);
    }
  }
  // Inlined at its call below, and also out of line, called through a
  // member pointer the compiler cannot see through.
  auto three = [](size_t n) INLINE { return keep(n); };
  // Inlined, with no out-of-line copy anywhere.
  auto four = [](size_t n) INLINE { return keep(n); };
  void *(decltype(three)::*volatile call)(size_t) const = &decltype(three)::operator();

  one(100000);
  two(100000);  // 300000 bytes
  shop::fill(11111);
  shop::fill(22222.0);
  shop::make<int>(10000);     // 40000 bytes
  shop::make<double>(10000);  // 80000 bytes
  outer();                    // 4096 bytes
  three(50000);
  (three.*call)(60000);
  four(70000);
  std::puts("ready");
  std::fflush(stdout);
  for (;;)
    pause();
}
