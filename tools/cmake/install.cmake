# Install rules and the Debian package (CPack DEB).
#
#   cmake --install build --prefix /opt/namesrv
#     bin/namesrvd, bin/namesrvctl, share/man/man8/{namesrvd,namesrvctl}.8.gz,
#     lib/systemd/system/namesrvd.service, etc/namesrv/namesrv.properties,
#     share/namesrv/namesrv.properties (the default), share/doc/namesrv/
#     {README.md,namesrvctl.md}
#   cpack -G DEB --config build/CPackConfig.cmake   (or: cmake --build build -t package)
#     the same under /usr; postinst creates the namesrv system user,
#     /var/lib/namesrv and /etc/namesrv/namesrv.properties (from the default,
#     when missing: namesrvd rewrites it on UPDATE_NAMESRV_CONFIG, so it is
#     not a conffile).
include(GNUInstallDirs)

set(NS_DIST ${CMAKE_SOURCE_DIR}/tools/dist)

install(TARGETS namesrvd namesrvctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# man pages, gzipped as Debian policy wants them. namesrvd.8 is generated
# from its template by nsmangen: its settings reference is the config table.
add_executable(nsmangen ${CMAKE_SOURCE_DIR}/tools/mangen/main.c)
target_link_libraries(nsmangen PRIVATE nsd_config)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/namesrvd.8
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
  COMMAND nsmangen ${NS_DIST}/namesrvd.8.in ${CMAKE_BINARY_DIR}/man/namesrvd.8 ${NS_VERSION}
  DEPENDS nsmangen ${NS_DIST}/namesrvd.8.in)
# namesrvctl.8: its command list from namesrvctl's own table (help --roff)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/namesrvctl.8
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
  COMMAND namesrvctl help --roff > ${CMAKE_BINARY_DIR}/man/namesrvctl-commands.roff
  COMMAND nsmangen ${NS_DIST}/namesrvctl.8.in ${CMAKE_BINARY_DIR}/man/namesrvctl.8 ${NS_VERSION}
          ${CMAKE_BINARY_DIR}/man/namesrvctl-commands.roff
  DEPENDS nsmangen namesrvctl ${NS_DIST}/namesrvctl.8.in)
foreach(page namesrvd namesrvctl)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/${page}.8.gz
    COMMAND gzip -9nc ${CMAKE_BINARY_DIR}/man/${page}.8 > ${CMAKE_BINARY_DIR}/man/${page}.8.gz
    DEPENDS ${CMAKE_BINARY_DIR}/man/${page}.8)
  list(APPEND NS_MAN_PAGES ${CMAKE_BINARY_DIR}/man/${page}.8.gz)
endforeach()
add_custom_target(ns_man ALL DEPENDS ${NS_MAN_PAGES})
install(FILES ${NS_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)

# The unit names the installed binary and settings file, so it is written at
# install time for the prefix in use (CPack installs with prefix /usr). With
# prefix /usr the settings go to /etc/namesrv (the package's postinst copies
# the default there); any other prefix gets PREFIX/etc/namesrv.
install(FILES ${NS_DIST}/namesrv.properties DESTINATION ${CMAKE_INSTALL_DATADIR}/namesrv)
install(CODE "
  set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
  if(prefix STREQUAL \"/usr\")
    set(NS_ETC /etc/namesrv)
  else()
    set(NS_ETC \"\${prefix}/etc/namesrv\")
    file(INSTALL \"${NS_DIST}/namesrv.properties\" DESTINATION \"\${NS_ETC}\")
  endif()
  set(NS_BIN \"\${prefix}/${CMAKE_INSTALL_BINDIR}\")
  configure_file(\"${NS_DIST}/namesrvd.service.in\" \"${CMAKE_BINARY_DIR}/namesrvd.service\" @ONLY)
  file(INSTALL \"${CMAKE_BINARY_DIR}/namesrvd.service\" DESTINATION \"\${prefix}/lib/systemd/system\")
")
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/docs/namesrvctl.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# ---- Debian package ----
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME namesrv)
set(CPACK_PACKAGE_VERSION ${NS_VERSION}) # -DNS_VERSION=... names it, in the file name too
set(CPACK_PACKAGE_CONTACT "namesrv maintainers <namesrv@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "RocketMQ-compatible NameServer that keeps its routing tables in LMDB")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # dpkg-shlibdeps fills Depends: liblmdb0, libuv1, ...
# libmicrohttpd is opened with dlopen (src/daemon/ops/mhd.h), which
# dpkg-shlibdeps cannot see: its package named here, from its soname
# (libmicrohttpd.so.12 -> libmicrohttpd12, Debian's rule for library packages)
string(REGEX REPLACE "^(lib.*)\\.so\\.([0-9]+)$" "\\1\\2" NS_MHD_PACKAGE "${NS_MHD_SONAME}")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, ${NS_MHD_PACKAGE}")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${NS_DIST}/debian/postinst ${NS_DIST}/debian/prerm ${NS_DIST}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
