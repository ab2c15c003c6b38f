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
  public :: proftrace_start, proftrace_stop, proftrace_step, proftrace_push, proftrace_pop, proftrace_instant, &
            proftrace_counter, proftrace_flops, proftrace_matmul, proftrace_arg, proftrace_recording, &
            proftrace_last_error

  interface proftrace_arg
    module procedure arg_int32, arg_int64, arg_real32, arg_real64, arg_string
  end interface

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

  subroutine arg_int32(key, value)
    character(len=*), intent(in) :: key
    integer, intent(in) :: value
  end subroutine
  subroutine arg_int64(key, value)
    character(len=*), intent(in) :: key
    integer(int64), intent(in) :: value
  end subroutine
  subroutine arg_real32(key, value)
    character(len=*), intent(in) :: key
    real, intent(in) :: value
  end subroutine
  subroutine arg_real64(key, value)
    character(len=*), intent(in) :: key
    real(c_double), intent(in) :: value
  end subroutine
  subroutine arg_string(key, value)
    character(len=*), intent(in) :: key, value
  end subroutine

end module proftrace
