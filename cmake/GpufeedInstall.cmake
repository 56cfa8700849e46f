# Installs the library, its headers and a package config so that find_package(gpufeed) works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(gpufeed_installed_targets gpufeed gpufeed_observe)  # gpufeed::gpufeed, gpufeed::observe
if(GPUFEED_WITH_TORCH)
  list(APPEND gpufeed_installed_targets gpufeed_torch)  # gpufeed::torch
endif()
install(TARGETS ${gpufeed_installed_targets} EXPORT gpufeedTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# (The include directory reaches users through the target's $<INSTALL_INTERFACE>.)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gpufeed DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT gpufeedTargets NAMESPACE gpufeed:: FILE gpufeedTargets.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpufeed)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gpufeedConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gpufeedConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpufeed)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpufeedConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gpufeedConfig.cmake
  ${PROJECT_BINARY_DIR}/gpufeedConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpufeed)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/README.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
