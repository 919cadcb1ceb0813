/* Values with units as pprof prints them (src/model/measure.c): each
 * expected string is what pprof's measurement.ScaledLabel and Percentage
 * give for the same arguments. */
#include "check.h"
#include "model/measure.h"

static const char *label(int64_t v, const char *from, const char *to) {
  static char buf[64];
  cprof__measure_label(v, from, to, buf, sizeof buf);
  return buf;
}

static const char *pct(int64_t v, int64_t total) {
  static char buf[32];
  cprof__measure_percentage(v, total, buf, sizeof buf);
  return buf;
}

int main(void) {
  CHECK_EQ_STR(label(1536, "bytes", "auto"), "1.50kB");
  CHECK_EQ_STR(label(524288, "bytes", "auto"), "512kB");
  CHECK_EQ_STR(label(3 << 20, "bytes", "MB"), "3MB");
  CHECK_EQ_STR(label(-2048, "bytes", "auto"), "-2kB");
  CHECK_EQ_STR(label(10000000, "nanoseconds", "auto"), "10ms");
  CHECK_EQ_STR(label(123456789, "nanoseconds", "ms"), "123.46ms");
  CHECK_EQ_STR(label(2500000000, "nanoseconds", "auto"), "2.50s");
  CHECK_EQ_STR(label(7200000000000, "nanoseconds", "auto"), "2hrs");
  CHECK_EQ_STR(label(1500, "microseconds", "auto"), "1.50ms");
  CHECK_EQ_STR(label(3, "count", "auto"), "3");
  CHECK_EQ_STR(label(0, "bytes", "auto"), "0");
  CHECK_EQ_STR(label(1, "nanoseconds", "s"), "0");
  CHECK_EQ_STR(label(42, "widgets", "auto"), "42");
  CHECK_EQ_STR(label(42, "widgets", "widgets"), "42widgets");
  CHECK_EQ_STR(label(1, "bytes", "seconds"), "1B"); /* another type's unit: the fallback */
  CHECK_EQ_STR(pct(1, 3), "33.33%");
  CHECK_EQ_STR(pct(1, 200), "  0.5%");
  CHECK_EQ_STR(pct(1, 1), "  100%");
  CHECK_EQ_STR(pct(0, 0), "    0%");
  CHECK_EQ_STR(pct(-5, 10), "50.00%");
  CHECK_EQ_STR(pct(1, 100000), "0.001%");
  return check_result("test_measure");
}
