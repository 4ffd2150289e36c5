// NEEDLE_VNNI512 marks a function in a Highway per-target section (only where
// HWY_TARGET == HWY_AVX3_DL) that uses the 512-bit VNNI instructions
// (vpdpbusd, vpdpwssd): Highway's AVX3_DL target attributes name only the
// VEX-encoded VNNI, so the EVEX forms need avx512vnni added. HWY_TARGET_STR is
// expanded where the macro is used, i.e. for the target being compiled.
#pragma once

#define NEEDLE_VNNI512 __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
