// How busy-waits behave when this process's threads outnumber the CPUs they
// may run on. tessera's waits spin (the thread pool's fork-join barrier, the
// MPI communicator's polls) because a decode step has hundreds of short
// waits and a futex or timer wake-up per wait costs more than the wait. That
// is right while every waiting thread has a CPU of its own. When threads
// share CPUs (`-t` above the cores, or MPI ranks started on the same cores:
// `mpirun --oversubscribe`, `taskset`, or two network-namespace "hosts" that
// Open MPI each binds to core 0), a spinning thread holds the CPU that the
// thread it waits for needs, and every wait lasts a scheduler time slice
// (measured: a tensor-parallel decode step of stories260K on one shared core
// took 48 ms; 0.6 ms with the waits below). Then the waits give the CPU
// away: the thread pool yields and soon sleeps on its condition variable,
// the MPI communicator sleeps between polls (dist/mpi_communicator.h).
//
// Process-wide state, written at start-up (the distributed runtime, each
// ThreadPool's construction) and read by every wait; thread-safe.
#pragma once

namespace tessera {

// CPUs in this process's affinity mask (sched_getaffinity), at least 1.
int affinity_cpu_count();

// Set by the distributed runtime (dist/mpi_runtime.h) once at start: the
// number of other ranks of the job on this machine whose affinity masks
// overlap this process's, and the CPUs of the union of those masks and this
// one. Without it: 0 peers, affinity_cpu_count() CPUs.
void set_cpu_sharing(int peer_ranks, int cpus);

// A ThreadPool of `threads` threads (calling thread included) exists from
// add_pool_threads(threads) until remove_pool_threads(threads).
void add_pool_threads(int threads);
void remove_pool_threads(int threads);

// Whether threads outnumber CPUs: (largest live pool, at least 1) × (1 +
// peer ranks) > CPUs, every rank of the job assumed to run the pool size this
// one does (workers take rank 0's thread count). TESSERA_CPU_SHARING=1 / 0
// forces the answer (for measurement); any other value is ignored.
bool cpus_oversubscribed();

}  // namespace tessera
