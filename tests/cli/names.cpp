// A program whose names are not plain, for tests/cli/reports.sh: a thread
// named with quotes, a newline, "<tag>&" and the bytes 0xff and ESC (Linux
// takes 15 bytes of anything but NUL), burning CPU in C++ templates whose
// demangled names hold '<', '>' and '&', and in names_weird.c, whose
// symbol holds them and the bytes 0xff and ESC. Knows nothing of cprof: it runs
// under LD_PRELOAD. Prints "ready" once the thread is named. It starts the
// thread with std::thread so that libstdc++ (whose __cxa_demangle cprof
// uses) is loaded.
#include <pthread.h>

#include <cstdio>
#include <thread>
#include <utility>

namespace names {

volatile unsigned long sink;

template <typename T> struct Box { T value; };

// A template taking a reference: "names::spin<names::Box<std::pair<int,
// char> > >(names::Box<std::pair<int, char> >&)" once demangled.
template <typename T> __attribute__((noinline)) void spin(T &box) {
  for (unsigned long i = 0; i < 20000000; i++)
    sink = sink + i * (unsigned long)box.value.first;
}

} // namespace names

// names_weird.c: calls a function whose symbol is "w<tag>&'" then the
// bytes 0xff and ESC, then "x".
extern "C" void names_weird_run(unsigned long n);

static void burner() {
  // 14 bytes: < t a g > & " \n 0xff ESC ' x y z
  pthread_setname_np(pthread_self(), "<tag>&\"\n\xff\x1b'xyz");
  std::printf("ready\n");
  std::fflush(stdout);
  names::Box<std::pair<int, char>> box{{3, 'c'}};
  for (;;) {
    names::spin(box);
    names_weird_run(20000000);
  }
}

int main() {
  std::thread t(burner);
  t.join();
}
