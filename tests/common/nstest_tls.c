/* nstest_tls.c - test certificates (nstest_tls.h). */
#include "nstest_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(const char *dir, const char *cmd)
{
    char line[4096];
    snprintf(line, sizeof line, "cd '%s' && { %s ; } >openssl.out 2>&1", dir, cmd);
    if (system(line) == 0)
        return 0;
    snprintf(line, sizeof line, "cat '%s/openssl.out' >&2", dir);
    if (system(line) != 0)
        fprintf(stderr, "nstest: openssl failed in %s\n", dir);
    return -1;
}

/* A CA: self-signed, EC P-256. */
static int make_ca(const char *dir, const char *name, const char *cn)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout %s.key -out %s.pem -days 2 -subj '/CN=%s' "
             "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign",
             name, name, cn);
    return run(dir, cmd);
}

/* A leaf signed by ca, valid for `days` (-1: expired a day before it
 * starts); ext is the x509v3 extension text. */
static int make_leaf(const char *dir, const char *name, const char *ca, const char *cn,
                     const char *ext, int days)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "printf '%s\\n' > %s.ext && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout %s.key -out %s.csr -subj '/CN=%s' && "
             "openssl x509 -req -in %s.csr -CA %s.pem -CAkey %s.key -set_serial 0x%lx "
             "-out %s.pem -days %d -extfile %s.ext",
             ext, name, name, name, cn, name, ca, ca, (unsigned long)random() | 1, name, days,
             name);
    return run(dir, cmd);
}

int nstest_make_certs(const char *dir)
{
    const char *srv_ext = "subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth";
    const char *cli_ext = "extendedKeyUsage=clientAuth";
    if (make_ca(dir, "ca", "nstest CA") != 0 || make_ca(dir, "ca2", "nstest CA 2") != 0 ||
        make_leaf(dir, "srv", "ca", "localhost", srv_ext, 2) != 0 ||
        make_leaf(dir, "srv2", "ca2", "localhost", srv_ext, 2) != 0 ||
        make_leaf(dir, "cli", "ca", "nstest client", cli_ext, 2) != 0 ||
        make_leaf(dir, "rogue", "ca2", "nstest rogue", cli_ext, 2) != 0 ||
        make_leaf(dir, "oldsrv", "ca", "localhost", srv_ext, -1) != 0 ||
        make_leaf(dir, "oldcli", "ca", "nstest old client", cli_ext, -1) != 0)
        return -1;
    return 0;
}

int nstest_install_file(const char *src, const char *dst)
{
    char tmp[4096];
    uint8_t *data = NULL;
    size_t len = 0;
    snprintf(tmp, sizeof tmp, "%s.tmp", dst);
    if (nstest_read_file(src, &data, &len) != 0)
        return -1;
    FILE *f = fopen(tmp, "wb");
    int rc = f && fwrite(data, 1, len, f) == len ? 0 : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    free(data);
    if (rc == 0 && rename(tmp, dst) != 0)
        rc = -1;
    return rc;
}
