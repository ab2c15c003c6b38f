! proftrace.fh's macros around a kernel. With PROFTRACE_ENABLED=0 its object
! code must be that of macros_plain.f90, the same kernel uninstrumented
! (check_fortran_macros.cmake); enabled, it compiles against the module.
#include "proftrace.fh"
subroutine axpy(n, a, x, y)
  PROF_F_USE
  implicit none
  integer, intent(in) :: n
  double precision, intent(in) :: a, x(n)
  double precision, intent(inout) :: y(n)
  integer :: i
  PROF_F_PUSH('axpy')
  PROF_F_ARG('n', n)
  PROF_F_FLOPS(int(2 * n, kind=8))
  do i = 1, n
    y(i) = y(i) + a * x(i)
  end do
  PROF_F_COUNTER('last', y(n))
  PROF_F_POP()
end subroutine
