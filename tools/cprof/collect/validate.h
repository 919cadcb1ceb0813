/* What a scraped profile must be for the collector to keep it: decodable
 * (cprof__pf_decode: a valid profile.proto, every ID resolved, as many
 * values per sample as sample types) and what Parca's ingest accepts on
 * top (parcacol.ValidatePprofProfile, and a time): a nonzero time_nanos,
 * mapping, location and function IDs 1..n in the file's order, sample
 * types when there are samples, no sample without a location, no label
 * with an empty key. A target that answers anything else is down, with
 * this reason kept. */
#ifndef CPROF_COLLECT_VALIDATE_H
#define CPROF_COLLECT_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* 0, or -EINVAL with one line in err saying what is wrong and where. */
int collect_validate(const cprof__pf_t *p, char *err, size_t errlen);

/* What the collector keeps of a profile's size, and draws as a line over
 * time: its total of the default sample type, as pprof's reports total it
 * (cprof__pf_total: CPU time, heap in use, threads...). */
int64_t collect_total(const cprof__pf_t *p);

/* Decodes data[0..n) and validates it: 0 with *out (free it with
 * cprof__pf_free), -EINVAL with one line in err, or -ENOMEM. */
int collect_decode_valid(const void *data, size_t n, cprof__pf_t **out, char *err, size_t errlen);

#endif
