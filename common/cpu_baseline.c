#include "common/cpu_baseline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VXFED_CPU_BASELINE
#define VXFED_CPU_BASELINE "native"
#endif

const char* vxfed_cpu_baseline(void) { return VXFED_CPU_BASELINE; }

const char* vxfed_cpu_baseline_missing(void) {
  /* The features each level adds (the x86-64 psABI's levels, as far as the compiler's CPU
   * probe names them). `native` has no portable definition: nothing to check. */
  static const char* const v2[] = {"sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", NULL};
  static const char* const v3[] = {"avx", "avx2", "bmi", "bmi2", "fma", NULL};
  static char missing[128];
  const int level = strcmp(VXFED_CPU_BASELINE, "x86-64-v3") == 0 ? 3 : strcmp(VXFED_CPU_BASELINE, "x86-64-v2") == 0 ? 2 : 0;
  missing[0] = '\0';
  __builtin_cpu_init();
  for (int l = 2; l <= level; ++l)
    for (const char* const* f = l == 2 ? v2 : v3; *f != NULL; ++f) {
      /* __builtin_cpu_supports takes a string literal only: one call per name. */
      int has = 1;
      if (strcmp(*f, "sse3") == 0) has = __builtin_cpu_supports("sse3");
      else if (strcmp(*f, "ssse3") == 0) has = __builtin_cpu_supports("ssse3");
      else if (strcmp(*f, "sse4.1") == 0) has = __builtin_cpu_supports("sse4.1");
      else if (strcmp(*f, "sse4.2") == 0) has = __builtin_cpu_supports("sse4.2");
      else if (strcmp(*f, "popcnt") == 0) has = __builtin_cpu_supports("popcnt");
      else if (strcmp(*f, "avx") == 0) has = __builtin_cpu_supports("avx");
      else if (strcmp(*f, "avx2") == 0) has = __builtin_cpu_supports("avx2");
      else if (strcmp(*f, "bmi") == 0) has = __builtin_cpu_supports("bmi");
      else if (strcmp(*f, "bmi2") == 0) has = __builtin_cpu_supports("bmi2");
      else if (strcmp(*f, "fma") == 0) has = __builtin_cpu_supports("fma");
      if (!has) {
        if (missing[0] != '\0') strncat(missing, " ", sizeof(missing) - strlen(missing) - 1);
        strncat(missing, *f, sizeof(missing) - strlen(missing) - 1);
      }
    }
  return missing[0] == '\0' ? NULL : missing;
}

void vxfed_require_cpu_baseline(const char* program) {
  const char* missing = vxfed_cpu_baseline_missing();
  if (missing == NULL) return;
  fprintf(stderr,
          "%s: this build needs an %s CPU; this one lacks: %s. Rebuild with "
          "`meson configure -Dcpu_baseline=...` for an older CPU (docs/conventions.md, \"CPU baseline\").\n",
          program, VXFED_CPU_BASELINE, missing);
  exit(1);
}
