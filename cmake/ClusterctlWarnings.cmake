# Compiler flags shared by every target of the project: warnings, and the sanitizer build.
add_library(clusterctl_flags INTERFACE)
target_compile_options(clusterctl_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wconversion -Wsign-conversion -Wnull-dereference -Wformat=2
  -Wimplicit-fallthrough)
# GCC 12's optimizer reports false positives inside libstdc++, fmt and nlohmann/json once they
# are inlined into our code at -O2 (std::string operator+ "may overlap" -Wrestrict, GCC PR105329;
# -Wmaybe-uninitialized on std::optional members, PR105593; -Wnull-dereference in json.hpp).
# The Debug builds of ./scripts/test keep all three; optimized GCC 12 builds drop them so that
# a Release build (./scripts/demo) prints no warning that is not ours.
target_compile_options(clusterctl_flags INTERFACE
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>,$<NOT:$<CONFIG:Debug>>>:-Wno-restrict;-Wno-maybe-uninitialized;-Wno-null-dereference>)
if(CLUSTERCTL_WERROR)
  target_compile_options(clusterctl_flags INTERFACE -Werror)
endif()
if(CLUSTERCTL_SANITIZE)
  target_compile_options(clusterctl_flags INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(clusterctl_flags INTERFACE -fsanitize=address,undefined)
endif()

# clusterctl_library(NAME SOURCES... [DEPS ...]) : a folder's library, e.g. clusterctl_remote.
function(clusterctl_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(clusterctl_${name} STATIC ${ARG_SOURCES})
  target_include_directories(clusterctl_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(clusterctl_${name} PUBLIC ${ARG_DEPS} PRIVATE clusterctl_flags)
endfunction()

# clusterctl_unit_tests(LIBRARY SOURCES...) : add doctest files beside a library's code.
function(clusterctl_unit_tests lib)
  if(CLUSTERCTL_TESTS)
    target_sources(clusterctl_unit_tests PRIVATE ${ARGN})
    target_link_libraries(clusterctl_unit_tests PRIVATE ${lib})
  endif()
endfunction()
