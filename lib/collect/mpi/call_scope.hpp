// Internal: what the MPI call wrappers share (lib/collect/mpi/mpi_calls.cpp for
// C and C++, lib/collect/mpi/fortran_calls.cpp for Fortran): the scope around one
// call, its bytes and its peer as a rank of MPI_COMM_WORLD.
#pragma once

#include <mpi.h>

#include "proftrace/detail/recorder.hpp"

namespace proftrace_mpi_wrappers {

namespace d = proftrace::detail;


inline std::int64_t bytes_of(int count, MPI_Datatype type) {
  int size = 0;
  if (count <= 0 || PMPI_Type_size(type, &size) != MPI_SUCCESS) return 0;
  return static_cast<std::int64_t>(count) * size;
}

// `rank` of `comm` (of its remote group, for an intercommunicator) as a
// rank of MPI_COMM_WORLD; -1 for none (MPI_ANY_SOURCE, MPI_PROC_NULL) or
// one outside it.
inline int world_rank_of(int rank, MPI_Comm comm) noexcept {
  if (rank < 0) return -1;
  if (comm == MPI_COMM_WORLD) return rank;
  int inter = 0;
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS ||
      (inter ? PMPI_Comm_remote_group(comm, &group) : PMPI_Comm_group(comm, &group)) != MPI_SUCCESS)
    return -1;
  int out = MPI_UNDEFINED;
  if (PMPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS) {
    if (PMPI_Group_translate_ranks(group, 1, &rank, world, &out) != MPI_SUCCESS) out = MPI_UNDEFINED;
    PMPI_Group_free(&world);
  }
  PMPI_Group_free(&group);
  return out == MPI_UNDEFINED ? -1 : out;
}

// Where a receive's status goes when proftrace needs its source: the
// caller's, or `own` where the caller passed MPI_STATUS_IGNORE.
inline MPI_Status* readable_status(MPI_Status* status, MPI_Status& own) noexcept {
  return status == MPI_STATUS_IGNORE ? &own : status;
}

// A recorded scope around one call (also an NVTX range and a CUDA
// correlation where the session has them, as for PROF_SCOPE). `peer` is a
// rank of `comm`.
class call_scope {
 public:
  call_scope(const d::site* s, std::int64_t bytes, int peer, MPI_Comm comm = MPI_COMM_WORLD) noexcept {
    const std::uint32_t state = d::session_state.load(std::memory_order_relaxed);
    if (PROFTRACE_LIKELY(!(state & d::state_recording))) return;
    site_ = s;
    gpu_.open(state, [s] { d::push_nvtx_range(s); });
    begin_ = d::record_comm_begin(s, bytes, world_rank_of(peer, comm), gpu_.correlation);
  }
  ~call_scope() {
    if (!site_) return;
    d::record_end(site_, begin_);
    gpu_.close();
  }
  // A rank the call received from (a rank of `comm`) as its `key` arg: a
  // receive from MPI_ANY_SOURCE's "peer", known once it returned, or a
  // sendrecv's "source" (its "peer" is where it sends).
  void received_from(const d::site& key, int rank, MPI_Comm comm) const noexcept {
    if (!site_) return;
    if (const int peer = world_rank_of(rank, comm); peer >= 0) d::record_arg_integer(&key, peer);
  }
  static constexpr d::site peer_key{"peer", "", __FILE__, __LINE__, d::category::user_annotation};
  static constexpr d::site source_key{"source", "", __FILE__, __LINE__, d::category::user_annotation};
  call_scope(const call_scope&) = delete;
  call_scope& operator=(const call_scope&) = delete;

 private:
  const d::site* site_ = nullptr;
  std::uint64_t begin_ = d::no_begin;
  d::gpu_marks gpu_;
};

#define PROFTRACE_MPI_SITE(name) \
  static constexpr d::site site{name, name, __FILE__, __LINE__, d::category::cpu_op}

}  // namespace proftrace_mpi_wrappers
