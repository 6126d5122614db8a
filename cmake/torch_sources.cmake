# libtorch's headers are most of the compile: with GCC 12 at -O3 a source
# that includes <torch/torch.h> takes 15 to 20 s of CPU, about 10 of them
# parsing the header and as much again compiling the inline functions of
# libtorch that it uses. pstrain_torch_sources(T) cuts both for those of
# target T's sources that include libtorch, directly or through pstrain's
# own headers:
# - a precompiled <torch/torch.h>, built once by pstrain_torch_pch and
#   reused by every such source (PSTRAIN_TORCH_PCH). Loading it costs about
#   5 s, so sources that include no libtorch go without it: all of util,
#   wire, net, report and cluster stay torch-free (lib/wire is also built
#   with clang for the fuzzer);
# - with UNITY (the libraries), a unity build: up to
#   PSTRAIN_TORCH_UNITY_BATCH of them compile as one source, which loads the
#   header and compiles each inline function of libtorch once (the first 8
#   sources of lib/models: 107 s of CPU each alone without the header, 12 s
#   as one batch with it). They share one file scope: no two of them may
#   define the same name in an anonymous namespace or as static;
#   SKIP_UNITY_BUILD_INCLUSION leaves a source out (tests/CMakeLists.txt
#   lists the test sources whose helpers share a name with another's);
# - with TEST, the tests' optimization (PSTRAIN_TEST_OPTIMIZATION) and a
#   precompiled header built with it.
#
# The precompiled header is for GCC only, the toolchain pstrain is tested
# with: it is valid only for flags like those it was built with, and GCC
# says so (-Winvalid-pch, an error under PSTRAIN_WERROR) when a target's
# differ. Other compilers include the headers as usual.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(pstrain_torch_pch_default ON)
else()
  set(pstrain_torch_pch_default OFF)
endif()
option(PSTRAIN_TORCH_PCH "Precompile libtorch's headers once for the sources that include them"
       ${pstrain_torch_pch_default})
set(PSTRAIN_TORCH_UNITY_BATCH 8 CACHE STRING
    "Sources that include libtorch compiled as one (1: each alone)")

# The tests' own code runs for milliseconds; what it costs is compiling.
# At -O1 a test source that includes libtorch compiles in two thirds of
# the time it takes at -O3 (evaluation_test.cc: 11 s against 16), and the
# libraries it tests keep the build type's flags.
set(PSTRAIN_TEST_OPTIMIZATION "-O1" CACHE STRING
    "Optimization of the test sources (the libraries keep the build type's)")

if(PSTRAIN_TORCH_PCH)
  # A target of its own, so that no library waits for another's sources
  # before it can use the header.
  add_library(pstrain_torch_pch OBJECT ${CMAKE_CURRENT_LIST_DIR}/torch_pch.cc)
  target_link_libraries(pstrain_torch_pch PRIVATE torch_lib)
  target_precompile_headers(pstrain_torch_pch PRIVATE <torch/torch.h>)
  # The same header for the tests, built with their flags: GCC takes a
  # precompiled header only under the optimization it was made with.
  # Built only for the tests that reuse it, not by a build of the binary.
  add_library(pstrain_test_pch OBJECT EXCLUDE_FROM_ALL
              ${CMAKE_CURRENT_LIST_DIR}/torch_pch.cc)
  target_link_libraries(pstrain_test_pch PRIVATE torch_lib)
  target_compile_options(pstrain_test_pch PRIVATE ${PSTRAIN_TEST_OPTIMIZATION})
  target_precompile_headers(pstrain_test_pch PRIVATE <torch/torch.h>)
endif()

# Sets ${out} to TRUE when `file` includes a libtorch header, itself or
# through the headers of pstrain it includes (found under lib/, tests/, the
# source root or beside the file). Answers are kept for the whole configure.
function(pstrain_includes_torch file out)
  get_property(known GLOBAL PROPERTY "pstrain_torch_inc:${file}" SET)
  if(known)
    get_property(answer GLOBAL PROPERTY "pstrain_torch_inc:${file}")
    set(${out} ${answer} PARENT_SCOPE)
    return()
  endif()
  # FALSE while it is being scanned, which ends include cycles.
  set_property(GLOBAL PROPERTY "pstrain_torch_inc:${file}" FALSE)
  set(answer FALSE)
  file(STRINGS ${file} includes REGEX "^#include [<\"]")
  get_filename_component(dir ${file} DIRECTORY)
  foreach(line IN LISTS includes)
    if(line MATCHES "^#include <(torch|ATen|c10)/")
      set(answer TRUE)
      break()
    endif()
    if(NOT line MATCHES "^#include \"([^\"]+)\"")
      continue()
    endif()
    set(name ${CMAKE_MATCH_1})
    foreach(base ${PROJECT_SOURCE_DIR}/lib ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR} ${dir})
      if(EXISTS ${base}/${name})
        pstrain_includes_torch(${base}/${name} nested)
        if(nested)
          set(answer TRUE)
        endif()
        break()
      endif()
    endforeach()
    if(answer)
      break()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "pstrain_torch_inc:${file}" ${answer})
  set(${out} ${answer} PARENT_SCOPE)
endfunction()

# Compiles target's sources that include libtorch with the precompiled
# header and, with UNITY, in unity batches; the others alone and without it,
# or with ALL_SOURCES in unity batches too (for sources that are slow without
# libtorch, as those that include CLI11). Call it in target's own directory,
# after the last target_sources of target.
function(pstrain_torch_sources target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "UNITY;ALL_SOURCES;TEST" "" "")
  set(pch pstrain_torch_pch)
  if(arg_TEST)
    target_compile_options(${target} PRIVATE ${PSTRAIN_TEST_OPTIMIZATION})
    set(pch pstrain_test_pch)
  endif()
  if(PSTRAIN_TORCH_PCH)
    target_precompile_headers(${target} REUSE_FROM ${pch})
  endif()
  if(arg_UNITY AND PSTRAIN_TORCH_UNITY_BATCH GREATER 1)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                          UNITY_BUILD_BATCH_SIZE ${PSTRAIN_TORCH_UNITY_BATCH})
    # GCC warns of a class with a member of a type from an anonymous
    # namespace when the class is defined in an included file, as a header
    # would be; in a unity batch every source is an included file.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      set_target_properties(${target} PROPERTIES UNITY_BUILD_CODE_BEFORE_INCLUDE
                            "#pragma GCC diagnostic ignored \"-Wsubobject-linkage\"")
    endif()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    get_filename_component(path ${source} ABSOLUTE BASE_DIR ${source_dir})
    pstrain_includes_torch(${path} uses_torch)
    if(NOT uses_torch)
      set_source_files_properties(${source} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      if(NOT arg_ALL_SOURCES)
        set_source_files_properties(${source} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
      endif()
    endif()
  endforeach()
endfunction()
