# cmake --install: headers, libattnrt, libattngen, the tools, and the CMake
# package attngen: find_package(attngen) gives attngen::runtime (the runtime
# alone: load PTX + metadata, launch) and attngen::jit (compiler + runtime).
# The self-contained build installs libattngen (which then carries the
# runtime) and attngen::jit only.
include(CMakePackageConfigHelpers)

set(ATTNGEN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attngen)

if(NOT ATTNGEN_SELF_CONTAINED)
  # The installed tools find attngen's libraries in <prefix>/lib and
  # libMLIR/libLLVM where they were at build time (LLVM's own default,
  # $ORIGIN/../lib alone, finds neither outside the LLVM tree).
  set_target_properties(attngen attngen-opt PROPERTIES
    INSTALL_RPATH "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${LLVM_LIBRARY_DIR}")
  install(TARGETS attngen attngen-opt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(NOT TARGET attngen_jit)
  message(WARNING "no runtime (cuda.h missing): the install holds only the tools")
  return()
endif()

install(DIRECTORY runtime/include/attnrt jit/include/attngen
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(exported attngen_jit)
if(NOT ATTNGEN_SELF_CONTAINED)
  set_target_properties(attnrt PROPERTIES EXPORT_NAME runtime)
  target_include_directories(attnrt INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  list(APPEND exported attnrt)
  # The installed libattngen finds libattnrt beside it and libMLIR/libLLVM
  # where they were at build time.
  set_target_properties(attngen_jit PROPERTIES INSTALL_RPATH "$ORIGIN;${LLVM_LIBRARY_DIR}")
endif()
install(TARGETS ${exported} EXPORT attngenTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT attngenTargets NAMESPACE attngen:: DESTINATION ${ATTNGEN_CMAKE_DIR})

configure_package_config_file(cmake/attngenConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/attngenConfig.cmake
  INSTALL_DESTINATION ${ATTNGEN_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/attngenConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/attngenConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/attngenConfigVersion.cmake
  DESTINATION ${ATTNGEN_CMAKE_DIR})
