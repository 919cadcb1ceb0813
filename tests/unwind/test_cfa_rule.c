/* A rule packed in a word (cfa_rule.h) unpacks to what was packed, for
 * every offset that fits, on this build's architecture: on aarch64 the
 * CFA's offset in 24 bits, and where x29 and x30 are saved in 8-byte words;
 * on x86-64 the return address always at CFA - 8. And what does not fit
 * says so, for eh_frame.c to call the rule unsupported. */
#include <stdint.h>

#include "check.h"
#include "unwind/cfa_rule.h"

int main(void) {
  static const int32_t cfas[] = {0, 8, 16, 96, 4096, -16, 65536, 8388607, -8388608};
  static const int32_t offs[] = {0, -8, -16, -24, -96, 8, 4088, -4096, 32760, -32768};
  int packed = 0;
  for (unsigned i = 0; i < sizeof cfas / sizeof *cfas; i++)
    for (unsigned j = 0; j < sizeof offs / sizeof *offs; j++)
      for (unsigned k = 0; k < sizeof offs / sizeof *offs; k++) {
        if (!cprof__rule_fits(cfas[i], offs[j], offs[k]))
          continue;
        for (int ra = CPROF__RA_AT_CFA; ra <= CPROF__RA_IN_LR; ra++) {
          uint64_t r = cprof__rule_pack(CPROF__RULE_FROM_REG, cfas[i], CPROF__RBP_AT_CFA, offs[j],
                                        29, (enum cprof__ra_rule)ra, offs[k]);
          packed++;
          CHECK_EQ_INT(cprof__rule_kind_of(r), CPROF__RULE_FROM_REG);
          CHECK_EQ_INT(cprof__rule_cfa_off(r), cfas[i]);
          CHECK_EQ_INT(cprof__rule_rbp(r), CPROF__RBP_AT_CFA);
          CHECK_EQ_INT(cprof__rule_rbp_off(r), offs[j]);
          CHECK_EQ_INT(cprof__rule_reg(r), 29);
#if defined(__aarch64__)
          CHECK_EQ_INT(cprof__rule_ra(r), ra);
          CHECK_EQ_INT(cprof__rule_ra_off(r), offs[k]);
#else
          CHECK_EQ_INT(cprof__rule_ra(r), CPROF__RA_AT_CFA);
          CHECK_EQ_INT(cprof__rule_ra_off(r), -8);
#endif
        }
      }
  CHECK(packed > 0);
#if defined(__aarch64__)
  CHECK(!cprof__rule_fits(8388608, 0, -8)); /* beyond 24 bits */
  CHECK(!cprof__rule_fits(16, -12, -8));    /* a save slot not 8-aligned */
  CHECK(!cprof__rule_fits(16, 0, 65536));   /* beyond 14 bits of words */
#else
  CHECK(!cprof__rule_fits(16, 0, -16));    /* the return address elsewhere */
  CHECK(!cprof__rule_fits(16, 32768, -8)); /* beyond 16 bits */
#endif
  return check_result("test_cfa_rule");
}
