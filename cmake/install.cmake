# Install rules (included by the top-level CMakeLists.txt): the perfcast CLI, the
# library (static, or shared with -DBUILD_SHARED_LIBS=ON), the public headers, a
# pkg-config file (perfcast.pc) and a CMake package (find_package(perfcast CONFIG)
# -> perfcast::perfcast). tests/scripts/test_install.sh installs into a temporary
# prefix and builds C and C++ programs against both.
include(CMakePackageConfigHelpers)

# The header's version and the project's must agree (pc_version() returns the header's).
file(STRINGS ${PROJECT_SOURCE_DIR}/include/perfcast/perfcast.h PC_HEADER_VERSION
     REGEX "^#define PC_VERSION_STRING ")
if(NOT PC_HEADER_VERSION MATCHES "\"${PROJECT_VERSION}\"")
  message(FATAL_ERROR "perfcast.h says ${PC_HEADER_VERSION}, project() says ${PROJECT_VERSION}")
endif()

set(PC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/perfcast)
if(BUILD_SHARED_LIBS)
  set(PC_LIB_SHARED ON)
  # The installed CLI finds the installed libperfcast.so (RUNPATH $ORIGIN/../lib...).
  set_target_properties(perfcast_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
else()
  set(PC_LIB_SHARED OFF)
endif()

install(TARGETS perfcast EXPORT perfcastTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS perfcast_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/perfcast DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")

# CMake package: perfcastTargets.cmake (perfcast::perfcast), perfcastConfig.cmake
# (finds what a static library still needs at link time), perfcastConfigVersion.cmake.
install(EXPORT perfcastTargets NAMESPACE perfcast:: DESTINATION ${PC_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/perfcastConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/perfcastConfig.cmake
                              INSTALL_DESTINATION ${PC_CMAKE_DIR})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/perfcastConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/perfcastConfig.cmake
              ${PROJECT_BINARY_DIR}/perfcastConfigVersion.cmake
        DESTINATION ${PC_CMAKE_DIR})

# pkg-config: relocatable (paths relative to ${pcfiledir}, so --prefix at install
# time is honoured). Libs.private lists the libraries without a .pc file as -l flags.
function(pc_libs_as_flags out)
  set(flags)
  foreach(lib IN LISTS ARGN)
    if(lib MATCHES "^-")
      list(APPEND flags ${lib})
    elseif(IS_ABSOLUTE "${lib}")
      get_filename_component(dir ${lib} DIRECTORY)
      get_filename_component(name ${lib} NAME_WE)
      string(REGEX REPLACE "^lib" "" name ${name})
      if(NOT dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
        list(APPEND flags -L${dir})
      endif()
      list(APPEND flags -l${name})
    elseif(lib)
      list(APPEND flags -l${lib})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES flags)
  string(JOIN " " flags ${flags})
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()
set(PC_PC_PRIVATE_LIBS ${METIS_LIBRARY} ${OpenMP_C_LIBRARIES})
if(PC_WITH_MPI)
  list(APPEND PC_PC_PRIVATE_LIBS ${MPI_C_LIBRARIES})
endif()
if(MATH_LIB)
  list(APPEND PC_PC_PRIVATE_LIBS m)
endif()
pc_libs_as_flags(PC_PC_LIBS_PRIVATE ${PC_PC_PRIVATE_LIBS})
file(RELATIVE_PATH PC_PC_RELPREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" PC_PC_RELPREFIX "${PC_PC_RELPREFIX}")
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(PC_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(PC_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/perfcast.pc.in ${PROJECT_BINARY_DIR}/perfcast.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/perfcast.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
