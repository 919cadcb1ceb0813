/* The symbolizer as the consumers reach it (registry/symbols.h). */
#include "registry/symbols.h"

#include "profile/marks.h"
#include "symbol/symbolize.h"

cprof__symbols_t *cprof__symbols_begin(void) { return cprof__symbolizer_acquire(); }
void cprof__symbols_end(cprof__symbols_t *s) { cprof__symbolizer_release(s); }

const char *cprof__symbols_name(cprof__symbols_t *s, uintptr_t pc, char *text, size_t len) {
  const char *name = cprof__mark_name_near(pc, text, len);
  return name ? name : cprof__symbolize_name(s, pc);
}

long cprof__symbols_trim(long idle_ms) { return cprof__symbolizer_trim(idle_ms); }
void cprof__symbols_set_used_hook(void (*hook)(void)) { cprof__symbolizer_set_used_hook(hook); }
void cprof__symbols_passing(int on) { cprof__symbolizer_passing(on); }
