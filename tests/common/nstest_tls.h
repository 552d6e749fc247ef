/* nstest_tls.h - certificates made with the openssl CLI for TLS tests. */
#ifndef NS_TEST_TLS_H
#define NS_TEST_TLS_H

#include <stdbool.h>

#include "nstest.h"

/* Writes into dir (EC P-256 keys, valid for 2 days):
 *   ca.pem ca.key        test CA "nstest CA"
 *   srv.pem srv.key      server, signed by ca, SAN IP:127.0.0.1 DNS:localhost
 *   cli.pem cli.key      client (clientAuth), signed by ca
 *   ca2.pem ca2.key      another CA
 *   srv2.pem srv2.key    server signed by ca2 (the "new" certificate of reload tests)
 *   rogue.pem rogue.key  client signed by ca2 (not trusted by a server trusting ca)
 *   oldsrv.pem oldsrv.key, oldcli.pem oldcli.key   expired server / client, signed by ca
 * Returns 0, or -1 when openssl failed (its output is printed). */
int nstest_make_certs(const char *dir);

/* Copies file src over dst atomically (dst.tmp + rename), as a deployment
 * tool would. 0 or -1. */
int nstest_install_file(const char *src, const char *dst);

#endif
