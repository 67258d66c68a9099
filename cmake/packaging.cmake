# `cmake --install build/release --prefix DIR` puts bin/tessera under DIR (the web UI is inside
# the binary); `cpack --config build/release/CPackConfig.cmake -G DEB` makes a .deb of the same,
# with its library dependencies read by dpkg-shlibdeps (from dpkg-dev).
install(TARGETS tessera RUNTIME DESTINATION bin)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/tessera)

set(CPACK_PACKAGE_NAME tessera)
set(CPACK_PACKAGE_VENDOR "tessera")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Run and serve large language models (GGUF or Hugging Face) on the CPU")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "tessera developers <tessera@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "One native binary that loads a GGUF file or a Hugging Face directory and generates text\n from the command line, or serves an OpenAI-compatible HTTP API with a chat web UI (tessera serve).")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
include(CPack)
