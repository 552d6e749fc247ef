/* nsmangen - writes namesrvd.8 from its template at build time, so the
 * manual's settings reference is the config table itself and cannot drift
 * from what `namesrvd -h` and the settings file accept.
 *
 *   nsmangen TEMPLATE OUT VERSION [INCLUDE]
 *
 * Copies TEMPLATE to OUT line by line; a line that is exactly
 * `.\" @SETTINGS@` becomes one paragraph per setting (ns_config_help_roff),
 * `.\" @JAVA_KEYS@` one per Java NameServer key accepted without effect,
 * `.\" @INCLUDE@` the file INCLUDE (namesrvctl.8: `namesrvctl help --roff`,
 * the commands from namesrvctl's own table), and @VERSION@ anywhere becomes
 * VERSION. Exit 0, or 1 with a message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/buf.h"
#include "ns/config.h"
#include "ns/err.h"

static int java_keys_roff(ns_buf_t *out)
{
    const char *key = NULL;
    for (size_t i = 0; (key = ns_config_java_key(i)) != NULL; i++)
        if (ns_buf_printf(out, ".TP\n.B %s\n%s.\n", key, ns_config_java_ignored(key)) != NS_OK)
            return NS_ENOMEM;
    return NS_OK;
}

/* Appends the whole file at path to out. */
static int include_file(ns_buf_t *out, const char *path)
{
    char chunk[8192];
    size_t n;
    FILE *f = path ? fopen(path, "r") : NULL;
    int rc = f ? NS_OK : NS_EIO;
    while (rc == NS_OK && f && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = ns_buf_append(out, chunk, n);
    if (f)
        fclose(f);
    return rc;
}

/* Appends line to out with every @VERSION@ replaced by version. */
static int copy_line(ns_buf_t *out, const char *line, const char *version)
{
    const char *at;
    while ((at = strstr(line, "@VERSION@")) != NULL) {
        if (ns_buf_append(out, line, (size_t)(at - line)) != NS_OK ||
            ns_buf_append_str(out, version) != NS_OK)
            return NS_ENOMEM;
        line = at + strlen("@VERSION@");
    }
    return ns_buf_append_str(out, line);
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: nsmangen TEMPLATE OUT VERSION [INCLUDE]\n");
        return 1;
    }
    FILE *in = fopen(argv[1], "r"), *out = NULL;
    ns_buf_t page = NS_BUF_INIT;
    char line[4096];
    int rc = in ? NS_OK : NS_EIO;
    while (rc == NS_OK && fgets(line, sizeof line, in)) {
        if (strcmp(line, ".\\\" @SETTINGS@\n") == 0)
            rc = ns_config_help_roff(&page);
        else if (strcmp(line, ".\\\" @JAVA_KEYS@\n") == 0)
            rc = java_keys_roff(&page);
        else if (strcmp(line, ".\\\" @INCLUDE@\n") == 0)
            rc = include_file(&page, argc == 5 ? argv[4] : NULL);
        else
            rc = copy_line(&page, line, argv[3]);
    }
    if (rc == NS_OK && (out = fopen(argv[2], "w")) == NULL)
        rc = NS_EIO;
    if (rc == NS_OK && (fwrite(page.data, 1, page.len, out) != page.len || fflush(out) != 0))
        rc = NS_EIO;
    if (out && fclose(out) != 0 && rc == NS_OK)
        rc = NS_EIO;
    if (in)
        fclose(in);
    ns_buf_free(&page);
    if (rc != NS_OK) {
        fprintf(stderr, "nsmangen: %s -> %s: %s\n", argv[1], argv[2], ns_strerror(rc));
        return 1;
    }
    return 0;
}
