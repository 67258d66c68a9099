# Sampler cost per token (Google Benchmark), single-threaded, for 32k, 128k
# and 152k vocabularies with typical settings.
find_package(benchmark REQUIRED)
add_executable(sampler_bench ${CMAKE_CURRENT_LIST_DIR}/sampler_bench.cc)
target_link_libraries(sampler_bench PRIVATE tessera_sample benchmark::benchmark tessera_warnings)
