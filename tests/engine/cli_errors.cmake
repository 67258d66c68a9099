# Each bad invocation must exit with the expected code and print exactly one
# line on stderr. Run by ctest: cmake -DTESSERA=... -DSTORIES=... -P cli_errors.cmake
function(expect_error code)
  execute_process(COMMAND ${TESSERA} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(STRIP "${err}" err_stripped)
  string(REGEX MATCHALL "\n" newlines "${err_stripped}")
  list(LENGTH newlines n_newlines)
  if(NOT rc EQUAL ${code})
    message(FATAL_ERROR "'${ARGN}': exit code ${rc}, expected ${code}; stderr: ${err}")
  endif()
  if(NOT n_newlines EQUAL 0 OR err_stripped STREQUAL "")
    message(FATAL_ERROR "'${ARGN}': expected one line on stderr, got: ${err}")
  endif()
  message(STATUS "ok (${rc}): ${err_stripped}")
  set(last_error "${err_stripped}" PARENT_SCOPE)
endfunction()

# expect_error, then the line must match `regex`.
function(expect_error_matching code regex)
  expect_error(${code} ${ARGN})
  if(NOT last_error MATCHES "${regex}")
    message(FATAL_ERROR "'${ARGN}': stderr '${last_error}' does not match '${regex}'")
  endif()
endfunction()

expect_error(2 run -m ${STORIES} -p hi --no-such-flag)
expect_error(2 run -m ${STORIES} -p hi --temp abc)
expect_error(2 run -m ${STORIES} -p hi --top-p 0)
expect_error(2 run -m ${STORIES} -p hi --threads 0)
# A context must hold a prompt token and a generated one: a usage error, like the other ranges.
expect_error_matching(2 "--ctx-size: Value 1 not in range 2 to" run -m ${STORIES} -p hi -c 1)
expect_error_matching(2 "--f16-matmul" run -m ${STORIES} -p hi --f16-matmul bf16)
expect_error(2 run -m ${STORIES})
expect_error_matching(2 "^tessera: error: unknown command 'frobnicate' \\(commands: bench, bench-serve, " frobnicate)
# A directory without config.json: says what a model directory must hold.
set(EMPTY_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_errors_empty_dir)
file(MAKE_DIRECTORY ${EMPTY_DIR})
expect_error_matching(1 "has no config.json \\(give a .gguf file, or a folder with config.json" run -m ${EMPTY_DIR} -p hi)
# Speculative decoding flags: usage errors, one line each.
expect_error_matching(2 "--spec-k" run -m ${STORIES} -p hi --spec ngram --spec-k 0)
expect_error_matching(2 "--spec-ngram-min/--spec-ngram-max must satisfy 1 <= min <= max"
                      run -m ${STORIES} -p hi --spec ngram --spec-ngram-min 3 --spec-ngram-max 2)
expect_error(2 run -m ${STORIES} -p hi --spec medusa)
expect_error(2 serve -m ${STORIES} --spec ngram --spec-disable-batch-size 0)
expect_error(2 bench -m ${STORIES} --spec ngram --spec-k 40)
# The tuning flags without a proposer would be ignored: a usage error instead.
expect_error_matching(2 "--spec-k: needs --spec or --draft-model" run -m ${STORIES} -p hi --spec-k 2)
expect_error_matching(2 "--no-spec-cost-aware: needs --spec or --draft-model" serve -m ${STORIES} --no-spec-cost-aware)
# The draft-model proposer: its usage errors exit 2, a missing or unusable draft file 1.
get_filename_component(SHARED_MODELS ${STORIES} DIRECTORY)
expect_error_matching(2 "--spec-k" run -m ${STORIES} -p hi --draft-model ${STORIES} --spec-k 0)
expect_error_matching(2 "--spec draft needs --draft-model" run -m ${STORIES} -p hi --spec draft)
expect_error_matching(2 "cannot be combined with --spec ngram" run -m ${STORIES} -p hi --spec ngram --draft-model ${STORIES})
expect_error_matching(1 "--draft-model: .*nonexistent" run -m ${STORIES} -p hi --draft-model /nonexistent-draft.gguf)
expect_error_matching(2 "--draft-threads and --draft-kv-tokens need --draft-model" run -m ${STORIES} -p hi --draft-threads 1)
expect_error_matching(2 "--draft-threads and --draft-kv-tokens need --draft-model" run -m ${STORIES} -p hi --spec ngram --draft-kv-tokens 64)
# A draft cache that cannot hold one whole sequence (context 128 + k 4) would stop drafting silently.
expect_error_matching(1 "--draft-kv-tokens 100 cannot hold one sequence: it needs at least the context \\(128 tokens\\) plus --spec-k \\(4\\)"
                      run -m ${STORIES} -p hi -c 128 --draft-model ${STORIES} --draft-kv-tokens 100)
# Another vocabulary: the HF fixture has 512 tokens too but no tokenizer to compare; the "tiny"
# random-weight model has 512 tokens of other texts.
expect_error_matching(1 "cannot be compared: .* has no tokenizer"
                      run -m ${STORIES} -p hi --draft-model ${SHARED_MODELS}/../fixtures/hf/llama_gqa)
set(OTHER_VOCAB ${CMAKE_CURRENT_BINARY_DIR}/cli_errors_other_vocab.gguf)
execute_process(COMMAND ${TESSERA} random-model --shape tiny --dtype f32 -o ${OTHER_VOCAB} RESULT_VARIABLE rm_rc
                OUTPUT_QUIET ERROR_QUIET)
if(rm_rc EQUAL 0)
  expect_error_matching(1 "has another vocabulary than the target .*: token [0-9]+ is "
                        run -m ${STORIES} -p hi --draft-model ${OTHER_VOCAB})
  file(REMOVE ${OTHER_VOCAB})
else()
  message(FATAL_ERROR "tessera random-model failed (${rm_rc})")
endif()
expect_error(1 run -m /nonexistent.gguf -p hi)
expect_error(1 run -m ${CMAKE_CURRENT_LIST_FILE} -p hi)
expect_error(1 run -m ${STORIES} -p "Once upon a time there was a dog" --ctx-size 4)
expect_error(1 run -m ${STORIES} --prompt-ids 1,99999)
# -n past the context is named in the command line's terms.
expect_error_matching(1 "plus -n 600 exceeds the context length 64 \\(lower -n or raise --ctx-size or --kv-cache-memory\\)"
                      run -m ${STORIES} -p "Once upon a time" -n 600 --ctx-size 64)
# With --kv-cache-memory the context is the cache's capacity (f16: 640 bytes per token, 20 KiB = 32 tokens).
expect_error_matching(1 "plus -n 40 exceeds the context length 32"
                      run -m ${STORIES} -p "Once upon a time" -n 40 --kv-cache-memory 20KiB --kv-cache-dtype f16)
expect_error(1 run -m ${STORIES} --prompt-ids 1,x)
# A --kv-cache-memory that does not parse is a usage error, for bench (which ignores the budget) too;
# one too small for the model is found at load.
expect_error_matching(2 "--kv-cache-memory: invalid size unit in '12XB'" run -m ${STORIES} -p hi --kv-cache-memory 12XB)
expect_error_matching(2 "--kv-cache-memory: must be positive" run -m ${STORIES} -p hi --kv-cache-memory 0)
expect_error(2 bench -m ${STORIES} --kv-cache-memory bogus)
expect_error_matching(1 "smaller than one KV block" run -m ${STORIES} -p hi --kv-cache-memory 1KiB)
# A prompt that fills the context says why it does not fit (it does with -n 0: nothing is generated).
expect_error_matching(1 "the prompt has 5 tokens but the context holds 5, which must leave room for a generated token"
                      run -m ${STORIES} -p "Once upon a time" -c 5)
expect_error_matching(1 "the prompt has 6 tokens but the context holds 5"
                      run -m ${STORIES} -p "Once upon a time there" -c 5 -n 0)
expect_error(1 inspect /nonexistent.gguf)

# tessera bench-serving: --concurrency is checked before the model loads, a usage error.
expect_error_matching(2 "--concurrency: 'abc' is not a number" bench-serving -m ${STORIES} --concurrency 1,abc)
expect_error_matching(2 "--concurrency: '4x' is not a number" bench-serving -m ${STORIES} --concurrency 4x)
expect_error_matching(2 "--concurrency values must be >= 1" bench-serving -m ${STORIES} --concurrency 0)
# A KV budget too small for the prefix test is reported as that test's (the levels before it fitted).
expect_error_matching(1 "^tessera: error: the --prefix-tokens 1000 TTFT test: the prompt has 1008 tokens"
                      bench-serving -m ${STORIES} -t 1 --concurrency 1 -n 4 -p 4 --kv-cache-memory 64KiB
                      --prefix-tokens 1000)
# tessera bench-serve / bench serve: the dataset is read (and rejected) before any server is contacted.
set(BAD_DATASET ${CMAKE_CURRENT_BINARY_DIR}/cli_errors_bad_dataset.jsonl)
file(WRITE ${BAD_DATASET} "{\"prompt\": \"fine\"}\n{\"prompt\": 3}\n")
expect_error(1 bench-serve --url http://127.0.0.1:9 --dataset /nonexistent.jsonl)
expect_error(1 bench serve --url http://127.0.0.1:9 --dataset ${BAD_DATASET})
expect_error(2 bench serve --url http://127.0.0.1:9 --dataset ${BAD_DATASET} --input-len 4)
file(REMOVE ${BAD_DATASET})

# A misspelt TESSERA_ISA is refused, not ignored.
set(TESSERA_REAL ${TESSERA})
set(TESSERA ${CMAKE_COMMAND} -E env TESSERA_ISA=avx9 ${TESSERA_REAL})
expect_error_matching(2 "TESSERA_ISA=avx9: expected scalar, avx2, avxvnni or avx512" run -m ${STORIES} -p hi)
# --version reports the path TESSERA_ISA picks, so it refuses a misspelt one too.
expect_error_matching(2 "TESSERA_ISA=avx9: expected scalar, avx2, avxvnni or avx512" --version)
set(TESSERA ${CMAKE_COMMAND} -E env TESSERA_DECODE_STREAMS=abc ${TESSERA_REAL})
expect_error_matching(2 "TESSERA_DECODE_STREAMS=abc: expected 1, 2, 3 or 4" run -m ${STORIES} -p hi)
set(TESSERA ${CMAKE_COMMAND} -E env TESSERA_TILED_GEMM=off ${TESSERA_REAL})
expect_error_matching(2 "TESSERA_TILED_GEMM=off: expected 0 or 1" run -m ${STORIES} -p hi)
set(TESSERA ${TESSERA_REAL})
# Parallel layout flags: usage errors, one line from rank 0 (here: the only process).
expect_error_matching(2 "--pp-layer-split gives 2 stages' layers; --pipeline-parallel-size is 1"
                      run -m ${STORIES} -p hi --pp-layer-split 4,1)
expect_error_matching(2 "start it with mpirun -np 2" run -m ${STORIES} -p hi --tensor-parallel-size 2)
expect_error_matching(2 "--pp-layer-split: every stage needs at least 1 layer" inspect ${STORIES} --pipeline-parallel-size 2 --pp-layer-split 5,0)
expect_error_matching(2 "--pp-layer-split gives 1 stages' layers" inspect ${STORIES} --pipeline-parallel-size 2 --pp-layer-split 5)
# quantize and perplexity name a missing output directory / logits file before any work.
expect_error_matching(1 "cannot create: no directory /nonexistent-dir" quantize ${STORIES} /nonexistent-dir/out.gguf q8_0)
expect_error_matching(1 "cannot open the --kl-base logits file"
                      perplexity -m ${STORIES} -f ${STORIES} --ctx 64 --kl-base /nonexistent.logits)
# quantize never overwrites its own input: the file is refused and left as it was.
set(same ${CMAKE_CURRENT_BINARY_DIR}/cli_errors_quantize_same.gguf)
file(COPY_FILE ${STORIES} ${same})
file(SHA256 ${same} before)
expect_error_matching(1 "is the input file" quantize ${same} ${same} q8_0)
file(SHA256 ${same} after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "quantize IN IN changed its input")
endif()
file(REMOVE ${same})
# Nor a file of a Hugging Face input directory (its safetensors), with quantize or convert; the
# check runs before the directory is read, so any file stands in for the checkpoint here.
set(hf_dir ${CMAKE_CURRENT_BINARY_DIR}/cli_errors_hf_dir)
file(MAKE_DIRECTORY ${hf_dir})
file(COPY_FILE ${STORIES} ${hf_dir}/model.safetensors)
file(SHA256 ${hf_dir}/model.safetensors before)
expect_error_matching(1 "is a file of the input directory" quantize ${hf_dir} ${hf_dir}/model.safetensors q8_0)
expect_error_matching(1 "is a file of the input directory" convert ${hf_dir} ${hf_dir}/model.safetensors)
file(SHA256 ${hf_dir}/model.safetensors after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "quantize / convert into the input directory changed its checkpoint")
endif()
file(REMOVE_RECURSE ${hf_dir})
# An output that is a directory, or in a missing directory: refused before any work (an empty
# path, which CMake cannot pass, is PublicApi.ModelFileTools').
expect_error_matching(1 "is a directory: name a file" quantize ${STORIES} ${EMPTY_DIR} q8_0)
expect_error_matching(1 "cannot create: no directory /nonexistent-dir"
                      random-model --shape tiny --dtype q8_0 -o /nonexistent-dir/x.gguf)
# Type names are case-insensitive, as llama-quantize's are (Q3_K_M).
set(upper ${CMAKE_CURRENT_BINARY_DIR}/cli_errors_upper.gguf)
execute_process(COMMAND ${TESSERA} quantize ${STORIES} ${upper} Q3_K_M -t 1 RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "wrote [^ ]+ [(]q3_k_m, ")
  message(FATAL_ERROR "quantize ... Q3_K_M: exit code ${rc}; stderr: ${err}")
endif()
file(REMOVE ${upper})

# The default -n (128) shortens to what fits the context after the prompt
# (5 tokens in 16: 11 generated, finish "length"), as a server request's
# default max_tokens does; an explicit -n that does not fit is refused above.
execute_process(COMMAND ${TESSERA} run -m ${STORIES} -p "Once upon a time" -c 16 --temp 0 --json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "run with the default -n in a 16-token context: exit code ${rc}; stderr: ${err}")
endif()
string(JSON generated GET "${out}" metrics generated_tokens)
string(JSON finish GET "${out}" finish_reason)
if(NOT generated EQUAL 11 OR NOT finish STREQUAL "length")
  message(FATAL_ERROR "run with the default -n in a 16-token context: ${generated} tokens (${finish}), expected 11 (length)")
endif()
message(STATUS "ok: the default -n shortened to ${generated} tokens")

# --seed -1 asks for a random seed (llama.cpp's convention), not the seed 2^64 - 1.
execute_process(COMMAND ${TESSERA} run -m ${STORIES} -p "Once" -n 2 --seed -1
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "; seed [0-9]+\n" OR err MATCHES "seed 18446744073709551615")
  message(FATAL_ERROR "run --seed -1: exit code ${rc}, stderr: ${err}")
endif()
message(STATUS "ok: --seed -1 drew a random seed")

# A context longer than the model's trained one (stories260K: 2048) gets one warning line; the run goes on.
execute_process(COMMAND ${TESSERA} run -m ${STORIES} -p "Once" -n 2 --temp 0 -c 4096
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "warning: the context \\(4096 tokens\\) is longer than the model's trained context \\(2048\\)")
  message(FATAL_ERROR "run -c 4096: exit code ${rc}, stderr: ${err}")
endif()
execute_process(COMMAND ${TESSERA} run -m ${STORIES} -p "Once" -n 2 --temp 0 -c 2048
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR err MATCHES "warning")
  message(FATAL_ERROR "run -c 2048: exit code ${rc}, stderr: ${err}")
endif()
message(STATUS "ok: the context past the trained one is warned about, once")
