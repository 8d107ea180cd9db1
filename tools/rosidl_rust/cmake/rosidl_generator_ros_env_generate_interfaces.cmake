# Run by rosidl_generate_interfaces() (the extension point
# rosidl_generate_idl_interfaces), in the scope of the interface package being built:
# its Rust crate, from the .idl files rosidl_adapter made. Where upstream's
# rosidl_generator_rs is installed too (a ROS install with ros2_rust), it writes the
# crate, and this one stands aside.
if(NOT rosidl_generator_rs_FOUND)
  set(_rosidl_rust_skip_install)
  if(rosidl_generate_interfaces_SKIP_INSTALL)
    set(_rosidl_rust_skip_install SKIP_INSTALL)
  endif()
  rosidl_rust_generate(
    PACKAGE "${rosidl_generate_interfaces_TARGET}"
    IDL_TUPLES ${rosidl_generate_interfaces_IDL_TUPLES}
    ${_rosidl_rust_skip_install})
endif()
