! A Fortran program of a zero-cost release: the module is there, every call
! compiles and does nothing (proftrace_start succeeds, nothing records, no
! trace is written). Run as `zero_cost DIR`; exit code 0 on success.
program zero_cost
  use proftrace
  use, intrinsic :: iso_fortran_env, only: int64
  implicit none
  character(len=1024) :: dir
  integer :: it, status
  logical :: exists
  call get_command_argument(1, dir)
  call proftrace_start('out=' // trim(dir) // ',format=json,table', status)
  if (status /= 0) error stop 'proftrace_start failed'
  if (proftrace_recording()) error stop 'recording in a zero-cost build'
  if (len(proftrace_last_error()) /= 0) error stop 'an error in a zero-cost build'
  do it = 0, 2
    call proftrace_step()
    call proftrace_push('solve')
    call proftrace_arg('it', it)
    call proftrace_arg('n', 8_int64)
    call proftrace_arg('tolerance', 1.0d-6)
    call proftrace_arg('ratio', 0.5)
    call proftrace_arg('method', 'jacobi')
    call proftrace_matmul(8, 8, 8)
    call proftrace_flops(512_int64)
    call proftrace_counter('residual', 1.0d0 / (it + 1))
    call proftrace_instant('iteration done')
    call proftrace_pop()
  end do
  call proftrace_stop()
  inquire (file=trim(dir), exist=exists)
  if (exists) error stop 'a zero-cost build wrote a trace folder'
  write (*, '(a)') 'zero-cost Fortran program: ran, recorded nothing'
end program
