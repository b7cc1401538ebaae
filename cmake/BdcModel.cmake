# BdcModel.cmake — turn an .onnx file into a linked static library as a build step.
#
#   include(path/to/bdc/cmake/BdcModel.cmake)
#   bdc_add_model(resnet MODEL ${CMAKE_SOURCE_DIR}/models/resnet18.onnx [BDC path/to/bdc]
#                 [TARGET cpu|cuda|hip|opencl] [ARCH sm_90|gfx90a|...])
#   target_link_libraries(my_app PRIVATE resnet)
#
# creates the imported library target `resnet` whose archive (resnet.a, holding the model, its
# weights and bdc's runtime) and header (resnet.h, declaring resnet_create/_run/_destroy and the
# resnet_inputs/resnet_outputs descriptors) are generated in the build folder by
# `bdc compile --lib`, rebuilt whenever the .onnx file or bdc changes. Link also needs pthread and
# libm, which the target carries, and for a GPU TARGET its runtime: OpenCL (opencl), the CUDA
# runtime (cuda, from find_package(CUDAToolkit)) or amdhip64 (hip), with the C++ library.
function(bdc_add_model name)
  cmake_parse_arguments(M "" "MODEL;BDC;TARGET;ARCH" "" ${ARGN})
  if(NOT M_TARGET)
    set(M_TARGET cpu)
  endif()
  set(arch_args)
  if(M_ARCH)
    set(arch_args --arch ${M_ARCH})
  endif()
  if(NOT M_MODEL)
    message(FATAL_ERROR "bdc_add_model(${name}): MODEL is required")
  endif()
  if(NOT M_BDC)
    find_program(M_BDC bdc REQUIRED)
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/bdc_${name})
  set(archive ${dir}/${name}.a)
  add_custom_command(
    OUTPUT ${archive} ${dir}/${name}.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${M_BDC} compile ${M_MODEL} --lib -o ${archive} -q --target ${M_TARGET} ${arch_args}
    DEPENDS ${M_MODEL} ${M_BDC}
    COMMENT "bdc: compiling ${M_MODEL}"
    VERBATIM)
  add_custom_target(${name}_bdc DEPENDS ${archive} ${dir}/${name}.h)
  add_library(${name} STATIC IMPORTED GLOBAL)
  file(MAKE_DIRECTORY ${dir})
  set_target_properties(${name} PROPERTIES IMPORTED_LOCATION ${archive}
                                           INTERFACE_INCLUDE_DIRECTORIES ${dir})
  find_package(Threads REQUIRED)
  target_link_libraries(${name} INTERFACE Threads::Threads m)
  if(M_TARGET STREQUAL "opencl")
    find_package(OpenCL REQUIRED)
    target_link_libraries(${name} INTERFACE OpenCL::OpenCL)
  elseif(M_TARGET STREQUAL "cuda")
    find_package(CUDAToolkit REQUIRED)
    target_link_libraries(${name} INTERFACE CUDA::cudart_static stdc++)
  elseif(M_TARGET STREQUAL "hip")
    find_library(BDC_AMDHIP64 amdhip64 REQUIRED)
    target_link_libraries(${name} INTERFACE ${BDC_AMDHIP64} stdc++)
  endif()
  add_dependencies(${name} ${name}_bdc)
endfunction()
