! Fortran MPI calls recorded by proftrace::mpi_calls (run under mpirun -np 2
! by tests/c_api/fortran/check_fortran_mpi.py): the same exchange through
! `use mpi` (mpif.h's bindings) and through `use mpi_f08`, each inside a
! push of its own.
subroutine exchange_mpi()
  use mpi
  implicit none
  integer :: rank, size, ierr, total, requests(2), buf(8), got(8), status(MPI_STATUS_SIZE)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  buf = rank
  call MPI_Isend(buf, 8, MPI_INTEGER, mod(rank + 1, size), 1, MPI_COMM_WORLD, requests(1), ierr)
  call MPI_Irecv(got, 8, MPI_INTEGER, mod(rank + size - 1, size), 1, MPI_COMM_WORLD, requests(2), ierr)
  call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) call MPI_Send(buf, 4, MPI_INTEGER, 1, 2, MPI_COMM_WORLD, ierr)
  if (rank == 1) call MPI_Recv(got, 4, MPI_INTEGER, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, status, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
end subroutine

subroutine exchange_f08()
  use mpi_f08
  implicit none
  integer :: rank, size, total, buf(8), got(8)
  type(MPI_Request) :: requests(2)
  type(MPI_Status) :: status
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  buf = rank
  call MPI_Isend(buf, 8, MPI_INTEGER, mod(rank + 1, size), 1, MPI_COMM_WORLD, requests(1))
  call MPI_Irecv(got, 8, MPI_INTEGER, mod(rank + size - 1, size), 1, MPI_COMM_WORLD, requests(2))
  call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE)
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) call MPI_Send(buf, 4, MPI_INTEGER, 1, 2, MPI_COMM_WORLD)
  if (rank == 1) call MPI_Recv(got, 4, MPI_INTEGER, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, status)
  call MPI_Barrier(MPI_COMM_WORLD)
end subroutine

program fortran_mpi
  use mpi
  use proftrace
  implicit none
  character(len=1024) :: dir
  integer :: ierr, status
  call MPI_Init(ierr)
  call get_command_argument(1, dir)
  call proftrace_start('out=' // trim(dir) // ',format=json', status)
  if (status /= 0) error stop 'proftrace_start failed'
  call proftrace_push('f77')
  call exchange_mpi()
  call proftrace_pop()
  call proftrace_push('f08')
  call exchange_f08()
  call proftrace_pop()
  call proftrace_stop()
  call MPI_Finalize(ierr)
end program
