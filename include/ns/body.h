/* body.h - request/response bodies: fastjson-shaped JSON writers, tolerant
 * readers of Java-produced JSON, and the RegisterBrokerBody codecs (JSON and
 * zlib-compressed, docs/protocol.md §4-§5).
 *
 * Writers append to an ns_buf_t and follow fastjson's rules (§4.1): compact,
 * members sorted by name, nulls omitted, non-ASCII raw. "standard" selects
 * the BrowserCompatible+MapSortField form of §4.2 (quoted numeric map keys,
 * every map sorted by key - numeric keys numerically, string keys bytewise -
 * non-ASCII as \uXXXX, longs beyond 2^53-1 as strings); otherwise legacy
 * bare numeric keys and maps in the caller's order. NULL string members and
 * map entries with a NULL key or value are omitted (NULL array elements are
 * written as null). Every writer returns NS_OK or NS_ENOMEM; on failure out
 * keeps its previous contents.
 */
#ifndef NS_BODY_H
#define NS_BODY_H

#include "ns/buf.h"
#include "ns/model.h"

/* CRC-32 (zlib) of the body masked with 0x7FFFFFFF (§5.4). */
uint32_t ns_body_crc32(const uint8_t *p, size_t n);

/* {"counter":N,"stateVersion":N,"timestamp":N} */
int ns_json_dataversion_encode(ns_buf_t *out, const ns_dataversion_t *dv);
/* Reads a DataVersion JSON body; missing members are 0. NS_EINVAL if the
 * text is not a JSON object. */
int ns_json_dataversion_decode(const uint8_t *p, size_t n, ns_dataversion_t *out);
/* The same; *has_timestamp tells whether the object had a timestamp (where
 * it has none, Java's `new DataVersion()` holds the time it was made). */
int ns_json_dataversion_decode_ts(const uint8_t *p, size_t n, ns_dataversion_t *out,
                                  bool *has_timestamp);

/* TopicRouteData. If insert_at is not NULL it receives the offset in out
 * (absolute, i.e. counting bytes already in out before the call) where an
 * orderTopicConf member would go: just before "queueDatas". */
int ns_json_route_encode(ns_buf_t *out, const ns_route_t *r, bool standard, size_t *insert_at);
/* Appends to out the legacy form of the standard-form route std[0..len),
 * for routes whose forms differ only in brokerAddrs keys being quoted; the
 * orderTopicConf offset std_insert (relative to std) becomes *legacy_insert
 * (relative to the appended bytes). NS_EINVAL for a shape it does not know;
 * only exact when the writer compared it with ns_json_route_encode(legacy). */
int ns_json_route_legacy(ns_buf_t *out, const uint8_t *std, size_t len, size_t std_insert,
                         size_t *legacy_insert);
/* True when the two forms of r can differ only inside its BrokerData
 * objects: no filter servers, no mappings, and every other string (queues'
 * broker names, orderTopicConf) ASCII, so that everything outside those
 * objects is the same text in both forms and holds no `{"brokerAddrs":{`
 * (inside a JSON string a quote is always escaped). Then the derivation of
 * r's standard form is exact when it is exact for each BrokerData object
 * alone: the writer checks each broker group's once, not each route's. */
bool ns_json_route_legacy_by_parts(const ns_route_t *r);
/* Appends "orderTopicConf":"<conf>", (with the trailing comma). */
int ns_json_order_conf_member(ns_buf_t *out, const char *conf, bool standard);

/* One BrokerData object (legacy or standard). */
int ns_json_broker_data_encode(ns_buf_t *out, const ns_broker_data_t *b, bool standard);

/* ClusterInfo (§4.3.5), always legacy. clusters[i].broker_names lists the
 * broker names of cluster clusters[i].name. */
typedef struct {
    const char *name;
    const char *const *broker_names;
    size_t n_broker_names;
} ns_cluster_entry_t;
int ns_json_cluster_info_encode(ns_buf_t *out, const ns_broker_data_t *brokers, size_t n_brokers,
                                const ns_cluster_entry_t *clusters, size_t n_clusters);

/* TopicList (§4.3.6); broker_addr NULL = omitted. */
int ns_json_topic_list_encode(ns_buf_t *out, const char *const *topics, size_t n,
                              const char *broker_addr);

/* KVTable {"table":{...}} (§4.3.7). */
int ns_json_kvtable_encode(ns_buf_t *out, const char *const *keys, const char *const *vals,
                           size_t n);

/* GetBrokerMemberGroupResponseBody (§4.3.8), legacy keys. */
int ns_json_member_group_encode(ns_buf_t *out, const char *cluster, const char *broker_name,
                                const ns_broker_addr_t *addrs, size_t n_addrs);

/* Rewrites fastjson text into strict JSON that cJSON accepts: bare numeric
 * object keys are quoted. ({"$ref":...} objects are left for the reader to
 * ignore.) Output is appended to out, NUL-terminated (NUL not counted in
 * len). NS_EINVAL on text that cannot be JSON (unbalanced strings). */
int ns_fastjson_normalize(const uint8_t *p, size_t n, ns_buf_t *out);
/* Two escapes cJSON does not read as fastjson does, rewritten inside the
 * JSON strings of [p, p+n), in place:
 * - \u0000: a C string cannot hold a NUL, and cJSON ends a string at it (a
 *   topic "a\u0000b" would silently become "a" and merge into it); it
 *   becomes \u0001, a control character the name checks (ns/names.h)
 *   refuse with a remark.
 * - a lone surrogate (\ud800 not followed by a low one, or a lone low one):
 *   cJSON refuses the whole text, where fastjson keeps the unpaired char in
 *   the Java String; it becomes the three bytes UTF-8 would give it (ED A0
 *   80), which the UTF-8 checks refuse, so a body with one such topic
 *   loses that topic only.
 * ns_fastjson_normalize does this to its output. Returns the new length
 * (<= n; bytes past it are left as they were). */
size_t ns_json_fix_escapes(uint8_t *p, size_t n);

/* Decodes a REGISTER_BROKER body. The encoding is detected from the bytes:
 * '{' (after optional whitespace) = JSON RegisterBrokerBody (or, when
 * request_version < 37, a bare TopicConfigSerializeWrapper), anything else
 * = zlib-compressed form (§5.2), whatever the header's compressed flag says.
 * The mapping section of the compressed form is read only when
 * request_version >= 413. Inflation stops with NS_ETOOBIG past
 * max_inflate_bytes. An empty body gives an empty table with a zero
 * DataVersion. On success out owns its memory (ns_regbody_free); on error out
 * is left empty. Errors: NS_EINVAL (malformed, truncated, negative lengths),
 * NS_ETOOBIG, NS_ENOMEM.
 * Details: topics are unique by name (a later entry replaces an earlier one
 * in place); a JSON topic without topicName takes its map key. Mappings are
 * unique by topic (JSON: the map key); those without bname are skipped.
 * The zlib form is inflated lazily, field by field, as Java's stream reader
 * does: bytes after the last needed field are never inflated, and
 * max_inflate_bytes bounds the bytes inflated (0 rejects every compressed
 * body). */
int ns_regbody_decode(const uint8_t *p, size_t n, int request_version, size_t max_inflate_bytes,
                      ns_regbody_t *out);
void ns_regbody_free(ns_regbody_t *b);
/* Removes (and frees) the topics and the static-topic mappings whose names
 * ns_name_problem (ns/names.h) refuses (or a mapping whose scope is not
 * valid UTF-8), keeping the order of the others: a broker with one bad
 * topic still gets the rest registered. (Filter servers, a Java 4 feature,
 * are kept as sent: they are only shown, and every JSON writer writes
 * invalid bytes as U+FFFD.) Describes the
 * first one removed in first (may be NULL when first_size is 0). Returns how
 * many entries were removed. */
size_t ns_regbody_drop_bad_names(ns_regbody_t *b, char *first, size_t first_size);

/* Encoders for the same, as a Java 5.x broker writes them (used by tests,
 * namesrvctl and nsbench). JSON: the RegisterBrokerBody of §4.3.12 with
 * mappingDataVersion {counter 0, same timestamp} and topic entries
 * {attributes:{},order:false,perm,readQueueNums,topicFilterType:"SINGLE_TAG",
 * topicName,topicSysFlag,writeQueueNums}. Compressed: zlib level 9 of §5.2,
 * with the mapping section when with_mappings (5.x). */
int ns_regbody_encode_json(ns_buf_t *out, const ns_regbody_t *b);
int ns_regbody_encode_compressed(ns_buf_t *out, const ns_regbody_t *b, bool with_mappings);

/* Decodes the queueDatas of a TopicRouteData body (REGISTER_TOPIC_IN_NAMESRV).
 * *out is a heap array whose broker_name strings are heap copies (never NULL:
 * a missing brokerName gives ""); free with ns_queue_datas_free(). Blank body,
 * missing/empty list -> *out = NULL, *n = 0, NS_OK; null entries are skipped.
 * NS_EINVAL if the text is not a JSON object or an entry is malformed. */
int ns_json_queue_datas_decode(const uint8_t *p, size_t n, ns_queue_data_t **out, size_t *n_out);
void ns_queue_datas_free(ns_queue_data_t *q, size_t n);

#endif
