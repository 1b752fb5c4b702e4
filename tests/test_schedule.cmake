# Read by ctest after the discovered tests' lists (tests/CMakeLists.txt): the order a run starts
# them in when it has no timings of an earlier one, as on a clean clone. Process tests start
# first, the soaks before them, and no two soaks run at once (each starts a cluster of busy
# nodes, whose deadlines two of them on two cores would strain); unit tests fill in after.
foreach(t IN LISTS darcy_integration_tests_TESTS)
  if(t MATCHES "^chaos_soak\\.")
    # A soak's clean and soaked runs each get 120 s, and its test waits 280 s for both
    # (chaos_soak_test.cpp): the 180 s of the other process tests would cut it short.
    set_tests_properties("${t}" PROPERTIES COST 1000 RESOURCE_LOCK chaos_soak TIMEOUT 300)
  else()
    set_tests_properties("${t}" PROPERTIES COST 100)
  endif()
endforeach()
