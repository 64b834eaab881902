/* The CPU baseline the binaries were built for (meson option cpu_baseline, passed as
 * VXFED_CPU_BASELINE), checked at the start of every program: a CPU without it gets a message
 * naming what it lacks instead of an illegal instruction somewhere later. C, and compiled for
 * plain x86-64 (common/meson.build), so the check itself runs on any x86-64 CPU. */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

/* NULL when this CPU has every feature of the baseline; else the missing ones, space-separated. */
const char* vxfed_cpu_baseline_missing(void);
/* The baseline's name ("x86-64-v2", "x86-64-v3", "native"). */
const char* vxfed_cpu_baseline(void);
/* Exits with status 1 and a message on stderr (naming `program`) when a feature is missing. */
void vxfed_require_cpu_baseline(const char* program);

#ifdef __cplusplus
}
#endif
