/* The field numbers of profile.proto
 * (github.com/google/pprof/proto/profile.proto), one name each, for the
 * writer (builder.c), the reader (model/decode.c) and bench/cli/gen_profile. */
#ifndef CPROF_PROFILE_FIELDS_H
#define CPROF_PROFILE_FIELDS_H

/* message Profile */
enum {
  PROFILE_SAMPLE_TYPE = 1,         /* repeated ValueType */
  PROFILE_SAMPLE = 2,              /* repeated Sample */
  PROFILE_MAPPING = 3,             /* repeated Mapping */
  PROFILE_LOCATION = 4,            /* repeated Location */
  PROFILE_FUNCTION = 5,            /* repeated Function */
  PROFILE_STRING_TABLE = 6,        /* repeated string */
  PROFILE_DROP_FRAMES = 7,         /* int64 (string index) */
  PROFILE_KEEP_FRAMES = 8,         /* int64 (string index) */
  PROFILE_TIME_NANOS = 9,          /* int64 */
  PROFILE_DURATION_NANOS = 10,     /* int64 */
  PROFILE_PERIOD_TYPE = 11,        /* ValueType */
  PROFILE_PERIOD = 12,             /* int64 */
  PROFILE_COMMENT = 13,            /* repeated int64 (string index) */
  PROFILE_DEFAULT_SAMPLE_TYPE = 14 /* int64 (string index) */
};
/* message ValueType */
enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2 };
/* message Sample */
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
/* message Label */
enum { LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3, LABEL_NUM_UNIT = 4 };
/* message Mapping */
enum {
  MAPPING_ID = 1,
  MAPPING_MEMORY_START = 2,
  MAPPING_MEMORY_LIMIT = 3,
  MAPPING_FILE_OFFSET = 4,
  MAPPING_FILENAME = 5,
  MAPPING_BUILD_ID = 6,
  MAPPING_HAS_FUNCTIONS = 7,
  MAPPING_HAS_FILENAMES = 8,
  MAPPING_HAS_LINE_NUMBERS = 9,
  MAPPING_HAS_INLINE_FRAMES = 10
};
/* message Location */
enum {
  LOCATION_ID = 1,
  LOCATION_MAPPING_ID = 2,
  LOCATION_ADDRESS = 3,
  LOCATION_LINE = 4,
  LOCATION_IS_FOLDED = 5
};
/* message Line */
enum { LINE_FUNCTION_ID = 1, LINE_LINE = 2, LINE_COLUMN = 3 };
/* message Function */
enum {
  FUNCTION_ID = 1,
  FUNCTION_NAME = 2,
  FUNCTION_SYSTEM_NAME = 3,
  FUNCTION_FILENAME = 4,
  FUNCTION_START_LINE = 5
};

#endif
