# Generate the ros-env layout Rust crate of an interface package at build time.
#
# Installed as the package rosidl_generator_ros_env, it runs by itself inside
# rosidl_generate_interfaces() for every interface package built with the overlay
# sourced (see cmake/). Otherwise, in the CMakeLists.txt of an interface package, AFTER
# rosidl_generate_interfaces():
#
#   rosidl_generate_interfaces(${PROJECT_NAME}
#     "msg/Foo.msg" "srv/Bar.srv" "action/Baz.action"
#     DEPENDENCIES builtin_interfaces)
#   include("<repo>/tools/rosidl_rust/rosidl_rust.cmake")
#   rosidl_rust_generate()
#
# This adds a target ${PROJECT_NAME}__rust (built by default) that runs
# tools/rosidl_rust/generate.py over the package's .idl files (the ones
# rosidl_adapter made from .msg/.srv/.action, plus any .idl given directly)
# and installs the crate to share/${PROJECT_NAME}/rust, where ros-env finds it.
# The crate is regenerated whenever an .idl file, package.xml or the generator
# changes; editing a .msg file makes CMake re-run rosidl_adapter at configure
# time, which refreshes the .idl and so the crate.
#
# rosidl_rust_generate(
#   [PACKAGE <name>]            default: ${PROJECT_NAME}
#   [IDL_TUPLES <base:rel> ...] default: ${rosidl_generate_interfaces_IDL_TUPLES},
#                               which rosidl_generate_interfaces() (a macro)
#                               leaves in the calling scope
#   [PACKAGE_XML <file>]        default: ${CMAKE_CURRENT_SOURCE_DIR}/package.xml
#   [OUTPUT_DIR <dir>]          default: ${CMAKE_CURRENT_BINARY_DIR}/rosidl_rust/<name>
#   [DEPENDS <file> ...]        extra files whose change regenerates the crate
#   [SKIP_INSTALL])
#
# The generator needs a Python that can import rosidl_parser. It uses
# ROSIDL_RUST_PYTHON_EXECUTABLE if set, else the Python3_EXECUTABLE that
# rosidl itself found.

# Where generate.py is: beside this file in the source tree, in share/<pkg>/generator
# once installed (the package's extras set ROSIDL_RUST_GENERATOR_DIR).
if(ROSIDL_RUST_GENERATOR_DIR)
  set(_ROSIDL_RUST_DIR "${ROSIDL_RUST_GENERATOR_DIR}")
else()
  set(_ROSIDL_RUST_DIR "${CMAKE_CURRENT_LIST_DIR}")
endif()

function(rosidl_rust_generate)
  cmake_parse_arguments(ARG "SKIP_INSTALL" "PACKAGE;PACKAGE_XML;OUTPUT_DIR" "IDL_TUPLES;DEPENDS"
    ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "rosidl_rust_generate() got unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()

  set(_pkg "${PROJECT_NAME}")
  if(ARG_PACKAGE)
    set(_pkg "${ARG_PACKAGE}")
  endif()

  # Once per package: the installed generator's hook in rosidl_generate_interfaces()
  # may have run it already.
  if(TARGET ${_pkg}__rust)
    return()
  endif()

  set(_tuples ${ARG_IDL_TUPLES})
  if(NOT _tuples)
    set(_tuples ${rosidl_generate_interfaces_IDL_TUPLES})
  endif()
  if(NOT _tuples)
    message(FATAL_ERROR "rosidl_rust_generate(): no IDL_TUPLES given and "
      "rosidl_generate_interfaces_IDL_TUPLES is empty; call it after "
      "rosidl_generate_interfaces() or pass IDL_TUPLES")
  endif()

  set(_package_xml "${ARG_PACKAGE_XML}")
  if(NOT _package_xml AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/package.xml")
    set(_package_xml "${CMAKE_CURRENT_SOURCE_DIR}/package.xml")
  endif()

  set(_out "${ARG_OUTPUT_DIR}")
  if(NOT _out)
    set(_out "${CMAKE_CURRENT_BINARY_DIR}/rosidl_rust/${_pkg}")
  endif()

  set(_python "${ROSIDL_RUST_PYTHON_EXECUTABLE}")
  if(NOT _python)
    if(NOT Python3_EXECUTABLE)
      find_package(Python3 REQUIRED COMPONENTS Interpreter)
    endif()
    set(_python "${Python3_EXECUTABLE}")
  endif()

  set(_idl_args)
  set(_idl_files)
  foreach(_tuple ${_tuples})
    list(APPEND _idl_args "--idl" "${_tuple}")
    string(REGEX REPLACE ":([^:]*)$" "/\\1" _abs "${_tuple}")
    list(APPEND _idl_files "${_abs}")
  endforeach()
  set(_xml_args)
  if(_package_xml)
    set(_xml_args "--package-xml" "${_package_xml}")
  endif()

  file(GLOB _generator_sources
    "${_ROSIDL_RUST_DIR}/generate.py"
    "${_ROSIDL_RUST_DIR}/rosidl_rust_gen/*.py")
  set(_stamp "${CMAKE_CURRENT_BINARY_DIR}/rosidl_rust/${_pkg}.stamp")

  add_custom_command(
    OUTPUT "${_stamp}"
    COMMAND "${_python}" "${_ROSIDL_RUST_DIR}/generate.py"
      --package "${_pkg}" ${_idl_args} ${_xml_args}
      --output "${_out}" --stamp "${_stamp}" --quiet
    DEPENDS ${_idl_files} ${_generator_sources} ${_package_xml} ${ARG_DEPENDS}
    COMMENT "Generating Rust interface crate for ${_pkg}"
    VERBATIM)
  add_custom_target(${_pkg}__rust ALL DEPENDS "${_stamp}")

  if(NOT ARG_SKIP_INSTALL)
    install(DIRECTORY "${_out}/" DESTINATION "share/${_pkg}/rust")
  endif()
endfunction()
