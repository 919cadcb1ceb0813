#include "model/measure.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* pprof's unit tables: each unit's printed name, the spellings it is known
 * by (lower case, without a plural "s"), and its size in the type's base
 * unit. */
typedef struct unit {
  const char *name;
  const char *aliases[4];
  double factor;
} unit_t;

typedef struct unit_type {
  const unit_t *units;
  size_t n;
  unit_t fallback; /* what a value is shown in when asked for a unit of another type */
} unit_type_t;

static const unit_t memory[] = {
    {"B", {"b", "byte"}, 1},
    {"kB", {"kb", "kbyte", "kilobyte"}, 1024.0},
    {"MB", {"mb", "mbyte", "megabyte"}, 1048576.0},
    {"GB", {"gb", "gbyte", "gigabyte"}, 1073741824.0},
    {"TB", {"tb", "tbyte", "terabyte"}, 1099511627776.0},
    {"PB", {"pb", "pbyte", "petabyte"}, 1125899906842624.0},
};
static const unit_t times[] = {
    {"ns", {"ns", "nanosecond"}, 1},    {"us", {"\xce\xbcs", "us", "microsecond"}, 1e3},
    {"ms", {"ms", "millisecond"}, 1e6}, {"s", {"s", "sec", "second"}, 1e9},
    {"hrs", {"hour", "hr"}, 3600e9},
};
static const unit_t gcus[] = {
    {"n*GCU", {"nanogcu"}, 1e-9}, {"u*GCU", {"microgcu"}, 1e-6}, {"m*GCU", {"milligcu"}, 1e-3},
    {"GCU", {"gcu"}, 1},          {"k*GCU", {"kilogcu"}, 1e3},   {"M*GCU", {"megagcu"}, 1e6},
    {"G*GCU", {"gigagcu"}, 1e9},  {"T*GCU", {"teragcu"}, 1e12},  {"P*GCU", {"petagcu"}, 1e15},
};
static const unit_type_t types[] = {
    {memory, sizeof memory / sizeof *memory, {"B", {0}, 1}},
    {times, sizeof times / sizeof *times, {"s", {0}, 1e9}},
    {gcus, sizeof gcus / sizeof *gcus, {"GCU", {0}, 1}},
};

/* The unit of type t that `name` spells, lower-cased and, when longer than
 * two letters, without a trailing "s" (pprof's sniffUnit); NULL if none. */
static const unit_t *sniff(const unit_type_t *t, const char *name) {
  char low[64];
  size_t n = strlen(name);
  if (n >= sizeof low)
    return NULL;
  for (size_t i = 0; i < n; i++)
    low[i] = (char)tolower((unsigned char)name[i]);
  low[n] = '\0';
  if (n > 2 && low[n - 1] == 's')
    low[n - 1] = '\0';
  for (size_t i = 0; i < t->n; i++)
    for (int k = 0; k < 4 && t->units[i].aliases[k]; k++)
      if (strcmp(low, t->units[i].aliases[k]) == 0)
        return &t->units[i];
  return NULL;
}

double cprof__measure_scale(int64_t value, const char *from_unit, const char *to_unit,
                            const char **unit) {
  if (value < 0 && value != INT64_MIN)
    return -cprof__measure_scale(-value, from_unit, to_unit, unit);
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    const unit_type_t *t = &types[i];
    const unit_t *from = sniff(t, from_unit);
    if (!from)
      continue;
    double v = (double)value * from->factor;
    if (strcmp(to_unit, "minimum") == 0 || strcmp(to_unit, "auto") == 0) {
      const unit_t *best = NULL;
      for (size_t k = 0; k < t->n; k++)
        if ((!best || t->units[k].factor >= best->factor) && v / t->units[k].factor >= 1.0)
          best = &t->units[k];
      if (!best)
        best = &t->fallback;
      *unit = best->name;
      return v / best->factor;
    }
    const unit_t *to = sniff(t, to_unit);
    if (!to)
      to = &t->fallback;
    *unit = to->name;
    return v / to->factor;
  }
  static const char *const plain[] = {"count", "sample", "unit", "minimum", "auto"};
  *unit = to_unit;
  for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
    if (strcmp(to_unit, plain[i]) == 0)
      *unit = "";
  return (double)value;
}

void cprof__measure_label(int64_t value, const char *from_unit, const char *to_unit, char *buf,
                          size_t len) {
  const char *unit;
  double v = cprof__measure_scale(value, from_unit, to_unit, &unit);
  char num[64];
  snprintf(num, sizeof num, "%.2f", v);
  size_t n = strlen(num);
  if (n > 3 && strcmp(num + n - 3, ".00") == 0)
    num[n - 3] = '\0';
  if (strcmp(num, "0") == 0 || strcmp(num, "-0") == 0)
    snprintf(buf, len, "0");
  else
    snprintf(buf, len, "%s%s", num, unit);
}

void cprof__measure_percentage(int64_t value, int64_t total, char *buf, size_t len) {
  double ratio = total != 0 ? fabs((double)value / (double)total) * 100 : 0;
  if (ratio >= 99.95 && ratio <= 100.05)
    snprintf(buf, len, "  100%%");
  else if (ratio >= 1.0)
    snprintf(buf, len, "%5.2f%%", ratio);
  else
    snprintf(buf, len, "%5.2g%%", ratio);
}
