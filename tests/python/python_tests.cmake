# One ctest per tests/python/test_*.py, each a pytest run with the build tree's package first on
# the path; pytest-timeout guards every case against a hang (a hang is a failure, not a wait).
file(GLOB gpufeed_pytest_files CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/python/test_*.py")
foreach(file IN LISTS gpufeed_pytest_files)
  get_filename_component(name "${file}" NAME_WE)
  add_test(NAME python.${name}
           COMMAND "${Python3_EXECUTABLE}" -m pytest "${file}" -q -p no:cacheprovider
                   --timeout=300 -o "testpaths=" -rs
           WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/python")
  set_tests_properties(python.${name} PROPERTIES LABELS python TIMEOUT 900
    ENVIRONMENT "PYTHONPATH=${GPUFEED_PYTHON_BUILD_DIR};PYTHONDONTWRITEBYTECODE=1"
    DEPENDS "")
endforeach()
