! macros_sample.F90 without its instrumentation (check_fortran_macros.cmake).
subroutine axpy(n, a, x, y)
  implicit none
  integer, intent(in) :: n
  double precision, intent(in) :: a, x(n)
  double precision, intent(inout) :: y(n)
  integer :: i
  do i = 1, n
    y(i) = y(i) + a * x(i)
  end do
end subroutine
