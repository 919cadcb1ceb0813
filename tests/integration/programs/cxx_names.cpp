// C++ functions that only their full names keep apart, for names.sh: two
// lambdas in main, two overloads of one function, two instances of one
// template; some of them inlined into other functions, so that their
// frames come from DW_TAG_inlined_subroutine. Knows nothing of cprof: it
// runs under LD_PRELOAD.
//
//   cxx_names heap   allocates a known number of bytes in each, keeps them,
//                    prints "ready" and waits
//   cxx_names cpu    prints "ready" and spins, main's second lambda doing 3
//                    units of work for the first one's 1
//
// What nm -C and addr2line -f -C -i call them:
//   main::{lambda(int)#1}::operator()(int) const   100000 bytes, inlined
//   main::{lambda(int)#2}::operator()(int) const   300000   into main and
//                                                           out of line
//   main::{lambda()#3}::operator()() const           8192 out of line only,
//   void* shop::grab<8192>()                         8192   and inlined in it
//   shop::fill(int), shop::fill(double)       11111, 22222
//   int* shop::make<int>(unsigned long)              40000
//   double* shop::make<double>(unsigned long)        80000
//   void* shop::grab<4096>(), inlined in outer()      4096
//   and a fourth lambda, inlined with no copy (so no symbol), 70000 bytes.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>

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
  // Inlined where main calls them; their out-of-line copies are called
  // through member pointers the compiler cannot see through.
  auto one = [cpu](int n) INLINE {
    if (cpu)
      kernel(n);
    else
      keep(static_cast<size_t>(n));
  };
  auto two = [cpu](int n) INLINE {
    if (cpu)
      kernel(3 * n);
    else
      keep(3 * static_cast<size_t>(n));
  };
  void (decltype(one)::*volatile call_one)(int) const = &decltype(one)::operator();
  void (decltype(two)::*volatile call_two)(int) const = &decltype(two)::operator();
  if (cpu) {
    std::puts("ready");
    std::fflush(stdout);
    for (;;) {
      one(200000);
      two(200000);
    }
  }
  auto three = []() NOINLINE { return shop::grab<8192>(); };
  auto four = [](size_t n) INLINE { return keep(n); };

  one(60000);
  (one.*call_one)(40000);
  two(60000);              // 180000 bytes
  (two.*call_two)(40000);  // 120000 bytes
  three();
  four(70000);
  shop::fill(11111);
  shop::fill(22222.0);
  shop::make<int>(10000);     // 40000 bytes
  shop::make<double>(10000);  // 80000 bytes
  outer();
  std::puts("ready");
  std::fflush(stdout);
  for (;;)
    pause();
}
