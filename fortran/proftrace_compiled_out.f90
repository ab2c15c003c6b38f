! The proftrace module of a zero-cost build (PROFTRACE_ENABLED=OFF): the
! same interface as proftrace.f90, every procedure doing nothing, as the C
! API's inline stand-ins do (proftrace_start succeeds, nothing records). It
! calls no C function, so a program links no proftrace code through it:
! each call is one call of an empty procedure (none with -flto).
!
!   use proftrace
!   call proftrace_start("out=traces,table")  ! status 0, nothing written
!   call proftrace_push("solve")
!   call proftrace_pop()
!   call proftrace_stop()
module proftrace
  use, intrinsic :: iso_c_binding, only: c_double
  use, intrinsic :: iso_fortran_env, only: int64
  implicit none
  private
  include 'proftrace_public.inc'

contains

  subroutine proftrace_start(config, status)
    character(len=*), intent(in) :: config
    integer, intent(out), optional :: status
    if (present(status)) status = 0
  end subroutine

  function proftrace_last_error() result(message)
    character(len=:), allocatable :: message
    message = ''
  end function

  subroutine proftrace_stop()
  end subroutine

  subroutine proftrace_step()
  end subroutine

  subroutine proftrace_push(name)
    character(len=*), intent(in) :: name
  end subroutine

  subroutine proftrace_pop()
  end subroutine

  subroutine proftrace_instant(name)
    character(len=*), intent(in) :: name
  end subroutine

  subroutine proftrace_counter(name, value)
    character(len=*), intent(in) :: name
    real(c_double), intent(in) :: value
  end subroutine

  subroutine proftrace_flops(flops)
    integer(int64), intent(in) :: flops
  end subroutine

  subroutine proftrace_matmul(m, n, k)
    integer, intent(in) :: m, n, k
  end subroutine

  logical function proftrace_recording()
    proftrace_recording = .false.
  end function

  subroutine proftrace_arg(key, value)
    character(len=*), intent(in) :: key
    class(*), intent(in) :: value
  end subroutine

end module proftrace
