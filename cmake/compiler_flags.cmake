# Warnings for every tessera target; -Werror in CI (TESSERA_WERROR=ON).
add_library(tessera_warnings INTERFACE)
target_compile_options(tessera_warnings INTERFACE -Wall -Wextra -Wpedantic
  $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>
  $<$<CXX_COMPILER_ID:Clang>:-Wshadow -Wno-gnu-zero-variadic-macro-arguments>
  $<$<BOOL:${TESSERA_WERROR}>:-Werror>)

if(TESSERA_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# Per-ISA compile flags for kernel files. The binary targets baseline x86-64;
# these files are only entered after a run-time CPUID check (src/core/cpu_features.h).
set(TESSERA_AVX2_FLAGS -mavx2 -mfma -mf16c -mbmi2)
set(TESSERA_AVX512_FLAGS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx2 -mfma -mf16c -mbmi2)
