# Sourced by the shell tests (tests/server, tests/dist): `stories_model DEFAULT_PATH` sets MODEL to
# $TESSERA_SHARED_DIR/models/stories260K.gguf when that variable is set, else
# to DEFAULT_PATH; when the file is missing it exits 77 (ctest: skipped) with
# TESSERA_SKIP_MISSING_DATA=1, else 1, saying where to put the data.
stories_model() {
  MODEL=$1
  if [ -n "${TESSERA_SHARED_DIR:-}" ]; then MODEL=$TESSERA_SHARED_DIR/models/stories260K.gguf; fi
  if [ ! -f "$MODEL" ]; then
    if [ "${TESSERA_SKIP_MISSING_DATA:-}" = 1 ]; then echo "skipped: test data not found: $MODEL"; exit 77; fi
    echo "test data not found: $MODEL" >&2
    echo "Put the project's shared data folder at ../shared next to the repository, or set TESSERA_SHARED_DIR to it" \
         "(TESSERA_SKIP_MISSING_DATA=1 skips these tests instead)." >&2
    exit 1
  fi
}
