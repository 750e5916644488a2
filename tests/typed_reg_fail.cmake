# Compiles tests/typed_reg_fail.c once per case and checks the outcome: case 0
# (the right kernel types) compiles without a warning; every other case fails,
# and the compiler's message names the operator and the type it expected, so
# a backend author sees what to fix. Run by ctest as
#   cmake -DCOMPILER=cc -DLANG=c|c++ -DSOURCE=typed_reg_fail.c
#         -DINCLUDE_SRC=<repo>/include -DINCLUDE_GEN=<build>/generated -P typed_reg_fail.cmake
if(LANG STREQUAL "c")
  set(flags -x c -std=c11 -pedantic)
else()
  set(flags -x c++ -std=c++11)
endif()

# case number -> a part of the expected message
set(expect_1 "bad_add is not a kernel of aten::add.Tensor: expected disp_aten_add_Tensor_kernel, disp_status(disp_tensor *, disp_tensor *, disp_scalar, disp_tensor **)")
set(expect_2 "mm_kernel is not a kernel of aten::add.Tensor")
set(expect_3 "const_mm is not a kernel of aten::mm: expected disp_aten_mm_kernel, disp_status(disp_tensor *, disp_tensor *, disp_tensor **)")
set(expect_4 "late_ks is not a kernel of aten::mm")
set(expect_5 "returns_result is not a kernel of aten::mm")
set(expect_6 "disp_aten_no_such_op_kernel")

set(failures 0)
foreach(case 0 1 2 3 4 5 6)
  execute_process(
    COMMAND ${COMPILER} ${flags} -Wall -Wextra -Werror -fsyntax-only -DCASE=${case}
            -I${INCLUDE_SRC} -I${INCLUDE_GEN} ${SOURCE}
    RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  set(text "${out}${err}")
  if(case EQUAL 0)
    if(NOT rc EQUAL 0 OR NOT text STREQUAL "")
      message(SEND_ERROR "${LANG} case 0 (right types) did not compile cleanly:\n${text}")
      math(EXPR failures "${failures} + 1")
    else()
      message(STATUS "${LANG} case 0: compiles")
    endif()
  elseif(rc EQUAL 0)
    message(SEND_ERROR "${LANG} case ${case} compiled, but its kernel has the wrong type")
    math(EXPR failures "${failures} + 1")
  else()
    string(FIND "${text}" "${expect_${case}}" at)
    if(at EQUAL -1)
      message(SEND_ERROR "${LANG} case ${case} failed without the expected message\n"
                         "  wanted: ${expect_${case}}\n  got:\n${text}")
      math(EXPR failures "${failures} + 1")
    else()
      message(STATUS "${LANG} case ${case}: refused: ${expect_${case}}")
    endif()
  endif()
endforeach()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} case(s) failed")
endif()
