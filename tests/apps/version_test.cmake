# `tessera --version` (ctest cli_version): exit 0, every line with its real value: the version and
# build type this tree was configured with, the commit git reports, and the CPU path that
# TESSERA_ISA=scalar forces.
#   cmake -DTESSERA=bin -DSRC=dir -DVERSION=x.y.z -DBUILD_TYPE=Release -P version_test.cmake
execute_process(COMMAND ${TESSERA} --version OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera --version exited ${rc}:\n${out}")
endif()
string(REPLACE "." "\\." version_re "${VERSION}")
set(re "^tessera ${version_re}\ncommit: +([0-9a-f]+(-dirty)?|unknown)\nbuild: +${BUILD_TYPE}, (GCC|Clang) [0-9]+\\.[0-9]+\\.[0-9]+, C\\+\\+20(, ASan\\+UBSan)?\nbackends: +cpu\nparallel: +(mpi \\(mpirun -np T\\*P tessera [^\n]*\\)|none \\(built without MPI\\))\ncpu kernels: +scalar, avx2, avxvnni, avx512 \\(compiled; chosen at run time\\)\nthis cpu: +(scalar|avx2|avxvnni|avx512) \\(runs scalar[a-z0-9, ]*; AVX-512 VNNI (yes|no); AVX512-BF16 (yes|no); [0-9]+ physical cores\\)\n$")
if(NOT out MATCHES "${re}")
  message(FATAL_ERROR "unexpected tessera --version:\n${out}")
endif()
set(commit "${CMAKE_MATCH_1}")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SRC} rev-parse --short=12 HEAD OUTPUT_VARIABLE head
                  RESULT_VARIABLE git_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(git_rc EQUAL 0 AND NOT commit MATCHES "^${head}(-dirty)?$")
    message(FATAL_ERROR "tessera --version names commit ${commit}, git HEAD is ${head} (rebuild after committing)")
  endif()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env TESSERA_ISA=scalar ${TESSERA} --version OUTPUT_VARIABLE scalar)
if(NOT scalar MATCHES "\nthis cpu: +scalar \\(")
  message(FATAL_ERROR "TESSERA_ISA=scalar tessera --version:\n${scalar}")
endif()
message(STATUS "tessera --version:\n${out}")
