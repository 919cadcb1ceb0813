/* The viewer page and the JSON inside it (the format is described in
 * viewer.h). Names are arbitrary bytes and the page is opened from disk or
 * served by a profiled process, so every string goes through one escaper
 * that makes it valid JSON, valid UTF-8, and inert inside a <script>. */
#include "ui/viewer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/table.h"
#include "ui/template.h"
#include "ui/viewer_assets.h"

void cprof__viewer_json_string(cprof__buf_t *out, const char *str) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  cprof__buf_putc(out, '"');
  while (*s) {
    unsigned c = *s;
    const char *esc = NULL;
    switch (c) {
    case '"':
      esc = "\\\"";
      break;
    case '\\':
      esc = "\\\\";
      break;
    case '\n':
      esc = "\\n";
      break;
    case '\r':
      esc = "\\r";
      break;
    case '\t':
      esc = "\\t";
      break;
    case '<':
      esc = "\\u003c";
      break;
    case '>':
      esc = "\\u003e";
      break;
    case '&':
      esc = "\\u0026";
      break;
    }
    if (esc) {
      cprof__buf_puts(out, esc);
      s++;
      continue;
    }
    if (c < 0x20 || c == 0x7f) {
      char u[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
      cprof__buf_puts(out, u);
      s++;
      continue;
    }
    size_t n = cprof__utf8_len(s);
    if (n == 0) {
      /* One U+FFFD per byte that is not part of a valid sequence. */
      cprof__buf_puts(out, "\\ufffd");
      s++;
    } else if (n == 3 && s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9)) {
      /* U+2028 and U+2029 are line terminators to older JavaScript. */
      cprof__buf_puts(out, s[2] == 0xa8 ? "\\u2028" : "\\u2029");
      s += 3;
    } else {
      cprof__buf_append(out, s, n);
      s += n;
    }
  }
  cprof__buf_putc(out, '"');
}

/* ---- the string table: each distinct name or file once ---------------- */

typedef struct strtab {
  cprof__table_t index; /* a string's hash -> its id */
  const char **order;   /* by id */
  size_t n, cap;
} strtab_t;

static int str_eq(const void *ctx, uint32_t id, const void *key) {
  return strcmp(((const strtab_t *)ctx)->order[id], key) == 0;
}

/* The id of s, added if new; -1 when out of memory. */
static long strtab_id(strtab_t *t, const char *s) {
  if (!s)
    s = "";
  uint64_t h = cprof__hash_bytes(CPROF_HASH_SEED, s, strlen(s));
  int64_t id = cprof__table_find(&t->index, h, str_eq, t, s);
  if (id >= 0)
    return (long)id;
  if (cprof__grow((void **)&t->order, &t->cap, t->n + 1, sizeof *t->order) != 0 ||
      cprof__table_insert(&t->index, h, (uint32_t)t->n) != 0)
    return -1;
  t->order[t->n] = s;
  return (long)t->n++;
}

static void strtab_free(strtab_t *t) {
  cprof__table_free(&t->index);
  free(t->order);
}

/* ---- the JSON ---------------------------------------------------------- */

typedef struct frame {
  const cprof__pf_tree_node_t *node;
  long parent;
} frame_t;

/* Writes the nodes in preorder into b, interning their strings in st. An
 * explicit stack, since a recursive program's tree is as deep as its
 * recursion. */
static int write_nodes(const cprof__pf_tree_t *t, strtab_t *st, cprof__buf_t *b) {
  size_t cap = 256, top = 0;
  frame_t *stack = malloc(cap * sizeof *stack);
  if (!stack)
    return -ENOMEM;
  stack[top++] = (frame_t){t->root, -1};
  long index = 0;
  int rc = 0;
  while (top > 0) {
    frame_t f = stack[--top];
    long name = strtab_id(st, f.node->name), file = strtab_id(st, f.node->file);
    if (name < 0 || file < 0) {
      rc = -ENOMEM;
      break;
    }
    cprof__buf_printf(b, "%s%ld,%ld,%ld", index ? ",\n" : "", f.parent, name, file);
    for (size_t i = 0; i < t->n_values; i++)
      cprof__buf_printf(b, ",%" PRId64, f.node->total ? f.node->total[i] : 0);
    for (size_t i = 0; i < t->n_values; i++)
      cprof__buf_printf(b, ",%" PRId64, f.node->self ? f.node->self[i] : 0);
    if (top + f.node->n_children > cap) {
      while (top + f.node->n_children > cap)
        cap *= 2;
      frame_t *s = realloc(stack, cap * sizeof *s);
      if (!s) {
        rc = -ENOMEM;
        break;
      }
      stack = s;
    }
    /* Reversed, so that the first child comes out first. */
    for (size_t i = f.node->n_children; i-- > 0;)
      if (f.node->children[i])
        stack[top++] = (frame_t){f.node->children[i], index};
    index++;
  }
  free(stack);
  if (rc == 0 && b->failed)
    rc = -ENOMEM;
  return rc;
}

static int by_string(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "labels": the label keys p's samples carry, sorted (diff's pprof::base
 * left out): what the live page offers to root the graph by. */
static void write_label_keys(const cprof__pf_t *p, cprof__buf_t *out) {
  const char *keys[CPROF_VIEWER_MAX_LABEL_KEYS];
  size_t n = 0;
  for (size_t i = 0; i < p->n_samples; i++)
    for (size_t k = 0; k < p->samples[i].n_labels; k++) {
      const char *key = p->samples[i].labels[k].key;
      size_t j = 0;
      while (j < n && strcmp(keys[j], key) != 0)
        j++;
      if (j == n && n < CPROF_VIEWER_MAX_LABEL_KEYS && strcmp(key, "pprof::base") != 0)
        keys[n++] = key;
    }
  qsort(keys, n, sizeof *keys, by_string);
  cprof__buf_puts(out, ",\n\"labels\":[");
  for (size_t i = 0; i < n; i++) {
    if (i)
      cprof__buf_putc(out, ',');
    cprof__viewer_json_string(out, keys[i]);
  }
  cprof__buf_putc(out, ']');
}

int cprof__viewer_json(const cprof__pf_tree_t *t, const cprof__pf_t *p, const char *title, int diff,
                       cprof__buf_t *out) {
  if (!t || !t->root || !p || t->n_values != p->n_sample_types * (diff ? 2 : 1))
    return -EINVAL;
  strtab_t st = {0};
  cprof__buf_t nodes;
  cprof__buf_init(&nodes);
  int rc = write_nodes(t, &st, &nodes);
  if (rc != 0)
    goto done;

  cprof__buf_puts(out, "{\"version\":1,\"title\":");
  cprof__viewer_json_string(out, title ? title : "");
  cprof__buf_puts(out, ",\n\"comments\":[");
  for (size_t i = 0; i < p->n_comments; i++) {
    if (i)
      cprof__buf_putc(out, ',');
    cprof__viewer_json_string(out, p->comments[i] ? p->comments[i] : "");
  }
  cprof__buf_puts(out, "],\n\"types\":[");
  for (size_t i = 0; i < p->n_sample_types; i++) {
    cprof__buf_puts(out, i ? ",{\"type\":" : "{\"type\":");
    cprof__viewer_json_string(out, p->sample_types[i].type ? p->sample_types[i].type : "");
    cprof__buf_puts(out, ",\"unit\":");
    cprof__viewer_json_string(out, p->sample_types[i].unit ? p->sample_types[i].unit : "");
    cprof__buf_putc(out, '}');
  }
  cprof__buf_printf(
      out, "],\n\"default\":%zu,\"diff\":%s,\"time_nanos\":%" PRId64 ",\"duration_nanos\":%" PRId64,
      cprof__pf_default_index(p), diff ? "true" : "false", p->time_nanos, p->duration_nanos);
  write_label_keys(p, out);
  cprof__buf_puts(out, ",\n\"strings\":[");
  for (size_t i = 0; i < st.n; i++) {
    if (i)
      cprof__buf_puts(out, i % 16 ? "," : ",\n");
    cprof__viewer_json_string(out, st.order[i]);
  }
  cprof__buf_puts(out, "],\n\"nodes\":[\n");
  cprof__buf_append(out, nodes.data, nodes.len);
  cprof__buf_puts(out, "]}\n");
  rc = out->failed ? -ENOMEM : 0;
done:
  cprof__buf_free(&nodes);
  strtab_free(&st);
  return rc;
}

/* ---- the page ---------------------------------------------------------- */

/* The page, with more script (the live page's picker) after the viewer's
 * in the same element, or none. */
static int page(const char *json, size_t n, const char *title, const unsigned char *more,
                size_t more_len, cprof__buf_t *out) {
  cprof__buf_t t;
  cprof__buf_init(&t);
  cprof__ui_html_text(&t, title ? title : "cprof");
  const cprof__ui_part_t parts[] = {
      {"{{title}}", t.data, t.len},   {"{{css}}", cprof__viewer_css, cprof__viewer_css_len},
      {"{{data}}", json, n},          {"{{js}}", cprof__viewer_js, cprof__viewer_js_len},
      {"{{js}}", "\n", more ? 1 : 0}, {"{{js}}", more, more_len},
  };
  int rc = t.failed ? -ENOMEM
                    : cprof__ui_fill(cprof__viewer_html, cprof__viewer_html_len, parts,
                                     sizeof parts / sizeof *parts, out);
  cprof__buf_free(&t);
  return rc;
}

int cprof__viewer_page(const char *json, size_t n, const char *title, cprof__buf_t *out) {
  if (memchr(json, '<', n))
    return -EINVAL;
  return page(json, n, title, NULL, 0, out);
}

int cprof__viewer_page_live(const char *title, cprof__buf_t *out) {
  return page("", 0, title, cprof__viewer_live_js, cprof__viewer_live_js_len, out);
}
