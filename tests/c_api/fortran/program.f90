! The Fortran module as a user takes it: steps, nested scopes, args,
! counters, FLOPs and a bad config. Run as `program DIR`;
! tests/c_api/check_trace.py checks DIR's trace.
program fortran_trace
  use proftrace
  use, intrinsic :: iso_fortran_env, only: int16
  implicit none
  character(len=1024) :: dir
  integer :: it, status
  call get_command_argument(1, dir)
  call proftrace_start('tabel', status)
  if (status == 0 .or. index(proftrace_last_error(), "unknown key 'tabel'") == 0) error stop 'bad key not reported'
  call proftrace_start('out=' // trim(dir) // ',format=json,active=4,repeat=1,flops', status)
  if (status /= 0) then
    write (*, '(a)') proftrace_last_error()
    error stop 1
  end if
  if (.not. proftrace_recording()) error stop 'not recording'
  do it = 0, 4
    call proftrace_step()
    call proftrace_push('solve')
    call proftrace_arg('it', it)
    call proftrace_arg('method', 'jacobi   ')
    call proftrace_arg('tolerance', 1.0d-6)
    call proftrace_arg('relaxation', 0.5)
    call proftrace_arg('sweeps', 3_int16)
    call proftrace_arg('converged', it == 4)
    call proftrace_arg('shift', (1.0, 2.0))
    call proftrace_push('kernel')
    call proftrace_matmul(8, 8, 8)
    call proftrace_pop()
    call proftrace_counter('residual', 1.0d0 / (it + 1))
    call proftrace_instant('iteration done')
    call proftrace_pop()
  end do
  call proftrace_stop()
end program
