/* cprof traces SOURCE: every sample with its labels, value and stack, leaf
 * first, as go tool pprof -traces prints them (pprof's report.printTraces):
 *
 *   -----------+-------------------------------------------------------
 *       thread:  lock-worker-1
 *        390ms   hold_lock
 *                contend_on_lock
 *                worker_main
 */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "model/measure.h"
#include "report.h"

static const char usage[] = "usage: cprof traces [OPTIONS] SOURCE...\n"
                            "\n"
                            "Prints each sample: its labels, its value and its stack, leaf first,\n"
                            "as go tool pprof -traces.\n";

static const char separator[] =
    "-----------+-------------------------------------------------------\n";

/* One label line, "%10s:  v1 v2". */
typedef struct label_line {
  char *text;
} label_line_t;

static int by_text(const void *a, const void *b) {
  return strcmp(((const label_line_t *)a)->text, ((const label_line_t *)b)->text);
}

/* The unit of a numeric label key, as pprof's NumLabelUnits guesses it. */
static const char *num_unit(const cprof__pf_t *p, const char *key) {
  for (size_t i = 0; i < p->n_samples; i++)
    for (size_t k = 0; k < p->samples[i].n_labels; k++) {
      const cprof__label_t *l = &p->samples[i].labels[k];
      if (!l->str && l->num_unit && l->num_unit[0] && strcmp(l->key, key) == 0)
        return l->num_unit;
    }
  if (strcmp(key, "alignment") == 0 || strcmp(key, "request") == 0)
    return "bytes";
  return key;
}

/* The sample's labels, string ones then numeric ones, each group sorted,
 * one line per key with its values joined by spaces (Go keeps a map of
 * key to values). */
static void write_labels(cprof__buf_t *out, const cprof__pf_t *p, const cprof__pf_sample_t *s) {
  for (int numeric = 0; numeric <= 1; numeric++) {
    label_line_t *lines = calloc(s->n_labels + 1, sizeof *lines);
    size_t n = 0;
    if (!lines)
      return;
    for (size_t k = 0; k < s->n_labels; k++) {
      const cprof__label_t *l = &s->labels[k];
      if ((l->str == NULL) != numeric)
        continue;
      int seen = 0;
      for (size_t j = 0; j < k && !seen; j++)
        seen = (s->labels[j].str == NULL) == numeric && strcmp(s->labels[j].key, l->key) == 0;
      if (seen)
        continue;
      /* %10s pads the key, which may hold any bytes: escaped first. */
      cprof__buf_t key, b;
      cprof__buf_init(&key);
      cprof__buf_init(&b);
      report_put_name(&key, l->key);
      cprof__buf_putc(&key, '\0');
      cprof__buf_printf(&b, "%10s:  ", key.failed ? "" : key.data);
      cprof__buf_free(&key);
      const char *unit = numeric ? num_unit(p, l->key) : NULL;
      int first = 1;
      for (size_t j = k; j < s->n_labels; j++) {
        const cprof__label_t *v = &s->labels[j];
        if ((v->str == NULL) != numeric || strcmp(v->key, l->key) != 0)
          continue;
        if (!first)
          cprof__buf_putc(&b, ' ');
        first = 0;
        if (numeric) {
          char num[64];
          cprof__measure_label(v->num, unit, "auto", num, sizeof num);
          cprof__buf_puts(&b, num);
        } else {
          report_put_name(&b, v->str);
        }
      }
      cprof__buf_putc(&b, '\0');
      if (b.failed)
        cprof__buf_free(&b);
      else
        lines[n++].text = b.data;
    }
    qsort(lines, n, sizeof *lines, by_text);
    for (size_t k = 0; k < n; k++) {
      cprof__buf_printf(out, "%s\n", lines[k].text);
      free(lines[k].text);
    }
    free(lines);
  }
}

int report_traces(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg, char *err,
                  size_t errlen) {
  (void)arg;
  cprof__arena_t *names = cprof__arena_new(0);
  if (!names) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  report_profile_labels(out, p, o);
  for (size_t i = 0; i < p->n_samples; i++) {
    const cprof__pf_sample_t *s = &p->samples[i];
    if (s->n_locations == 0)
      continue;
    cprof__buf_puts(out, separator);
    write_labels(out, p, s);
    int64_t v = s->values[o->index];
    if (o->mean && s->values[0] != 0)
      v /= s->values[0];
    int first = 1;
    for (size_t k = 0; k < s->n_locations; k++) {
      const cprof__pf_location_t *l = s->locations[k];
      size_t lines = l->n_lines ? l->n_lines : 1;
      for (size_t j = 0; j < lines; j++) {
        const char *name =
            cprof__pf_frame_name(names, l, l->n_lines ? &l->lines[j] : NULL, o->granularity);
        char value[64] = "";
        if (first)
          report_value(value, sizeof value, v, o, o->unit);
        first = 0;
        cprof__buf_printf(out, "%10s   ", value);
        report_put_name(out, name ? name : "?");
        cprof__buf_puts(out, j + 1 < lines ? " (inline)\n" : "\n");
      }
    }
  }
  cprof__buf_puts(out, separator);
  cprof__arena_free(names);
  return 0;
}

int cmd_traces(int argc, char **argv) {
  return report_main("traces", usage, 0, NULL, NULL, report_traces, argc, argv);
}
