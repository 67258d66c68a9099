# CPU kernel micro-benchmarks (Google Benchmark): matmul decode GB/s and
# prefill GFLOP/s per weight dtype, plus the read-bandwidth roofline.
find_package(benchmark REQUIRED)
add_executable(kernels_bench ${CMAKE_CURRENT_LIST_DIR}/kernels_bench.cc)
target_link_libraries(kernels_bench PRIVATE tessera_cpu benchmark::benchmark tessera_warnings)
