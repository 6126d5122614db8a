# Writes CTEST_FILE: one ctest test per GoogleTest suite of TEST_EXECUTABLE
# (its --gtest_filter runs the whole suite), each with TIMEOUT 600 and the
# labels in LABELS. Run after each build of the executable (pstrain_add_suites
# in CMakeLists.txt), as gtest_discover_tests does for single tests.

execute_process(COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed: ${rc}")
endif()

# A suite's line starts in column 0 and ends its name with a dot ("Suite.",
# "Prefix/Suite.", "Suite/0.  # TypeParam = ..."); its tests are indented.
string(REPLACE "\n" ";" lines "${listing}")
set(content "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([A-Za-z0-9_/]+)\\.")
    set(suite "${CMAKE_MATCH_1}")
    string(APPEND content
      "add_test([==[${suite}]==] [==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${suite}.*]==])\n"
      "set_tests_properties([==[${suite}]==] PROPERTIES TIMEOUT 600 LABELS [==[${LABELS}]==])\n")
  endif()
endforeach()
file(WRITE "${CTEST_FILE}" "${content}")
