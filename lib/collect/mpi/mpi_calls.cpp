// proftrace::mpi_calls — MPI calls recorded as scopes through MPI's
// profiling interface: each wrapper below replaces the MPI function of the
// same name and calls its PMPI_ twin inside a scope named after the call,
// with the bytes it moves and its peer rank (where it has one) as args.
// Linked in only by programs that ask for it:
//
//   target_link_libraries(app PRIVATE proftrace::proftrace proftrace::mpi_calls)
//
// While no session records, a wrapper costs one relaxed load and a branch.
// Bytes are the count times the datatype's size as posted (a receive's
// buffer, not what arrived); a call without (waits, a barrier) has none.
// A peer is a rank of MPI_COMM_WORLD, whatever communicator the call used
// (the traces' distributedInfo.rank); a blocking receive from MPI_ANY_SOURCE
// gets the rank it received from, and a sendrecv whose source is not its
// destination names it in a "source" arg. Fortran's calls are wrapped in
// fortran_calls.cpp, linked with these (the anchor below names it too).
#include <mpi.h>

#include "collect/component_anchor.hpp"
#include "bridge.hpp"
#include "call_scope.hpp"

PROFTRACE_DEFINE_COMPONENT_ANCHOR();

using namespace proftrace_mpi_wrappers;

// fortran_calls.cpp's object comes with this one: a program that links the
// component gets the Fortran wrappers too.
extern "C" const int proftrace_mpi_fortran_calls;
[[gnu::used]] static const int* const proftrace_fortran_calls_linked = &proftrace_mpi_fortran_calls;

extern "C" {

// Not recorded: they tell a session that started before MPI_Init (from
// PROFTRACE_CONFIG) to align its clock now, and again before MPI ends.
int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) d::on_mpi_initialised();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) d::on_mpi_initialised();
  return rc;
}

int MPI_Finalize() {
  d::on_mpi_finalizing();
  return PMPI_Finalize();
}

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  PROFTRACE_MPI_SITE("MPI_Send");
  const call_scope scope(&site, bytes_of(count, type), dest, comm);
  return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  PROFTRACE_MPI_SITE("MPI_Recv");
  const call_scope scope(&site, bytes_of(count, type), source, comm);
  if (source != MPI_ANY_SOURCE) return PMPI_Recv(buf, count, type, source, tag, comm, status);
  MPI_Status own{};
  MPI_Status* const st = readable_status(status, own);
  const int rc = PMPI_Recv(buf, count, type, source, tag, comm, st);
  if (rc == MPI_SUCCESS) scope.received_from(call_scope::peer_key, st->MPI_SOURCE, comm);
  return rc;
}

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  PROFTRACE_MPI_SITE("MPI_Isend");
  const call_scope scope(&site, bytes_of(count, type), dest, comm);
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  PROFTRACE_MPI_SITE("MPI_Irecv");
  const call_scope scope(&site, bytes_of(count, type), source, comm);
  return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  PROFTRACE_MPI_SITE("MPI_Sendrecv");
  const call_scope scope(&site, bytes_of(sendcount, sendtype) + bytes_of(recvcount, recvtype), dest, comm);
  if (source != MPI_ANY_SOURCE) {
    if (source != dest) scope.received_from(call_scope::source_key, source, comm);
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                         comm, status);
  }
  MPI_Status own{};
  MPI_Status* const st = readable_status(status, own);
  const int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                               recvtag, comm, st);
  if (rc == MPI_SUCCESS && st->MPI_SOURCE != dest) scope.received_from(call_scope::source_key, st->MPI_SOURCE, comm);
  return rc;
}

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  PROFTRACE_MPI_SITE("MPI_Wait");
  const call_scope scope(&site, -1, -1);
  return PMPI_Wait(request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  PROFTRACE_MPI_SITE("MPI_Waitall");
  const call_scope scope(&site, -1, -1);
  return PMPI_Waitall(count, requests, statuses);
}

int MPI_Barrier(MPI_Comm comm) {
  PROFTRACE_MPI_SITE("MPI_Barrier");
  const call_scope scope(&site, -1, -1);
  return PMPI_Barrier(comm);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  PROFTRACE_MPI_SITE("MPI_Bcast");
  const call_scope scope(&site, bytes_of(count, type), root, comm);
  return PMPI_Bcast(buffer, count, type, root, comm);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  PROFTRACE_MPI_SITE("MPI_Reduce");
  const call_scope scope(&site, bytes_of(count, type), root, comm);
  return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  PROFTRACE_MPI_SITE("MPI_Allreduce");
  const call_scope scope(&site, bytes_of(count, type), -1);
  return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  PROFTRACE_MPI_SITE("MPI_Allgather");
  const call_scope scope(&site, bytes_of(sendcount, sendtype), -1);
  return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  PROFTRACE_MPI_SITE("MPI_Alltoall");
  const call_scope scope(&site, bytes_of(sendcount, sendtype), -1);
  return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  PROFTRACE_MPI_SITE("MPI_Gather");
  const call_scope scope(&site, bytes_of(sendcount, sendtype), root, comm);
  return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  PROFTRACE_MPI_SITE("MPI_Scatter");
  const call_scope scope(&site, bytes_of(recvcount, recvtype), root, comm);
  return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

}  // extern "C"
