# `tessera serve --help` groups its flags under headings (ctest cli_serve_help), and every flag
# it lists still parses: all of them at once reach the server's own start-up error (exit 1, a
# bad --host), not a usage error (exit 2).
#   cmake -DTESSERA=bin -DSTORIES=model.gguf -DTEMPLATE=chat.jinja -P serve_help_test.cmake
execute_process(COMMAND ${TESSERA} serve --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera serve --help exited ${rc}:\n${help}")
endif()

# The headings, in this order, each with flags of its own under it.
set(headings "Model" "Engine / KV cache" "Server" "Sampling defaults" "Speculative decoding")
set(pos -1)
foreach(h IN LISTS headings)
  string(FIND "${help}" "\n${h}:\n" at)
  if(at LESS 0)
    message(FATAL_ERROR "no heading '${h}:' in tessera serve --help:\n${help}")
  endif()
  if(NOT at GREATER pos)
    message(FATAL_ERROR "heading '${h}:' out of order in tessera serve --help:\n${help}")
  endif()
  set(pos ${at})
endforeach()
# A flag of each heading: the text between its heading and the next one names it.
function(expect_under heading next flag)
  string(FIND "${help}" "\n${heading}:\n" a)
  if(next STREQUAL "")
    string(LENGTH "${help}" b)
  else()
    string(FIND "${help}" "\n${next}:\n" b)
  endif()
  math(EXPR len "${b} - ${a}")
  string(SUBSTRING "${help}" ${a} ${len} section)
  if(NOT section MATCHES "\n  (-[a-z],)?${flag}[ \n]")
    message(FATAL_ERROR "${flag} is not under '${heading}:' in tessera serve --help:\n${help}")
  endif()
endfunction()
expect_under("Model" "Engine / KV cache" "--model")
expect_under("Model" "Engine / KV cache" "--chat-template")
expect_under("Engine / KV cache" "Server" "--kv-cache-dtype")
expect_under("Engine / KV cache" "Server" "--f16-matmul")
expect_under("Engine / KV cache" "Server" "--max-num-seqs")
expect_under("Server" "Sampling defaults" "--port")
expect_under("Server" "Sampling defaults" "--log-format")
expect_under("Sampling defaults" "Speculative decoding" "--temp")
expect_under("Sampling defaults" "Speculative decoding" "--max-tokens")
expect_under("Speculative decoding" "" "--spec-k")

# A valid value for every flag --help lists (empty: a switch). A flag added to serve without a
# value here fails the test, so that the check keeps covering all of them.
set(values
  "--model=${STORIES}" "--quantize=q8_0" "--chat-template=${TEMPLATE}"
  "--check-tensors=" "--threads=1" "--ctx-size=256" "--kv-cache-memory=1MiB" "--kv-cache-dtype=f16" "--f16-matmul=f16" "--device=cpu"
  "--tensor-parallel-size=1" "--pipeline-parallel-size=1" "--pp-layer-split=5"
  "--max-num-seqs=4" "--max-num-batched-tokens=64" "--no-prefix-cache="
  "--host=not-an-ip" "--port=0" "--served-model-name=stories" "--api-key=k" "--max-queue=8"
  "--max-body-bytes=4096" "--no-webui=" "--log-format=json" "--header-timeout=5" "--idle-timeout=5"
  "--shutdown-timeout=1"
  "--temp=0.5" "--top-p=0.9" "--top-k=40" "--min-p=0.05" "--repetition-penalty=1.1" "--max-tokens=32"
  "--spec=draft" "--draft-model=${STORIES}" "--draft-kv-tokens=4096" "--draft-threads=1"
  "--spec-k=3" "--spec-ngram-min=1" "--spec-ngram-max=3" "--spec-disable-batch-size=2"
  "--no-spec-adaptive=" "--no-spec-cost-aware=")
string(REGEX MATCHALL "\n  (-[a-zA-Z],)?--[a-z0-9-]+" listed "${help}")
set(args)
set(known)
foreach(v IN LISTS values)
  string(REGEX MATCH "^--[a-z0-9-]+" name "${v}")
  list(APPEND known "${name}")
  string(LENGTH "${name}=" n)
  string(SUBSTRING "${v}" ${n} -1 value)
  list(APPEND args "${name}")
  if(NOT value STREQUAL "")
    list(APPEND args "${value}")
  endif()
endforeach()
foreach(l IN LISTS listed)
  string(REGEX MATCH "--[a-z0-9-]+" name "${l}")
  if(name STREQUAL "--help")
    continue()
  endif()
  list(FIND known "${name}" i)
  if(i LESS 0)
    message(FATAL_ERROR "tessera serve --help lists ${name}, which serve_help_test.cmake gives no value")
  endif()
endforeach()
list(LENGTH listed n_listed)
message(STATUS "${n_listed} entries in tessera serve --help")

execute_process(COMMAND ${TESSERA} serve ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "--host: 'not-an-ip' is not an IP address")
  message(FATAL_ERROR "tessera serve with every flag: exit ${rc} (expected 1, the --host error):\n${err}")
endif()
# The short spellings parse too.
execute_process(COMMAND ${TESSERA} serve -m ${STORIES} -t 1 -c 128 -n 8 --host not-an-ip
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "--host: 'not-an-ip' is not an IP address")
  message(FATAL_ERROR "tessera serve -m -t -c -n: exit ${rc} (expected 1, the --host error):\n${err}")
endif()
message(STATUS "every serve flag parses")
