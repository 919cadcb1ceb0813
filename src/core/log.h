/* One-line messages to stderr, prefixed "cprof: ". Never from a signal
 * handler (it formats with vsnprintf). Each message is one write(2), so
 * lines from several threads do not interleave. */
#ifndef CPROF_CORE_LOG_H
#define CPROF_CORE_LOG_H

void cprof__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
