# Tokenizer encoding throughput (Google Benchmark): MB/s over ~1 MB of mixed
# text for the SentencePiece path (llama-spm vocab) and the GPT-2 byte-level
# BPE path (gpt-2 vocab). Vocabularies come from $TESSERA_SHARED_DIR
# (default: ../shared next to the source tree)/testdata/tokenizer.
find_package(benchmark REQUIRED)
add_executable(tokenizer_bench ${CMAKE_CURRENT_LIST_DIR}/tokenizer_bench.cc)
target_link_libraries(tokenizer_bench PRIVATE tessera_tokenizer benchmark::benchmark tessera_warnings)
target_compile_definitions(tokenizer_bench PRIVATE TESSERA_DEFAULT_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
