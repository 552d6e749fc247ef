/* nstest_text.c - whole text files for tests (nstest.h): read, write,
 * count what a log holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"

char *nstest_read_text(const char *path)
{
    uint8_t *p = NULL;
    size_t n = 0;
    if (nstest_read_file(path, &p, &n) != 0)
        return NULL;
    char *s = realloc(p, n + 1);
    if (s == NULL) {
        free(p);
        return NULL;
    }
    s[n] = 0;
    return s;
}

void nstest_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

int nstest_count_in_file(const char *path, const char *needle)
{
    char *t = nstest_read_text(path);
    int n = 0;
    for (const char *p = t; p && (p = strstr(p, needle)) != NULL; p++)
        n++;
    free(t);
    return n;
}

void nstest_expect_all(const char *text, const char *const *needles)
{
    for (size_t i = 0; needles[i]; i++)
        if (text == NULL || strstr(text, needles[i]) == NULL)
            fail_msg("expected '%s' in:\n%s", needles[i], text ? text : "(null)");
}

/* The value of a put is a function of (key, seq): a header naming both, a
 * filler whose length (8 .. 6007 bytes: small values and overflow pages)
 * and bytes depend on seq, and a trailer. */
char *nstest_kv_value(const char *key, uint32_t seq)
{
    size_t fill = 8 + (size_t)((seq * UINT32_C(2654435761)) % 6000u);
    char head[64];
    int h = snprintf(head, sizeof head, "%s#%u#", key, seq);
    char *v = malloc((size_t)h + fill + 5);
    assert_non_null(v);
    memcpy(v, head, (size_t)h);
    for (size_t i = 0; i < fill; i++)
        v[(size_t)h + i] = (char)('a' + (seq + i * 7) % 26);
    memcpy(v + (size_t)h + fill, "#END", 5);
    return v;
}
