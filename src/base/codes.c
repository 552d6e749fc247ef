/* codes.c - names of request, response and language codes (include/ns/codes.h)
 * and of project error codes (include/ns/err.h), all from their X-macros. */
#include "ns/codes.h"

#include <string.h>

#include "ns/err.h"

const char *ns_request_code_name(int code)
{
    switch (code) {
#define NS_REQ_CASE(name, value)                                                                   \
    case value:                                                                                    \
        return #name;
        NS_REQUEST_CODE_MAP(NS_REQ_CASE)
#undef NS_REQ_CASE
    default:
        return NULL;
    }
}

const char *ns_response_code_name(int code)
{
    switch (code) {
#define NS_RSP_CASE(name, value)                                                                   \
    case value:                                                                                    \
        return #name;
        NS_RESPONSE_CODE_MAP(NS_RSP_CASE)
#undef NS_RSP_CASE
    default:
        return NULL;
    }
}

const char *ns_language_name(int code)
{
    switch (code) {
#define NS_LANG_CASE(name, value)                                                                  \
    case value:                                                                                    \
        return #name;
        NS_LANGUAGE_MAP(NS_LANG_CASE)
#undef NS_LANG_CASE
    default:
        return NULL;
    }
}

int ns_language_code(const char *name, size_t len)
{
#define NS_LANG_CMP(lname, value)                                                                  \
    if (len == sizeof(#lname) - 1 && memcmp(name, #lname, len) == 0)                               \
        return value;
    NS_LANGUAGE_MAP(NS_LANG_CMP)
#undef NS_LANG_CMP
    return NS_LANG_OTHER;
}

const char *ns_strerror(int err)
{
    switch (err) {
#define NS_ERR_MSG(name, value, msg)                                                               \
    case value:                                                                                    \
        return msg;
        NS_ERR_MAP(NS_ERR_MSG)
#undef NS_ERR_MSG
    default:
        return "unknown error";
    }
}

const char *ns_errname(int err)
{
    switch (err) {
#define NS_ERR_NAME(name, value, msg)                                                              \
    case value:                                                                                    \
        return #name;
        NS_ERR_MAP(NS_ERR_NAME)
#undef NS_ERR_NAME
    default:
        return "NS_E?";
    }
}
