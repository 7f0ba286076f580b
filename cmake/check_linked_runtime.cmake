# cmake -DLIBRARY=<shared library> [-DOBJDUMP=<objdump>] [-DCOMPILER=<C++ compiler>] -P check_linked_runtime.cmake
#
# The CMake build's counterpart of setup.py's check_linked_runtime: refuses a library that carries
# its own copy of libstdc++ (no libstdc++.so among its NEEDED entries). One GPU image's compiler, a
# wrapper around the system g++, linked the C++ runtime statically; loaded beside torch's own
# libstdc++, such a copy crashed the process at the first error message that formats a number
# (docs/design/cuda_kernels.md, "On a GPU"). The refused file is deleted, so nothing loads it.
if(NOT LIBRARY OR NOT EXISTS "${LIBRARY}")
  message(FATAL_ERROR "check_linked_runtime: expected -DLIBRARY=<an existing shared library>, got '${LIBRARY}'")
endif()
if(NOT COMPILER)
  set(COMPILER "the C++ compiler")
endif()
if(NOT OBJDUMP)
  find_program(OBJDUMP NAMES objdump)
endif()
if(NOT OBJDUMP)
  message(WARNING "check_linked_runtime: no objdump found, so ${LIBRARY}'s C++ runtime link is not checked")
  return()
endif()
execute_process(COMMAND "${OBJDUMP}" -p "${LIBRARY}" OUTPUT_VARIABLE headers RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "check_linked_runtime: ${OBJDUMP} -p ${LIBRARY} failed (${status})")
endif()
string(REGEX MATCHALL "NEEDED +[^\n]+" needed_lines "${headers}")
set(needed "")
foreach(line IN LISTS needed_lines)
  string(REGEX REPLACE "NEEDED +" "" name "${line}")
  list(APPEND needed "${name}")
endforeach()
if(NOT needed MATCHES "libstdc\\+\\+\\.so")
  file(REMOVE "${LIBRARY}")
  list(JOIN needed ", " needed_text)
  message(FATAL_ERROR "softdtw-torch: ${LIBRARY} was linked without the shared libstdc++ (its dynamic "
    "dependencies: ${needed_text}), so the C++ runtime was linked into it statically by ${COMPILER}. Loaded "
    "beside torch's own libstdc++ it would crash; configure with a compiler that links libstdc++ shared, "
    "e.g. the system's: -DCMAKE_CXX_COMPILER=g++ (the file was removed)")
endif()
