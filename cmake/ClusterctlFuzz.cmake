# clusterctl_fuzz_target(NAME LIB SEEDS...): the libFuzzer program fuzz_NAME (from fuzz_NAME.cc in
# the calling folder, linked to the instrumented library LIB) and its ctest entry "fuzz: NAME"
# (label "fuzz"), which runs it for CLUSTERCTL_FUZZ_SECONDS from a scratch corpus in the build
# tree seeded with SEEDS (paths relative to tests/data) on each run. A crash, a sanitizer report
# or a broken property (an abort) fails it. clang only (CLUSTERCTL_FUZZ=ON).
set(CLUSTERCTL_FUZZ_FLAGS -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
function(clusterctl_fuzz_target name lib)
  add_executable(fuzz_${name} fuzz_${name}.cc)
  target_link_libraries(fuzz_${name} PRIVATE ${lib} clusterctl_flags)
  target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined
    ${CLUSTERCTL_FUZZ_FLAGS})
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  set(corpus "${CMAKE_CURRENT_BINARY_DIR}/corpus_${name}")
  set(seed_paths "")
  foreach(s IN LISTS ARGN)
    list(APPEND seed_paths "${PROJECT_SOURCE_DIR}/tests/data/${s}")
  endforeach()
  add_test(NAME "fuzz: ${name}"
    COMMAND sh -c "mkdir -p '${corpus}' && cp \"$@\" '${corpus}/' && exec '$<TARGET_FILE:fuzz_${name}>' -max_total_time=${CLUSTERCTL_FUZZ_SECONDS} -timeout=10 -rss_limit_mb=2048 '${corpus}'"
      fuzz ${seed_paths})
  set_tests_properties("fuzz: ${name}" PROPERTIES LABELS fuzz TIMEOUT 600)
endfunction()
