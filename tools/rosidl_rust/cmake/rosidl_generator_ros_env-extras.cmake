# Loaded by find_package(rosidl_generator_ros_env), which rosidl_core_generators does
# for every package of the group rosidl_generator_packages: makes rosidl_rust_generate()
# available and has rosidl_generate_interfaces() run it.
set(ROSIDL_RUST_GENERATOR_DIR "${rosidl_generator_ros_env_DIR}/../generator")
include("${rosidl_generator_ros_env_DIR}/rosidl_rust.cmake")

find_package(ament_cmake_core QUIET REQUIRED)
ament_register_extension(
  "rosidl_generate_idl_interfaces"
  "rosidl_generator_ros_env"
  "rosidl_generator_ros_env_generate_interfaces.cmake")
