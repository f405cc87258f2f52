# linac_compile_cpu(<src.mlir> <out_var>): compile a recurrence file with
# linacc at build time (sequential + chunk 16/32/64 variants) into
# ${LINAC_KERNEL_DIR}; sets <out_var> to the object file.
set(LINAC_KERNEL_DIR ${PROJECT_BINARY_DIR}/kernels/cpu)
function(linac_compile_cpu src out_var)
  get_filename_component(stem ${src} NAME_WE)
  add_custom_command(
    OUTPUT ${LINAC_KERNEL_DIR}/${stem}.o ${LINAC_KERNEL_DIR}/${stem}.h
    COMMAND linacc ${src} --target=cpu --chunk-sizes=16,32,64 -o ${LINAC_KERNEL_DIR}
    DEPENDS linacc ${src}
    COMMENT "linacc ${stem}.mlir (cpu)")
  set_source_files_properties(${LINAC_KERNEL_DIR}/${stem}.o PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set(${out_var} ${LINAC_KERNEL_DIR}/${stem}.o PARENT_SCOPE)
endfunction()
