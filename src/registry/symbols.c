/* The symbolizer as the consumers reach it (registry/symbols.h). */
#include "registry/symbols.h"

#include <errno.h>
#include <string.h>

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

int cprof__symbols_place(cprof__symbols_t *s, const char *file, const char *build_id,
                         uint64_t file_offset, uintptr_t *addr, const char **build_id_here,
                         int *lines) {
  const cprof__mapping_t *maps;
  int n = cprof__symbolizer_mappings(s, &maps);
  for (int i = 0; i < n; i++) {
    const cprof__mapping_t *m = &maps[i];
    if (m->retired || strcmp(m->path, file) != 0 ||
        (build_id[0] && m->build_id[0] && strcmp(build_id, m->build_id) != 0) ||
        file_offset < m->offset || file_offset - m->offset >= m->limit - m->start)
      continue;
    *addr = m->start + (uintptr_t)(file_offset - m->offset);
    *build_id_here = m->build_id;
    *lines = cprof__symbolizer_uses_dwarf(s, i);
    return i;
  }
  return -ENOENT;
}

int cprof__symbols_frames(cprof__symbols_t *s, int m, uintptr_t addr, cprof__symbols_frame_t *out,
                          int max, uintptr_t *offset) {
  cprof__frame_t frames[32];
  uintptr_t ignored;
  int n = cprof__symbolize_in(s, m, addr, frames, max < 32 ? max : 32, offset ? offset : &ignored);
  for (int i = 0; i < n; i++)
    out[i] = (cprof__symbols_frame_t){frames[i].function, frames[i].system_name, frames[i].file,
                                      frames[i].line};
  return n < 0 ? 0 : n;
}
