/* Go's legacy text formats: the debug=1 count profile, which `go tool
 * pprof` still parses, and the debug=2 per-thread stack dump.
 *
 * The count profile follows printCountProfile and printStackRecord in Go's
 * runtime/pprof/pprof.go, including its text/tabwriter column alignment, so
 * that the output reads like a Go program's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/procfs.h"

#include "profile/builder.h"
#include "profile/builder_internal.h"
#include "profile/marks.h"
#include "symbol/symbolize.h"
#include "unwind/pc.h"

#define MAX_INLINE 32

/* ---- column alignment, as Go's text/tabwriter does it ----
 *
 * Go writes the count profile through tabwriter.NewWriter(w, 1, 8, 1, '\t',
 * 0): cells are tab-terminated, a column block is a run of consecutive
 * lines that all have a cell in that column, each column of a block is as
 * wide as its widest cell plus one, rounded up to a multiple of 8, and the
 * padding is made of tabs. Lines without tabs (the "@" lines, blank lines)
 * end every block. This is that algorithm (Writer.format), for this one
 * configuration. */

typedef struct tw_cell {
  size_t off, len, width; /* width in runes, as tabwriter counts it */
} tw_cell_t;

typedef struct tabwriter {
  const char *text;
  tw_cell_t *cells;
  size_t *first; /* first[i]: index of line i's first cell; first[nlines] = ncells */
  size_t nlines;
  size_t *widths;
  cprof__buf_t *out;
} tabwriter_t;

enum { TW_MINWIDTH = 1, TW_TABWIDTH = 8, TW_PADDING = 1 };

static size_t tw_ncells(const tabwriter_t *tw, size_t line) {
  return tw->first[line + 1] - tw->first[line];
}

static void tw_pad(tabwriter_t *tw, size_t textw, size_t cellw) {
  cellw = (cellw + TW_TABWIDTH - 1) / TW_TABWIDTH * TW_TABWIDTH;
  for (size_t n = (cellw - textw + TW_TABWIDTH - 1) / TW_TABWIDTH; n > 0; n--)
    cprof__buf_putc(tw->out, '\t');
}

static void tw_write_lines(tabwriter_t *tw, size_t line0, size_t line1, size_t ncols) {
  for (size_t i = line0; i < line1; i++) {
    size_t n = tw_ncells(tw, i);
    for (size_t j = 0; j < n; j++) {
      const tw_cell_t *c = &tw->cells[tw->first[i] + j];
      cprof__buf_append(tw->out, tw->text + c->off, c->len);
      if (j < ncols)
        tw_pad(tw, c->width, tw->widths[j]);
    }
    if (i + 1 < tw->nlines)
      cprof__buf_putc(tw->out, '\n');
  }
}

/* Writes lines [line0, line1), whose columns 0..ncols-1 have their widths
 * in tw->widths already, finding the blocks of column ncols. */
static void tw_format(tabwriter_t *tw, size_t line0, size_t line1, size_t ncols) {
  size_t column = ncols;
  for (size_t this = line0; this < line1; this++) {
    /* The last cell of a line is not tab-terminated and belongs to no
     * column. */
    if (column + 1 >= tw_ncells(tw, this))
      continue;
    tw_write_lines(tw, line0, this, ncols);
    line0 = this;
    size_t width = TW_MINWIDTH;
    for (; this < line1; this++) {
      if (column + 1 >= tw_ncells(tw, this))
        break;
      size_t w = tw->cells[tw->first[this] + column].width + TW_PADDING;
      if (w > width)
        width = w;
    }
    tw->widths[column] = width;
    tw_format(tw, line0, this, ncols + 1);
    line0 = this;
  }
  tw_write_lines(tw, line0, line1, ncols);
}

static size_t rune_count(const char *p, size_t n) {
  size_t r = 0;
  for (size_t i = 0; i < n; i++)
    r += ((unsigned char)p[i] & 0xc0) != 0x80;
  return r;
}

/* Appends text[0..len) to out with its tab-terminated cells aligned. */
static int tabify(const char *text, size_t len, cprof__buf_t *out) {
  size_t nlines = 1, ncells = 1;
  for (size_t i = 0; i < len; i++) {
    nlines += text[i] == '\n';
    ncells += text[i] == '\n' || text[i] == '\t';
  }
  tabwriter_t tw = {.text = text, .nlines = nlines, .out = out};
  tw.cells = malloc(ncells * sizeof *tw.cells);
  tw.first = malloc((nlines + 1) * sizeof *tw.first);
  tw.widths = malloc(ncells * sizeof *tw.widths);
  int rc = -ENOMEM;
  if (!tw.cells || !tw.first || !tw.widths)
    goto out;
  size_t line = 0, cell = 0, start = 0;
  tw.first[0] = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && text[i] != '\n' && text[i] != '\t')
      continue;
    tw.cells[cell].off = start;
    tw.cells[cell].len = i - start;
    tw.cells[cell].width = rune_count(text + start, i - start);
    cell++;
    start = i + 1;
    if (i == len || text[i] == '\n')
      tw.first[++line] = cell;
  }
  tw_format(&tw, 0, nlines, 0);
  rc = out->failed ? -ENOMEM : 0;
out:
  free(tw.cells);
  free(tw.first);
  free(tw.widths);
  return rc;
}

/* ---- the count profile ---- */

void cprof__quote(cprof__buf_t *out, const char *s) {
  cprof__buf_putc(out, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': cprof__buf_puts(out, "\\\""); break;
    case '\\': cprof__buf_puts(out, "\\\\"); break;
    case '\n': cprof__buf_puts(out, "\\n"); break;
    case '\t': cprof__buf_puts(out, "\\t"); break;
    case '\r': cprof__buf_puts(out, "\\r"); break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        cprof__buf_printf(out, "\\x%02x", *p);
      else
        cprof__buf_putc(out, (char)*p);
    }
  }
  cprof__buf_putc(out, '"');
}

static int strptr_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Go's labelMap.String(): {"k":"v", "k2":"v2"}, the pairs sorted as
 * strings. A numeric label (which Go's runtime labels do not have) prints
 * its number unquoted. */
static int append_labels(const cprof__builder_t *b, const cprof__sample_rec_t *s,
                         cprof__buf_t *out) {
  cprof__buf_t pairs;
  cprof__buf_init(&pairs);
  size_t *offs = malloc((size_t)s->nlabels * sizeof *offs);
  char **strs = malloc((size_t)s->nlabels * sizeof *strs);
  int rc = -ENOMEM;
  if (!offs || !strs)
    goto out;
  for (int i = 0; i < s->nlabels; i++) {
    const cprof__label_rec_t *l = &s->labels[i];
    offs[i] = pairs.len;
    cprof__quote(&pairs, cprof__builder_str(b, l->key));
    cprof__buf_putc(&pairs, ':');
    if (l->str)
      cprof__quote(&pairs, cprof__builder_str(b, l->str));
    else
      cprof__buf_printf(&pairs, "%lld", (long long)l->num);
    cprof__buf_putc(&pairs, '\0');
  }
  if (pairs.failed)
    goto out;
  for (int i = 0; i < s->nlabels; i++)
    strs[i] = pairs.data + offs[i];
  qsort(strs, (size_t)s->nlabels, sizeof *strs, strptr_cmp);
  cprof__buf_putc(out, '{');
  for (int i = 0; i < s->nlabels; i++) {
    if (i)
      cprof__buf_puts(out, ", ");
    cprof__buf_puts(out, strs[i]);
  }
  cprof__buf_putc(out, '}');
  rc = 0;
out:
  free(offs);
  free(strs);
  cprof__buf_free(&pairs);
  return rc;
}

typedef struct entry {
  int64_t count;
  size_t sample;
  size_t key_off;
  const char *key;
} entry_t;

/* printCountProfile's keysByCount: higher counts first, ties by the key
 * string (the "@ ..." line and its labels). */
static int entry_cmp(const void *pa, const void *pb) {
  const entry_t *a = pa, *b = pb;
  if (a->count != b->count)
    return a->count > b->count ? -1 : 1;
  return strcmp(a->key, b->key);
}

/* printStackRecord: one "#" line per source frame, inlined frames each on
 * their own line with the same address; an address nothing is known about
 * prints alone. The address is the Location's (the pc inside the call
 * instruction for callers) and the offset is from the start of the real
 * (outermost) function, as Go's frame.PC - frame.Entry. */
static void append_frames(const cprof__builder_t *b, const cprof__resolved_t *r, size_t sample,
                          cprof__buf_t *out) {
  const cprof__sample_rec_t *s = &b->samples[sample];
  int n = cprof__sample_nlocs(s);
  for (int j = 0; j < n; j++) {
    const cprof__res_location_t *l = &r->locations[r->stack_locs[r->stack_start[sample] + (size_t)j]];
    if (l->nlines == 0) {
      cprof__buf_printf(out, "#\t0x%llx\n", (unsigned long long)l->address);
      continue;
    }
    for (uint32_t k = 0; k < l->nlines; k++) {
      const cprof__res_line_t *ln = &r->lines[l->first_line + k];
      const cprof__res_function_t *f = &r->functions[ln->function];
      cprof__buf_printf(out, "#\t0x%llx\t%s", (unsigned long long)l->address,
                        cprof__builder_str(b, f->name));
      if (!l->pseudo)
        cprof__buf_printf(out, "+0x%llx", (unsigned long long)l->sym_offset);
      if (f->file)
        cprof__buf_printf(out, "\t%s:%lld", cprof__builder_str(b, f->file), (long long)ln->line);
      cprof__buf_putc(out, '\n');
    }
  }
  cprof__buf_putc(out, '\n');
}

/* The start of a legacy text: b resolved into r (which the caller frees
 * whatever happens) and an array of entries, one of size bytes a sample
 * (one at the least, so that an empty profile is no failed malloc). NULL
 * with the error in *rc, else *rc is 0. */
static void *begin(cprof__builder_t *b, cprof__resolved_t *r, size_t size, int *rc) {
  if ((*rc = cprof__builder_resolve(b, r)) != 0)
    return NULL;
  void *entries = malloc((b->nsamples ? b->nsamples : 1) * size);
  if (!entries)
    *rc = -ENOMEM;
  return entries;
}

/* The end of a legacy text: text, its columns lined up, into out. */
static int finish(const cprof__buf_t *text, cprof__buf_t *out) {
  return text->failed ? -ENOMEM : tabify(text->data, text->len, out);
}

/* A stack's "@" line. pprof's parser (parseGoCount in
 * profile/legacy_profile.go, and the heap parser alike) takes every address
 * on it for a return address and subtracts one, as Go's own profiles hold
 * only return addresses. Our leaf pcs[0] is an exact pc, so it is printed
 * plus one: pprof lands on the same address the protobuf profile's
 * Location has. A pseudo frame, which has no address, prints as 0x1
 * (address 0), and so does an empty stack, because the "@" line must hold
 * at least one address for pprof to parse it. */
static void append_at_line(const cprof__sample_rec_t *s, cprof__buf_t *out) {
  cprof__buf_putc(out, '@');
  if (s->depth == 0)
    cprof__buf_puts(out, " 0x1");
  for (int j = 0; j < s->depth; j++)
    cprof__buf_printf(out, " 0x%llx", (unsigned long long)(j == 0 ? s->pcs[0] + 1 : s->pcs[j]));
}

int cprof__builder_write_count_text(cprof__builder_t *b, const char *name, cprof__buf_t *out) {
  if (!b || !name || !out)
    return -EINVAL;
  cprof__resolved_t r;
  cprof__buf_t keys, text;
  cprof__buf_init(&keys);
  cprof__buf_init(&text);
  int rc;
  entry_t *entries = begin(b, &r, sizeof *entries, &rc);
  if (!entries)
    goto out;
  rc = -ENOMEM;

  /* The key of a stack is its "@" line, plus its labels as Go prints them. */
  for (size_t i = 0; i < b->nsamples; i++) {
    const cprof__sample_rec_t *s = &b->samples[i];
    entries[i].count = s->values[0];
    entries[i].sample = i;
    entries[i].key_off = keys.len;
    append_at_line(s, &keys);
    if (s->nlabels > 0) {
      cprof__buf_puts(&keys, "\n# labels: ");
      if (append_labels(b, s, &keys) != 0)
        goto out;
    }
    cprof__buf_putc(&keys, '\0');
  }
  if (keys.failed)
    goto out;
  for (size_t i = 0; i < b->nsamples; i++)
    entries[i].key = keys.data + entries[i].key_off;
  qsort(entries, b->nsamples, sizeof *entries, entry_cmp);

  /* Go's total is the number of records in the profile; for a count
   * profile built from one record per sample that is the sum of value 0. */
  cprof__buf_printf(&text, "%s profile: total %lld\n", name, (long long)cprof__builder_total(b, 0));
  for (size_t i = 0; i < b->nsamples; i++) {
    cprof__buf_printf(&text, "%lld %s\n", (long long)entries[i].count, entries[i].key);
    append_frames(b, &r, entries[i].sample, &text);
  }
  rc = finish(&text, out);
out:
  free(entries);
  cprof__buf_free(&keys);
  cprof__buf_free(&text);
  cprof__resolved_free(&r);
  return rc;
}

/* ---- the heap and contention profiles ---- */

typedef struct value_entry {
  int64_t value;
  size_t sample;
} value_entry_t;

/* Most first; ties keep the builder's order (first seen first), which
 * qsort may not: compare it. */
static int value_entry_cmp(const void *pa, const void *pb) {
  const value_entry_t *a = pa, *b = pb;
  if (a->value != b->value)
    return a->value > b->value ? -1 : 1;
  return a->sample < b->sample ? -1 : a->sample > b->sample;
}

/* The legacy text of the heap and contention profiles: `head`, then each
 * sample, most of value `key` first, as `values(sample)`, its "@" line and
 * its frames; then `trailer`. */
static int write_by_value(cprof__builder_t *b, int key, const char *head,
                          void (*values)(const cprof__sample_rec_t *, cprof__buf_t *),
                          const char *trailer, cprof__buf_t *out) {
  cprof__resolved_t r;
  cprof__buf_t text;
  cprof__buf_init(&text);
  int rc;
  value_entry_t *entries = begin(b, &r, sizeof *entries, &rc);
  if (!entries)
    goto out;
  for (size_t i = 0; i < b->nsamples; i++)
    entries[i] = (value_entry_t){b->samples[i].values[key], i};
  qsort(entries, b->nsamples, sizeof *entries, value_entry_cmp);

  cprof__buf_puts(&text, head);
  for (size_t i = 0; i < b->nsamples; i++) {
    const cprof__sample_rec_t *s = &b->samples[entries[i].sample];
    values(s, &text);
    append_at_line(s, &text);
    cprof__buf_putc(&text, '\n');
    append_frames(b, &r, entries[i].sample, &text);
  }
  if (trailer)
    cprof__buf_puts(&text, trailer);
  rc = finish(&text, out);
out:
  free(entries);
  cprof__buf_free(&text);
  cprof__resolved_free(&r);
  return rc;
}

/* Values: alloc_objects, alloc_space, inuse_objects, inuse_space, as
 * sampled (pprof scales them by the rate itself). */
static void heap_values(const cprof__sample_rec_t *s, cprof__buf_t *out) {
  cprof__buf_printf(out, "%lld: %lld [%lld: %lld] ", (long long)s->values[2],
                    (long long)s->values[3], (long long)s->values[0], (long long)s->values[1]);
}

/* writeHeapInternal's order: most bytes in use first. Go prints twice the
 * rate after "heap/", because early versions of the C++ heap profiler did
 * and pprof has come to expect it. */
int cprof__builder_write_heap_text(cprof__builder_t *b, long rate, const char *trailer,
                                   cprof__buf_t *out) {
  if (!b || !out || b->n_sample_types != 4)
    return -EINVAL;
  char head[160];
  snprintf(head, sizeof head, "heap profile: %lld: %lld [%lld: %lld] @ heap/%ld\n",
           (long long)b->totals[2], (long long)b->totals[3], (long long)b->totals[0],
           (long long)b->totals[1], 2 * rate);
  return write_by_value(b, 3, head, heap_values, trailer, out);
}

/* ---- the memory map ---- */

void cprof__text_append_maps(cprof__buf_t *out) {
  char path[64];
  snprintf(path, sizeof path, "%s/maps", cprof__procfs_self());
  FILE *f = fopen(path, "re");
  if (!f)
    return;
  cprof__buf_puts(out, "\n--- Memory map: ---\n");
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    cprof__buf_append(out, chunk, n);
  fclose(f);
}

/* ---- the contention profiles ---- */

/* Go's "cycles count @ ..." (cprof's cycles are nanoseconds). */
static void contention_values(const cprof__sample_rec_t *s, cprof__buf_t *out) {
  cprof__buf_printf(out, "%lld %lld ", (long long)s->values[1], (long long)s->values[0]);
}

/* writeProfileInternal's order: most delay first. */
int cprof__builder_write_contention_text(cprof__builder_t *b, const char *header,
                                         cprof__buf_t *out) {
  if (!b || !header || !out || b->n_sample_types != 2)
    return -EINVAL;
  return write_by_value(b, 1, header, contention_values, NULL, out);
}

/* ---- the debug=2 stack dump ---- */

/* A reserved pc of a stack (unwind/pc.h) on its line: frames elided as
 * Go's traceback prints them (runtime/traceback.go), with their number, or
 * Go's older words where the walk did not count them; the cut as the
 * profiles name it. */
/* Go's traceback line for frames left out of a deep stack. */
static void append_elided(cprof__buf_t *out, uintptr_t pc) {
  uint32_t n = cprof__pc_mark_number(pc);
  if (n)
    cprof__buf_printf(out, "...%u frames elided...\n", (unsigned)n);
  else
    cprof__buf_puts(out, "...additional frames elided...\n");
}

void cprof__format_stack(cprof__buf_t *out, const uintptr_t *pcs, int depth) {
  /* In a tree's member, addresses only: the owner names them
   * (tree/symbolize.c, cprof__tree_name_dump). */
  cprof__symbolizer_bare(1);
  cprof__symbolizer_t *sym = cprof__symbolizer_acquire();
  cprof__symbolizer_bare(0);
  const cprof__mapping_t *maps = NULL;
  int nmaps = cprof__symbolizer_mappings(sym, &maps);
  uint32_t modules = 0; /* the module generation, from the last word (unwind/modules.h) */
  if (depth > 0 && cprof__pc_is_modules(pcs[depth - 1]))
    modules = cprof__pc_mark_number(pcs[--depth]);
  for (int i = 0; i < depth; i++) {
    if (cprof__pc_is_elided(pcs[i])) {
      append_elided(out, pcs[i]);
      continue;
    }
    /* Symbolize inside the call instruction for return addresses (see
     * builder.h), but print offsets from the pc itself, as Go's traceback
     * prints frame.pc - entry ("+0x1d") with the return address. */
    uintptr_t pc = pcs[i];
    char text[128];
    const char *mark = cprof__mark_name(pc, text, sizeof text);
    if (mark) { /* a reserved pc (unwind/pc.h): its name on a line of its own */
      cprof__buf_printf(out, "%s\n", mark);
      continue;
    }
    uintptr_t addr = i == 0 ? pc : pc - 1;
    int m = cprof__symbolizer_mapping_then(sym, addr, modules);
    const cprof__mapping_t *map = m >= 0 && m < nmaps && maps ? &maps[m] : NULL;
    cprof__frame_t frames[MAX_INLINE];
    uintptr_t offset = 0;
    int nf = cprof__symbolize_in(sym, m, addr, frames, MAX_INLINE, &offset);
    if (nf > MAX_INLINE)
      nf = MAX_INLINE;
    int printed = 0;
    for (int j = 0; j < nf; j++) {
      if (!frames[j].function)
        continue;
      /* Go prints an inlined call as "name(...)" with no pc offset, and the
       * real frame as "name(args)" with one. We have no arguments. */
      int inlined = j < nf - 1;
      cprof__buf_printf(out, "%s(%s)\n\t", frames[j].function, inlined ? "..." : "");
      if (frames[j].file)
        cprof__buf_printf(out, "%s:%d", frames[j].file, frames[j].line);
      else
        cprof__buf_puts(out, map ? map->path : "?");
      if (!inlined)
        cprof__buf_printf(out, " +0x%llx", (unsigned long long)(offset + (pc - addr)));
      cprof__buf_putc(out, '\n');
      printed = 1;
    }
    if (printed)
      continue;
    if (map)
      cprof__buf_printf(out, "0x%llx (%s+0x%llx)\n", (unsigned long long)pc, map->path,
                        (unsigned long long)(pc - map->start + map->offset));
    else
      cprof__buf_printf(out, "0x%llx ?\n", (unsigned long long)pc);
  }
  cprof__symbolizer_release(sym);
}
