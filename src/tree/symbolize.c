/* A member's profile named by the tree's owner (tree.h).
 *
 * A member writes profile.proto with addresses and mappings only (no
 * libdw in the member: symbol/symbolize.h, cprof__symbolizer_bare), so
 * that profiling 64 workers does not load libc's debug information 64
 * times. Its code is the owner's: a forked child maps the same files at
 * the same places, except for what it dlopen'd after the fork. So each
 * location without lines is placed in the owner's own mapping of its
 * mapping's file, at the same file offset, and the owner's symbolizer
 * names it there, with files, lines and inlined frames. A location the
 * owner cannot place (a library only the member loaded) stays an address,
 * and its mapping then claims no functions, so that pprof tries the file
 * itself, as it does for any profile without names. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "registry/symbols.h"
#include "tree/tree.h"

/* The most source frames one address expands to (inlining depth). */
#define MAX_INLINE 32

/* The functions added, deduplicated by (name, system name, file). */
typedef struct added {
  cprof__pf_function_t *v;
  size_t n, cap;
  uint32_t *slots; /* open addressing, index + 1; 0: empty */
  size_t nslots;   /* a power of two, or 0 */
} added_t;

/* A located frame, before the functions array has its final place. */
typedef struct pending_line {
  size_t function; /* index into added_t.v */
  int64_t line;
} pending_line_t;

static uint64_t hash_str(uint64_t h, const char *s) {
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211u;
  return (h ^ 0xff) * 1099511628211u; /* a separator, so that "ab","c" is not "a","bc" */
}

static int same(const cprof__pf_function_t *f, const char *name, const char *sys,
                const char *file) {
  return strcmp(f->name, name) == 0 && strcmp(f->system_name, sys) == 0 &&
         strcmp(f->filename, file) == 0;
}

static int rehash(added_t *a) {
  size_t n = a->nslots ? a->nslots * 2 : 256;
  uint32_t *t = calloc(n, sizeof *t);
  if (!t)
    return -ENOMEM;
  for (size_t i = 0; i < a->n; i++) {
    const cprof__pf_function_t *f = &a->v[i];
    uint64_t h =
        hash_str(hash_str(hash_str(14695981039346656037u, f->name), f->system_name), f->filename);
    size_t k = h & (n - 1);
    while (t[k])
      k = (k + 1) & (n - 1);
    t[k] = (uint32_t)i + 1;
  }
  free(a->slots);
  a->slots = t;
  a->nslots = n;
  return 0;
}

/* The index of the function (name, sys, file), added with its strings
 * copied into the profile's arena if new; or -ENOMEM. */
static int64_t function_for(cprof__pf_t *p, added_t *a, const char *name, const char *sys,
                            const char *file) {
  if (a->n + 1 > a->nslots / 2 && rehash(a) != 0)
    return -ENOMEM;
  uint64_t h = hash_str(hash_str(hash_str(14695981039346656037u, name), sys), file);
  size_t k = h & (a->nslots - 1);
  for (; a->slots[k]; k = (k + 1) & (a->nslots - 1))
    if (same(&a->v[a->slots[k] - 1], name, sys, file))
      return a->slots[k] - 1;
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 64;
    cprof__pf_function_t *v = realloc(a->v, cap * sizeof *v);
    if (!v)
      return -ENOMEM;
    a->v = v;
    a->cap = cap;
  }
  cprof__pf_function_t *f = &a->v[a->n];
  *f = (cprof__pf_function_t){.name = cprof__arena_strdup(p->arena, name),
                              .system_name = cprof__arena_strdup(p->arena, sys),
                              .filename = cprof__arena_strdup(p->arena, file)};
  if (!f->name || !f->system_name || !f->filename)
    return -ENOMEM;
  a->slots[k] = (uint32_t)a->n + 1;
  return (int64_t)a->n++;
}

/* What became of a mapping's locations. */
typedef struct tally {
  size_t placed, unnamed;
  int lines;                 /* the owner's names of it come with files and lines */
  const char *build_id_here; /* the owner's build ID of its file */
} tally_t;

int cprof__tree_symbolize(cprof__pf_t *p) {
  size_t need = 0;
  for (size_t i = 0; i < p->n_locations; i++) {
    const cprof__pf_location_t *l = &p->locations[i];
    need += l->n_lines == 0 && l->mapping && l->mapping->file[0];
  }
  if (!need)
    return 0;

  int rc = -ENOMEM;
  added_t a = {0};
  /* Per location: where its lines start in `pending` and how many. */
  size_t *first = calloc(p->n_locations, sizeof *first);
  uint32_t *count = calloc(p->n_locations, sizeof *count);
  tally_t *tallies = calloc(p->n_mappings ? p->n_mappings : 1, sizeof *tallies);
  pending_line_t *pending = NULL;
  size_t npending = 0, cappending = 0;
  if (!first || !count || !tallies)
    goto out;

  cprof__symbols_t *s = cprof__symbols_begin();
  for (size_t i = 0; i < p->n_locations; i++) {
    const cprof__pf_location_t *l = &p->locations[i];
    if (l->n_lines || !l->mapping || !l->mapping->file[0])
      continue;
    const cprof__pf_mapping_t *m = l->mapping;
    tally_t *t = &tallies[m - p->mappings];
    uintptr_t here;
    const char *bid = "";
    int lines = 0;
    int mi = l->address >= m->start && l->address < m->limit
                 ? cprof__symbols_place(s, m->file, m->build_id, l->address - m->start + m->offset,
                                        &here, &bid, &lines)
                 : -ENOENT;
    t->placed++;
    cprof__symbols_frame_t frames[MAX_INLINE];
    int nf = mi >= 0 ? cprof__symbols_frames(s, mi, here, frames, MAX_INLINE, NULL) : 0;
    if (mi >= 0) {
      t->lines = lines;
      t->build_id_here = bid;
    }
    first[i] = npending;
    int named = nf > 0;
    for (int j = 0; j < nf; j++) {
      if (!frames[j].function) {
        named = 0; /* a Line needs a Function: as the builder, it is left out */
        continue;
      }
      int64_t f = function_for(p, &a, frames[j].function,
                               frames[j].system_name ? frames[j].system_name : frames[j].function,
                               frames[j].file ? frames[j].file : "");
      if (f < 0)
        goto unlock;
      if (npending == cappending) {
        size_t cap = cappending ? cappending * 2 : 256;
        pending_line_t *v = realloc(pending, cap * sizeof *v);
        if (!v)
          goto unlock;
        pending = v;
        cappending = cap;
      }
      pending[npending++] = (pending_line_t){(size_t)f, frames[j].line > 0 ? frames[j].line : 0};
      count[i]++;
    }
    t->unnamed += !named;
  }
  /* The owner's build IDs are the files' own: copied before the
   * symbolizer's strings go. */
  for (size_t m = 0; m < p->n_mappings; m++)
    if (tallies[m].build_id_here &&
        !(tallies[m].build_id_here = cprof__arena_strdup(p->arena, tallies[m].build_id_here)))
      goto unlock;
  rc = 0;
unlock:
  cprof__symbols_end(s);
  if (rc != 0)
    goto out;

  /* The functions: the profile's, then the added ones, with IDs after
   * the last. Lines point at functions, so those of the locations that had
   * some follow the array to its new place. */
  rc = -ENOMEM;
  cprof__pf_function_t *all = NULL;
  if (a.n) {
    all = cprof__arena_array(p->arena, p->n_functions + a.n, sizeof *all);
    if (!all)
      goto out;
    memcpy(all, p->functions, p->n_functions * sizeof *all);
    uint64_t id = p->n_functions ? p->functions[p->n_functions - 1].id : 0;
    for (size_t k = 0; k < a.n; k++) {
      all[p->n_functions + k] = a.v[k];
      all[p->n_functions + k].id = ++id;
    }
    for (size_t i = 0; i < p->n_locations; i++)
      for (size_t j = 0; j < p->locations[i].n_lines; j++) {
        cprof__pf_line_t *ln = (cprof__pf_line_t *)&p->locations[i].lines[j];
        if (ln->function)
          ln->function = all + (ln->function - p->functions);
      }
  }
  for (size_t i = 0; i < p->n_locations; i++) {
    if (!count[i])
      continue;
    cprof__pf_line_t *lines = cprof__arena_array(p->arena, count[i], sizeof *lines);
    if (!lines)
      goto out;
    for (uint32_t j = 0; j < count[i]; j++)
      lines[j] =
          (cprof__pf_line_t){.function = all + p->n_functions + pending[first[i] + j].function,
                             .line = pending[first[i] + j].line};
    p->locations[i].lines = lines;
    p->locations[i].n_lines = count[i];
  }
  if (a.n) {
    p->functions = all;
    p->n_functions += a.n;
  }
  /* What each mapping now claims: functions where every location was
   * named, files and lines where the owner's names of it have them. */
  for (size_t m = 0; m < p->n_mappings; m++) {
    const tally_t *t = &tallies[m];
    cprof__pf_mapping_t *mp = &p->mappings[m];
    if (!t->placed)
      continue;
    mp->has_functions = t->unnamed == 0;
    mp->has_filenames = mp->has_line_numbers = mp->has_inline_frames = t->unnamed == 0 && t->lines;
    if (!mp->build_id[0] && t->build_id_here)
      mp->build_id = t->build_id_here;
  }
  rc = 0;
out:
  free(a.v);
  free(a.slots);
  free(pending);
  free(first);
  free(count);
  free(tallies);
  return rc;
}

int cprof__tree_symbolize_proto(const void *data, size_t len, cprof__buf_t *out) {
  cprof__pf_t *p = NULL;
  char why[200];
  int rc = cprof__pf_decode(data, len, &p, why, sizeof why);
  if (rc == -EINVAL)
    return 0; /* not a profile: passed on as it is */
  if (rc == 0)
    rc = cprof__tree_symbolize(p);
  if (rc == 0)
    rc = cprof__pf_encode(p, 1, out, why, sizeof why);
  cprof__pf_free(p);
  return rc == 0 ? 1 : rc;
}

/* A frame line of a member's dump that names nothing, as
 * profile/text.c's cprof__format_stack writes it bare:
 * "0x7f3d12345678 (/usr/lib/x86_64-linux-gnu/libc.so.6+0x9a678)", the
 * pc and its offset in the file. 1 with them, else 0. */
static int bare_frame(const char *line, size_t len, uint64_t *pc, char *path, size_t pathlen,
                      uint64_t *file_offset) {
  if (len < 8 || strncmp(line, "0x", 2) != 0 || line[len - 1] != ')')
    return 0;
  char *end;
  *pc = strtoull(line + 2, &end, 16);
  if (end == line + 2 || strncmp(end, " (", 2) != 0)
    return 0;
  const char *p = end + 2, *plus = NULL;
  for (const char *q = p; q + 2 < line + len; q++)
    if (q[0] == '+' && q[1] == '0' && q[2] == 'x')
      plus = q;
  if (!plus || plus == p || (size_t)(plus - p) >= pathlen)
    return 0;
  *file_offset = strtoull(plus + 3, &end, 16);
  if (end != line + len - 1)
    return 0;
  memcpy(path, p, (size_t)(plus - p));
  path[plus - p] = '\0';
  return 1;
}

int cprof__tree_name_dump(const char *text, size_t len, cprof__buf_t *out) {
  cprof__symbols_t *s = NULL;
  int first = 0; /* the next frame is a stack's first: its pc is exact */
  for (size_t at = 0; at < len;) {
    const char *line = text + at;
    const char *nl = memchr(line, '\n', len - at);
    size_t n = nl ? (size_t)(nl - line) : len - at;
    at += n + (nl != NULL);
    if (n >= 7 && strncmp(line, "thread ", 7) == 0)
      first = 1;
    uint64_t pc, off;
    char path[1024];
    if (!bare_frame(line, n, &pc, path, sizeof path, &off)) {
      cprof__buf_append(out, line, n + (nl != NULL));
      continue;
    }
    /* A return address is named inside its call, one byte back, and the
     * offset printed from the pc itself, as the member would have. */
    uint64_t back = first ? 0 : 1;
    first = 0;
    uintptr_t here, sym_off = 0;
    const char *bid;
    int lines, mi = -1, nf = 0;
    cprof__symbols_frame_t frames[MAX_INLINE];
    if (!s)
      s = cprof__symbols_begin();
    if (off >= back)
      mi = cprof__symbols_place(s, path, "", off - back, &here, &bid, &lines);
    if (mi >= 0)
      nf = cprof__symbols_frames(s, mi, here, frames, MAX_INLINE, &sym_off);
    int printed = 0;
    for (int j = 0; j < nf; j++) {
      if (!frames[j].function)
        continue;
      int inlined = j < nf - 1;
      cprof__buf_printf(out, "%s(%s)\n\t", frames[j].function, inlined ? "..." : "");
      if (frames[j].file)
        cprof__buf_printf(out, "%s:%d", frames[j].file, frames[j].line);
      else
        cprof__buf_puts(out, path);
      if (!inlined)
        cprof__buf_printf(out, " +0x%llx", (unsigned long long)(sym_off + back));
      cprof__buf_putc(out, '\n');
      printed = 1;
    }
    if (!printed)
      cprof__buf_append(out, line, n + (nl != NULL));
  }
  if (s)
    cprof__symbols_end(s);
  return out->failed ? -ENOMEM : 0;
}
