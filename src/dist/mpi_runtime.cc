#include "dist/mpi_runtime.h"

#include <cstdlib>
#include <memory>
#include <string>

#ifdef TESSERA_HAVE_MPI
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/cpu_share.h"
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

namespace {

// Tells core/cpu_share.h which ranks may run on this rank's CPUs: every rank
// sends its machine's identity and its affinity mask; ranks of the same
// machine whose masks overlap this rank's count as peers, and the union of
// the overlapping masks is the CPUs they share. The machine is the kernel's
// boot id, not the host name: ranks in network namespaces or containers of
// one machine (tests/dist/netns_test.sh's "hosts") are different hosts to MPI
// but share its CPUs. Best effort: on an error the waits keep the policy of a
// process alone on its CPUs.
struct RankCpus {
  char machine[64];  // boot id (or MPI processor name), NUL-padded
  cpu_set_t mask;
};

void note_cpu_sharing(MPI_Comm comm) {
  RankCpus mine;
  std::memset(&mine, 0, sizeof(mine));
  std::string id;
  if (std::ifstream f("/proc/sys/kernel/random/boot_id"); f) std::getline(f, id);
  if (id.empty()) {
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    if (MPI_Get_processor_name(name, &len) == MPI_SUCCESS) id.assign(name, static_cast<size_t>(len));
  }
  std::memcpy(mine.machine, id.data(), std::min(id.size(), sizeof(mine.machine) - 1));
  if (sched_getaffinity(0, sizeof(mine.mask), &mine.mask) != 0) CPU_ZERO(&mine.mask);
  int me = 0;
  int n = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  std::vector<RankCpus> all(static_cast<size_t>(n));  // [ranks]
  const int rc = MPI_Allgather(&mine, static_cast<int>(sizeof(mine)), MPI_BYTE, all.data(),
                               static_cast<int>(sizeof(mine)), MPI_BYTE, comm);
  if (rc != MPI_SUCCESS || CPU_COUNT(&mine.mask) == 0 || id.empty()) return;
  cpu_set_t shared = mine.mask;
  int peers = 0;
  for (int r = 0; r < n; ++r) {
    const RankCpus& other = all[static_cast<size_t>(r)];
    if (r == me || std::memcmp(other.machine, mine.machine, sizeof(mine.machine)) != 0) continue;
    cpu_set_t both;
    CPU_AND(&both, &mine.mask, &other.mask);
    if (CPU_COUNT(&both) == 0) continue;
    ++peers;
    CPU_OR(&shared, &shared, &other.mask);
  }
  set_cpu_sharing(peers, CPU_COUNT(&shared));
}

}  // namespace

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
  note_cpu_sharing(MPI_COMM_WORLD);
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
