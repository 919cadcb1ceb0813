#include "profile/units.h"

#include <string.h>

typedef struct unit {
  const char *name;       /* canonical, as pprof prints it */
  const char *aliases[4]; /* lowercase, without a plural "s" */
  double factor;
} unit_t;

typedef struct unit_type {
  const unit_t *units;
  int n;
  const char *default_name; /* for a to_unit of another kind */
  double default_factor;
} unit_type_t;

static const unit_t memory[] = {
    {"B", {"b", "byte"}, 1},
    {"kB", {"kb", "kbyte", "kilobyte"}, 1024.0},
    {"MB", {"mb", "mbyte", "megabyte"}, 1024.0 * 1024},
    {"GB", {"gb", "gbyte", "gigabyte"}, 1024.0 * 1024 * 1024},
    {"TB", {"tb", "tbyte", "terabyte"}, 1024.0 * 1024 * 1024 * 1024},
    {"PB", {"pb", "pbyte", "petabyte"}, 1024.0 * 1024 * 1024 * 1024 * 1024},
};

/* pprof lists "μs" too, but its lookup first drops the "s" of any unit
 * longer than two bytes, and "μs" is three: it can never match, here as
 * there. */
static const unit_t time_units[] = {
    {"ns", {"ns", "nanosecond"}, 1},    {"us", {"μs", "us", "microsecond"}, 1e3},
    {"ms", {"ms", "millisecond"}, 1e6}, {"s", {"s", "sec", "second"}, 1e9},
    {"hrs", {"hour", "hr"}, 3600e9},
};

static const unit_t gcu[] = {
    {"n*GCU", {"nanogcu"}, 1e-9}, {"u*GCU", {"microgcu"}, 1e-6}, {"m*GCU", {"milligcu"}, 1e-3},
    {"GCU", {"gcu"}, 1},          {"k*GCU", {"kilogcu"}, 1e3},   {"M*GCU", {"megagcu"}, 1e6},
    {"G*GCU", {"gigagcu"}, 1e9},  {"T*GCU", {"teragcu"}, 1e12},  {"P*GCU", {"petagcu"}, 1e15},
};

static const unit_type_t types[] = {
    {memory, sizeof memory / sizeof *memory, "B", 1},
    {time_units, sizeof time_units / sizeof *time_units, "s", 1e9},
    {gcu, sizeof gcu / sizeof *gcu, "GCU", 1},
};

/* pprof's sniffUnit: lowercase (ASCII; other bytes stay), drop one
 * trailing "s" from a name longer than two bytes, look up the aliases. */
static const unit_t *sniff(const unit_type_t *t, const char *name) {
  char low[64];
  size_t n = strlen(name);
  if (n >= sizeof low)
    return NULL;
  for (size_t i = 0; i < n; i++)
    low[i] = name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] - 'A' + 'a') : name[i];
  if (n > 2 && low[n - 1] == 's')
    n--;
  low[n] = 0;
  for (int i = 0; i < t->n; i++)
    for (int k = 0; k < 4 && t->units[i].aliases[k]; k++)
      if (strcmp(t->units[i].aliases[k], low) == 0)
        return &t->units[i];
  return NULL;
}

static int is_auto(const char *u) { return !strcmp(u, "auto") || !strcmp(u, "minimum"); }

double cprof__units_scale(int64_t value, const char *from_unit, const char *to_unit,
                          const char **unit) {
  from_unit = from_unit ? from_unit : "";
  to_unit = to_unit ? to_unit : "";
  if (value < 0 && value != INT64_MIN)
    return -cprof__units_scale(-value, from_unit, to_unit, unit);
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    const unit_type_t *t = &types[i];
    const unit_t *from = sniff(t, from_unit);
    if (!from)
      continue;
    double v = (double)value * from->factor;
    if (is_auto(to_unit)) {
      /* The largest unit the value is at least one of. */
      const unit_t *best = NULL;
      for (int k = 0; k < t->n; k++)
        if ((!best || t->units[k].factor >= best->factor) && v / t->units[k].factor >= 1.0)
          best = &t->units[k];
      if (best) {
        *unit = best->name;
        return v / best->factor;
      }
      *unit = t->default_name;
      return v / t->default_factor;
    }
    const unit_t *to = sniff(t, to_unit);
    if (!to) {
      *unit = t->default_name;
      return v / t->default_factor;
    }
    *unit = to->name;
    return v / to->factor;
  }
  if (!strcmp(to_unit, "count") || !strcmp(to_unit, "sample") || !strcmp(to_unit, "unit") ||
      is_auto(to_unit))
    *unit = "";
  else
    *unit = to_unit;
  return (double)value;
}
