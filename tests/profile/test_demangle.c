/* Function names as pprof's symbolizer leaves them (src/model/demangle.c):
 * each expectation is what go tool pprof -top shows for such a name. */
#include <string.h>

#include "check.h"
#include "model/demangle.h"

/* A profile of one function named name, with system_name sys. */
static const char *renamed(const char *name, const char *sys, cprof__pf_demangle_t mode) {
  static char out[256];
  cprof__pf_t p = {0};
  cprof__pf_function_t f = {.id = 1, .name = name, .system_name = sys, .filename = ""};
  p.functions = &f;
  p.n_functions = 1;
  p.arena = cprof__arena_new(0);
  CHECK_EQ_INT(cprof__pf_demangle(&p, mode), 0);
  snprintf(out, sizeof out, "%s", f.name);
  cprof__arena_free(p.arena);
  return out;
}

int main(void) {
  const cprof__pf_demangle_t S = CPROF_PF_DEMANGLE_SIMPLIFIED;
  /* Demangled by the producer (cprof's own profiles): kept. */
  CHECK_EQ_STR(
      renamed("shop::Worker::run(shop::Queue<int>&)", "_ZN4shop6Worker3runERNS_5QueueIiEE", S),
      "shop::Worker::run(shop::Queue<int>&)");
  /* Mangled: demangled, then shortened. */
  CHECK_EQ_STR(
      renamed("_ZN4shop6Worker3runERNS_5QueueIiEE", "_ZN4shop6Worker3runERNS_5QueueIiEE", S),
      "shop::Worker::run");
  CHECK_EQ_STR(renamed("", "_ZN4shop6Worker3runERNS_5QueueIiEE", CPROF_PF_DEMANGLE_FULL),
               "shop::Worker::run(shop::Queue<int>&)");
  /* Demangled C++ left as the name: shortened. */
  CHECK_EQ_STR(renamed("a::B<std::map<int, char>>::f(int) const",
                       "a::B<std::map<int, char>>::f(int) const", S),
               "a::B::f const");
  CHECK_EQ_STR(renamed("a::B<int>::f(int)", "a::B<int>::f(int)", CPROF_PF_DEMANGLE_TEMPLATES),
               "a::B<int>::f");
  /* Not C++: C, Go, Java; and unbalanced brackets. */
  CHECK_EQ_STR(renamed("main", "main", S), "main");
  CHECK_EQ_STR(renamed("main.(*store).grow", "main.(*store).grow", S), "main.(*store).grow");
  CHECK_EQ_STR(renamed("main.cpuGeneric[...]", "main.cpuGeneric[...]", S), "main.cpuGeneric[...]");
  CHECK_EQ_STR(renamed("java.Foo.<init>", "java.Foo.<init>", S), "java.Foo.<init>");
  CHECK_EQ_STR(renamed("a::b(int))x", "a::b(int))x", S), "a::b)x");
  CHECK_EQ_STR(renamed("a::b<int", "a::b<int", S), "a::b<int");
  CHECK_EQ_STR(renamed("a::b(int)", "a::b(int)", CPROF_PF_DEMANGLE_NONE), "a::b(int)");
  return check_result("test_demangle");
}
