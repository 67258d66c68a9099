#include "dist/mpi_runtime.h"

#include <cstdlib>
#include <memory>
#include <string>

#ifdef TESSERA_HAVE_MPI
#include <mpi.h>

#include "dist/mpi_communicator.h"
#endif

namespace tessera::dist {

namespace {

struct Runtime {
  bool tried = false;
  Status init_status;
  bool finalized = false;
  std::unique_ptr<Communicator> world;
  void (*hook)() = nullptr;
};

Runtime& runtime() {
  static Runtime* r = new Runtime();  // never destroyed: finalize() may run from atexit
  return *r;
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? 0 : std::atoi(v);
}

}  // namespace

int launched_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    if (const int n = env_int(name); n > 0) return n;
  }
  return 1;
}

int launched_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return env_int(name);
  }
  return 0;
}

#ifdef TESSERA_HAVE_MPI

bool built_with_mpi() {
  return true;
}

Status init() {
  Runtime& r = runtime();
  if (r.tried) return r.init_status;
  r.tried = true;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    r.init_status = internal_error("MPI_Init_thread failed");
    return r.init_status;
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    r.init_status = internal_error("the MPI library does not provide MPI_THREAD_SERIALIZED");
    return r.init_status;
  }
  r.world = make_mpi_world_communicator();
  std::atexit(finalize);
  return {};
}

void abort_all(int code) {
  if (initialized()) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void finalize() {
  Runtime& r = runtime();
  if (!r.tried || !r.init_status.ok() || r.finalized) return;
  r.finalized = true;
  if (r.hook != nullptr) r.hook();
  r.world.reset();
  MPI_Finalize();
}

#else

bool built_with_mpi() {
  return false;
}

Status init() {
  return unimplemented(
      "this tessera was built without MPI (install libopenmpi-dev and rebuild for --tensor-parallel-size / "
      "--pipeline-parallel-size)");
}

void finalize() {}

void abort_all(int code) {
  std::_Exit(code);
}

#endif

bool initialized() {
  const Runtime& r = runtime();
  return r.tried && r.init_status.ok() && !r.finalized;
}

Communicator& world() {
  return *runtime().world;
}

void set_finalize_hook(void (*fn)()) {
  runtime().hook = fn;
}

}  // namespace tessera::dist
