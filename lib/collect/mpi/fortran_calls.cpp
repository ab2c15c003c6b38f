// proftrace::mpi_calls for Fortran: the same calls as mpi_calls.cpp, with the
// same names, bytes and peers, made through `mpif.h` and `use mpi`
// (mpi_send_ and its other manglings) or `use mpi_f08` (mpi_send_f08_).
// A Fortran MPI library does not call the C MPI_Send, so the C wrappers never
// see these calls: each wrapper here converts the handles it reads
// (MPI_Type_f2c, MPI_Comm_f2c) and passes its arguments on, untouched, to
// the Fortran profiling entry of the same call (pmpi_send_, pmpi_send_f08_).
// Those are weak references: a C or C++ program links no Fortran MPI library,
// and never calls these wrappers.
#include <cstdio>
#include <cstdlib>

#include "bridge.hpp"
#include "call_scope.hpp"

using namespace proftrace_mpi_wrappers;
using F = MPI_Fint;

// Pulled into every program that links mpi_calls.cpp's object (it names this).
extern "C" const int proftrace_mpi_fortran_calls = 0;

namespace {

// An entry's profiling twin is missing: the program calls MPI from Fortran
// without a Fortran MPI library, which its link cannot have allowed.
[[noreturn]] void no_fortran_mpi(const char* pmpi) {
  std::fprintf(stderr, "proftrace: %s is not in this process: no Fortran MPI library is linked\n", pmpi);
  std::abort();
}

template <class Fn>
Fn* checked(Fn* pmpi, const char* name) {
  if (pmpi == nullptr) no_fortran_mpi(name);
  return pmpi;
}

bool succeeded(const F* ierr) { return ierr == nullptr || *ierr == MPI_SUCCESS; }  // f08's ierror is optional

std::int64_t fbytes(const F* count, const F* type) { return bytes_of(*count, MPI_Type_f2c(*type)); }

MPI_Comm comm_of(const F* comm) { return MPI_Comm_f2c(*comm); }

// The rank a Fortran status says a message came from, or -1 where none is readable.
int source_of(F* status) {
  MPI_Status c{};
  if (status == MPI_F_STATUS_IGNORE || MPI_Status_f2c(status, &c) != MPI_SUCCESS) return -1;
  return c.MPI_SOURCE;
}

using send_fn = void(void*, F*, F*, F*, F*, F*, F*);             // buf, count, type, peer, tag, comm, ierr
using request_fn = void(void*, F*, F*, F*, F*, F*, F*, F*);      // ... comm, request or status, ierr
using sendrecv_fn = void(void*, F*, F*, F*, F*, void*, F*, F*, F*, F*, F*, F*, F*);
using wait_fn = void(F*, F*, F*);                                // request or count, status(es), ierr
using waitall_fn = void(F*, F*, F*, F*);
using barrier_fn = void(F*, F*);
using bcast_fn = void(void*, F*, F*, F*, F*, F*);                // buf, count, type, root, comm, ierr
using reduce_fn = void(void*, void*, F*, F*, F*, F*, F*, F*);    // sbuf, rbuf, count, type, op, root, comm, ierr
using allreduce_fn = void(void*, void*, F*, F*, F*, F*, F*);
using collect_fn = void(void*, F*, F*, void*, F*, F*, F*, F*);   // sbuf, scount, stype, rbuf, rcount, rtype, comm, ierr
using rooted_fn = void(void*, F*, F*, void*, F*, F*, F*, F*, F*);  // ... rtype, root, comm, ierr

void send(const d::site& s, send_fn* pmpi, void* buf, F* count, F* type, F* dest, F* tag, F* comm, F* ierr) {
  const call_scope scope(&s, fbytes(count, type), *dest, comm_of(comm));
  pmpi(buf, count, type, dest, tag, comm, ierr);
}

void nonblocking(const d::site& s, request_fn* pmpi, void* buf, F* count, F* type, F* peer, F* tag, F* comm,
                 F* request, F* ierr) {
  const call_scope scope(&s, fbytes(count, type), *peer, comm_of(comm));
  pmpi(buf, count, type, peer, tag, comm, request, ierr);
}

void recv(const d::site& s, request_fn* pmpi, void* buf, F* count, F* type, F* source, F* tag, F* comm, F* status,
          F* ierr) {
  const MPI_Comm c = comm_of(comm);
  const call_scope scope(&s, fbytes(count, type), *source, c);
  pmpi(buf, count, type, source, tag, comm, status, ierr);
  if (*source == MPI_ANY_SOURCE && succeeded(ierr))
    scope.received_from(call_scope::peer_key, source_of(status), c);
}

void sendrecv(const d::site& s, sendrecv_fn* pmpi, void* sbuf, F* scount, F* stype, F* dest, F* stag, void* rbuf,
              F* rcount, F* rtype, F* source, F* rtag, F* comm, F* status, F* ierr) {
  const MPI_Comm c = comm_of(comm);
  const call_scope scope(&s, fbytes(scount, stype) + fbytes(rcount, rtype), *dest, c);
  pmpi(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status, ierr);
  const int from = *source == MPI_ANY_SOURCE ? source_of(status) : *source;
  if (from >= 0 && from != *dest) scope.received_from(call_scope::source_key, from, c);
}

void wait(const d::site& s, wait_fn* pmpi, F* request, F* status, F* ierr) {
  const call_scope scope(&s, -1, -1);
  pmpi(request, status, ierr);
}

void waitall(const d::site& s, waitall_fn* pmpi, F* count, F* requests, F* statuses, F* ierr) {
  const call_scope scope(&s, -1, -1);
  pmpi(count, requests, statuses, ierr);
}

void barrier(const d::site& s, barrier_fn* pmpi, F* comm, F* ierr) {
  const call_scope scope(&s, -1, -1);
  pmpi(comm, ierr);
}

void bcast(const d::site& s, bcast_fn* pmpi, void* buf, F* count, F* type, F* root, F* comm, F* ierr) {
  const call_scope scope(&s, fbytes(count, type), *root, comm_of(comm));
  pmpi(buf, count, type, root, comm, ierr);
}

void reduce(const d::site& s, reduce_fn* pmpi, void* sbuf, void* rbuf, F* count, F* type, F* op, F* root, F* comm,
            F* ierr) {
  const call_scope scope(&s, fbytes(count, type), *root, comm_of(comm));
  pmpi(sbuf, rbuf, count, type, op, root, comm, ierr);
}

void allreduce(const d::site& s, allreduce_fn* pmpi, void* sbuf, void* rbuf, F* count, F* type, F* op, F* comm,
               F* ierr) {
  const call_scope scope(&s, fbytes(count, type), -1);
  pmpi(sbuf, rbuf, count, type, op, comm, ierr);
}

void collect(const d::site& s, collect_fn* pmpi, void* sbuf, F* scount, F* stype, void* rbuf, F* rcount, F* rtype,
             F* comm, F* ierr) {
  const call_scope scope(&s, fbytes(scount, stype), -1);
  pmpi(sbuf, scount, stype, rbuf, rcount, rtype, comm, ierr);
}

// Gather counts what each rank sends, scatter what each receives, as in C.
template <bool by_receive>
void rooted(const d::site& s, rooted_fn* pmpi, void* sbuf, F* scount, F* stype, void* rbuf, F* rcount, F* rtype,
            F* root, F* comm, F* ierr) {
  const call_scope scope(&s, by_receive ? fbytes(rcount, rtype) : fbytes(scount, stype), *root, comm_of(comm));
  pmpi(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, ierr);
}

using init_fn = void(F*);
using init_thread_fn = void(F*, F*, F*);

void init(const d::site&, init_fn* pmpi, F* ierr) {
  pmpi(ierr);
  if (succeeded(ierr)) d::on_mpi_initialised();
}

void init_thread(const d::site&, init_thread_fn* pmpi, F* required, F* provided, F* ierr) {
  pmpi(required, provided, ierr);
  if (succeeded(ierr)) d::on_mpi_initialised();
}

void finalize(const d::site&, init_fn* pmpi, F* ierr) {
  d::on_mpi_finalizing();
  pmpi(ierr);
}

}  // namespace

// The entries of one call: `lower`_ (gfortran's and most compilers'
// mangling of mpif.h and `use mpi`), its other manglings as aliases, and
// `lower`_f08_ (`use mpi_f08`), each calling `impl` with its own PMPI twin.
#define PROFTRACE_FORTRAN_ENTRIES(lower, upper, type, impl, name, params, ...)          \
  extern "C" type p##lower##_ __attribute__((weak));                                    \
  extern "C" type p##lower##_f08_ __attribute__((weak));                                \
  extern "C" void lower##_ params {                                                     \
    PROFTRACE_MPI_SITE(name);                                                           \
    impl(site, checked(p##lower##_, "p" #lower "_"), __VA_ARGS__);                      \
  }                                                                                     \
  extern "C" void lower##_f08_ params {                                                 \
    PROFTRACE_MPI_SITE(name);                                                           \
    impl(site, checked(p##lower##_f08_, "p" #lower "_f08_"), __VA_ARGS__);              \
  }                                                                                     \
  extern "C" void lower##__ params __attribute__((alias(#lower "_")));                  \
  extern "C" void lower params __attribute__((alias(#lower "_")));                      \
  extern "C" void upper params __attribute__((alias(#lower "_")))

#define PROFTRACE_SEND_PARAMS (void* b, F* n, F* t, F* p, F* g, F* c, F* e)
#define PROFTRACE_REQUEST_PARAMS (void* b, F* n, F* t, F* p, F* g, F* c, F* r, F* e)
#define PROFTRACE_COLLECT_PARAMS (void* sb, F* sn, F* st, void* rb, F* rn, F* rt, F* c, F* e)
#define PROFTRACE_ROOTED_PARAMS (void* sb, F* sn, F* st, void* rb, F* rn, F* rt, F* o, F* c, F* e)

PROFTRACE_FORTRAN_ENTRIES(mpi_send, MPI_SEND, send_fn, send, "MPI_Send", PROFTRACE_SEND_PARAMS, b, n, t, p, g, c, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_recv, MPI_RECV, request_fn, recv, "MPI_Recv", PROFTRACE_REQUEST_PARAMS, b, n, t, p, g,
                          c, r, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_isend, MPI_ISEND, request_fn, nonblocking, "MPI_Isend", PROFTRACE_REQUEST_PARAMS, b, n,
                          t, p, g, c, r, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_irecv, MPI_IRECV, request_fn, nonblocking, "MPI_Irecv", PROFTRACE_REQUEST_PARAMS, b, n,
                          t, p, g, c, r, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_sendrecv, MPI_SENDRECV, sendrecv_fn, sendrecv, "MPI_Sendrecv",
                          (void* sb, F* sn, F* st, F* d, F* sg, void* rb, F* rn, F* rt, F* s, F* rg, F* c, F* u, F* e),
                          sb, sn, st, d, sg, rb, rn, rt, s, rg, c, u, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_wait, MPI_WAIT, wait_fn, wait, "MPI_Wait", (F* r, F* u, F* e), r, u, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_waitall, MPI_WAITALL, waitall_fn, waitall, "MPI_Waitall", (F* n, F* r, F* u, F* e), n,
                          r, u, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_barrier, MPI_BARRIER, barrier_fn, barrier, "MPI_Barrier", (F* c, F* e), c, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_bcast, MPI_BCAST, bcast_fn, bcast, "MPI_Bcast", (void* b, F* n, F* t, F* o, F* c, F* e),
                          b, n, t, o, c, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_reduce, MPI_REDUCE, reduce_fn, reduce, "MPI_Reduce",
                          (void* sb, void* rb, F* n, F* t, F* op, F* o, F* c, F* e), sb, rb, n, t, op, o, c, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_allreduce, MPI_ALLREDUCE, allreduce_fn, allreduce, "MPI_Allreduce",
                          (void* sb, void* rb, F* n, F* t, F* op, F* c, F* e), sb, rb, n, t, op, c, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_allgather, MPI_ALLGATHER, collect_fn, collect, "MPI_Allgather", PROFTRACE_COLLECT_PARAMS,
                          sb, sn, st, rb, rn, rt, c, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_alltoall, MPI_ALLTOALL, collect_fn, collect, "MPI_Alltoall", PROFTRACE_COLLECT_PARAMS,
                          sb, sn, st, rb, rn, rt, c, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_gather, MPI_GATHER, rooted_fn, rooted<false>, "MPI_Gather", PROFTRACE_ROOTED_PARAMS, sb,
                          sn, st, rb, rn, rt, o, c, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_scatter, MPI_SCATTER, rooted_fn, rooted<true>, "MPI_Scatter", PROFTRACE_ROOTED_PARAMS,
                          sb, sn, st, rb, rn, rt, o, c, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_init, MPI_INIT, init_fn, init, "MPI_Init", (F* e), e);
PROFTRACE_FORTRAN_ENTRIES(mpi_init_thread, MPI_INIT_THREAD, init_thread_fn, init_thread, "MPI_Init_thread",
                          (F* r, F* p, F* e), r, p, e);
PROFTRACE_FORTRAN_ENTRIES(mpi_finalize, MPI_FINALIZE, init_fn, finalize, "MPI_Finalize", (F* e), e);
