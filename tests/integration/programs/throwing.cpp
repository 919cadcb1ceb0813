// A C++ library that throws and catches through several frames, called from
// a C program (exceptions_main.c). That shape is the one where a profiler's
// libunwind could take over C++ exceptions: the program does not link
// libgcc_s itself, so libgcc_s comes late in the symbol lookup order, after
// the libraries an LD_PRELOADed library brings. cprof loads libunwind
// privately so its _Unwind_* never compete.
#include <stdexcept>
#include <string>
#include <vector>

__attribute__((noinline)) static void deep(int n) {
  if (n == 0)
    throw std::runtime_error("bottom");
  std::vector<std::string> keep(3, "frame");  // destructors run during unwinding
  deep(n - 1);
}

extern "C" int throw_and_catch(int times) {
  int caught = 0;
  for (int i = 0; i < times; i++) {
    try {
      deep(20);
    } catch (const std::runtime_error &e) {
      caught += std::string(e.what()) == "bottom";
    }
  }
  return caught;
}
