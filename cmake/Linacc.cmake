# linac_compile_cpu(<src.mlir> <out_var> [DIR <dir>] [FLAGS <linacc flags>...]): compile a recurrence file with
# linacc at build time (sequential + chunk 16/32/64 variants) into ${LINAC_KERNEL_DIR} (or <dir>); sets
# <out_var> to the object file.
set(LINAC_KERNEL_DIR ${PROJECT_BINARY_DIR}/kernels/cpu)
function(linac_compile_cpu src out_var)
  cmake_parse_arguments(ARG "" "DIR" "FLAGS" ${ARGN})
  set(dir ${LINAC_KERNEL_DIR})
  if(ARG_DIR)
    set(dir ${ARG_DIR})
  endif()
  get_filename_component(stem ${src} NAME_WE)
  add_custom_command(
    OUTPUT ${dir}/${stem}.o ${dir}/${stem}.h
    COMMAND linacc ${src} --target=cpu --chunk-sizes=16,32,64 ${ARG_FLAGS} -o ${dir}
    DEPENDS linacc ${src}
    COMMENT "linacc ${stem}.mlir (cpu ${ARG_FLAGS})")
  set_source_files_properties(${dir}/${stem}.o PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set(${out_var} ${dir}/${stem}.o PARENT_SCOPE)
endfunction()
