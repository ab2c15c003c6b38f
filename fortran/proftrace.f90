! The proftrace module: the C API (<proftrace/proftrace.h>) for Fortran,
! through ISO_C_BINDING. Strings are passed with their length (trailing
! blanks dropped), so no NUL is needed.
!
!   use proftrace
!   call proftrace_start("out=traces,table")
!   do it = 1, n
!     call proftrace_step()
!     call proftrace_push("solve")
!     call proftrace_flops(2_int64 * n**3)
!     ...
!     call proftrace_pop()
!   end do
!   call proftrace_stop()
module proftrace
  use, intrinsic :: iso_c_binding, only: c_char, c_size_t, c_int, c_int64_t, c_double, c_ptr, &
                                         c_f_pointer, c_associated
  use, intrinsic :: iso_fortran_env, only: error_unit, int8, int16, int32, int64, real32, real64
  implicit none
  private
  include 'proftrace_public.inc'

  interface
    function c_start_n(config, length) bind(C, name="proftrace_start_n") result(rc)
      import :: c_char, c_size_t, c_int
      character(kind=c_char), intent(in) :: config(*)
      integer(c_size_t), value :: length
      integer(c_int) :: rc
    end function
    function c_last_error() bind(C, name="proftrace_last_error") result(p)
      import :: c_ptr
      type(c_ptr) :: p
    end function
    subroutine c_stop() bind(C, name="proftrace_stop")
    end subroutine
    subroutine c_step() bind(C, name="proftrace_step")
    end subroutine
    subroutine c_push_n(name, length) bind(C, name="proftrace_push_n")
      import :: c_char, c_size_t
      character(kind=c_char), intent(in) :: name(*)
      integer(c_size_t), value :: length
    end subroutine
    subroutine c_pop() bind(C, name="proftrace_pop")
    end subroutine
    subroutine c_instant_n(name, length) bind(C, name="proftrace_instant_n")
      import :: c_char, c_size_t
      character(kind=c_char), intent(in) :: name(*)
      integer(c_size_t), value :: length
    end subroutine
    subroutine c_counter_n(name, length, value) bind(C, name="proftrace_counter_n")
      import :: c_char, c_size_t, c_double
      character(kind=c_char), intent(in) :: name(*)
      integer(c_size_t), value :: length
      real(c_double), value :: value
    end subroutine
    subroutine c_arg_int_n(key, length, value) bind(C, name="proftrace_arg_int_n")
      import :: c_char, c_size_t, c_int64_t
      character(kind=c_char), intent(in) :: key(*)
      integer(c_size_t), value :: length
      integer(c_int64_t), value :: value
    end subroutine
    subroutine c_arg_double_n(key, length, value) bind(C, name="proftrace_arg_double_n")
      import :: c_char, c_size_t, c_double
      character(kind=c_char), intent(in) :: key(*)
      integer(c_size_t), value :: length
      real(c_double), value :: value
    end subroutine
    subroutine c_arg_string_n(key, key_length, value, value_length) bind(C, name="proftrace_arg_string_n")
      import :: c_char, c_size_t
      character(kind=c_char), intent(in) :: key(*), value(*)
      integer(c_size_t), value :: key_length, value_length
    end subroutine
    subroutine c_flops(flops) bind(C, name="proftrace_flops")
      import :: c_int64_t
      integer(c_int64_t), value :: flops
    end subroutine
    subroutine c_matmul(m, n, k) bind(C, name="proftrace_matmul")
      import :: c_int64_t
      integer(c_int64_t), value :: m, n, k
    end subroutine
    function c_recording() bind(C, name="proftrace_recording") result(r)
      import :: c_int
      integer(c_int) :: r
    end function
    function c_strlen(s) bind(C, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function
  end interface

  ! proftrace_arg(key, value): an integer or real of any kind, a logical (1
  ! or 0) or a character value; another type records the text below.
  character(len=*), parameter :: unsupported = "(a Fortran type proftrace_arg does not record)"

contains

  ! Starts a session from a PROFTRACE_CONFIG-style "key=value,..." string.
  ! status (optional): 0 on success; without it a failure is printed to
  ! standard error and the program goes on unprofiled.
  subroutine proftrace_start(config, status)
    character(len=*), intent(in) :: config
    integer, intent(out), optional :: status
    integer(c_int) :: rc
    rc = c_start_n(config, int(len_trim(config), c_size_t))
    if (present(status)) then
      status = int(rc)
    else if (rc /= 0) then
      write (error_unit, '(a)') proftrace_last_error()  ! it names proftrace_start already
    end if
  end subroutine

  ! The reason the last failed call on this thread failed ("" if none).
  function proftrace_last_error() result(message)
    character(len=:), allocatable :: message
    type(c_ptr) :: p
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    p = c_last_error()
    if (.not. c_associated(p)) then
      message = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(len=n) :: message)
    do i = 1, n
      message(i:i) = chars(i)
    end do
  end function

  subroutine proftrace_stop()
    call c_stop()
  end subroutine

  ! The calling thread's next step begins; its previous one ends.
  subroutine proftrace_step()
    call c_step()
  end subroutine

  ! A scope named `name` (copied) until the matching proftrace_pop.
  subroutine proftrace_push(name)
    character(len=*), intent(in) :: name
    call c_push_n(name, int(len_trim(name), c_size_t))
  end subroutine

  subroutine proftrace_pop()
    call c_pop()
  end subroutine

  subroutine proftrace_instant(name)
    character(len=*), intent(in) :: name
    call c_instant_n(name, int(len_trim(name), c_size_t))
  end subroutine

  subroutine proftrace_counter(name, value)
    character(len=*), intent(in) :: name
    real(c_double), intent(in) :: value
    call c_counter_n(name, int(len_trim(name), c_size_t), value)
  end subroutine

  ! A FLOP count for the innermost open scope.
  subroutine proftrace_flops(flops)
    integer(int64), intent(in) :: flops
    call c_flops(int(flops, c_int64_t))
  end subroutine

  ! 2*m*n*k FLOPs (a matrix product) for the innermost open scope.
  subroutine proftrace_matmul(m, n, k)
    integer, intent(in) :: m, n, k
    call c_matmul(int(m, c_int64_t), int(n, c_int64_t), int(k, c_int64_t))
  end subroutine

  logical function proftrace_recording()
    proftrace_recording = c_recording() /= 0
  end function

  ! One procedure for every kind: Fortran has no generics over kinds, and
  ! a specific procedure per kind would repeat one body five times.
  subroutine proftrace_arg(key, value)
    character(len=*), intent(in) :: key
    class(*), intent(in) :: value
    integer(c_size_t) :: n
    n = int(len_trim(key), c_size_t)
    select type (value)
    type is (integer(int8)); call c_arg_int_n(key, n, int(value, c_int64_t))
    type is (integer(int16)); call c_arg_int_n(key, n, int(value, c_int64_t))
    type is (integer(int32)); call c_arg_int_n(key, n, int(value, c_int64_t))
    type is (integer(int64)); call c_arg_int_n(key, n, int(value, c_int64_t))
    type is (real(real32)); call c_arg_double_n(key, n, real(value, c_double))
    type is (real(real64)); call c_arg_double_n(key, n, real(value, c_double))
    type is (logical); call c_arg_int_n(key, n, merge(1_c_int64_t, 0_c_int64_t, value))
    type is (character(len=*)); call c_arg_string_n(key, n, value, int(len_trim(value), c_size_t))
    class default; call c_arg_string_n(key, n, unsupported, len(unsupported, c_size_t))
    end select
  end subroutine

end module proftrace
