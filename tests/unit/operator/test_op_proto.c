/* op_proto against the real protobuf runtime: requests byte-identical to
 * python3-protobuf's encoding (tests/fixtures/unit/op_proto/make.py),
 * responses and malformed messages through the decoder, gRPC framing and
 * text formats. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "op_proto.h"
#include "test_support.h"

static void expect_encoding(const struct op_profile_request *rq, const char *fixture)
{
    size_t len;
    char *want = ts_read_fixture(fixture, &len);
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    cr_assert_eq(op_proto_encode_request(rq, &b), 0);
    cr_assert_eq(b.len, len, "%s: %zu bytes, protobuf made %zu", fixture, b.len, len);
    cr_assert(!memcmp(b.data, want, len), "%s: bytes differ from protobuf's", fixture);
    k8s_buf_done(&b);
    free(want);
}

Test(op_proto, request_matches_protobuf)
{
    struct op_profile_request rq = {
        .duration_ms = 5000,
        .levels = OP_TRACER_LEVELS_DEFAULT,
        .start_timestamp_ns = 1796000000123456789ULL,
        .repository_root = "gs://bucket/run-1/plugins/profile",
        .session_id = "2026_11_30_03_00_00",
        .host_name = "llama-pretrain-workers-0-3",
    };
    expect_encoding(&rq, "unit/op_proto/request-full.bin");
}

Test(op_proto, request_without_host_or_start)
{
    struct op_profile_request rq = {
        .duration_ms = 60000,
        .levels = OP_TRACER_LEVELS_DEFAULT,
        .repository_root = "/data/profiles/plugins/profile",
        .session_id = "2026_01_02_03_04_05",
        .host_name = "",
    };
    expect_encoding(&rq, "unit/op_proto/request-nohost.bin");
}

/* Levels other than the defaults; a level of 0 is left out, as protobuf
 * leaves out a proto3 field at its default. */
Test(op_proto, request_with_tracer_levels)
{
    struct op_profile_request rq = {
        .duration_ms = 3000,
        .levels = {.host = 3, .device = 0, .python = 0},
        .start_timestamp_ns = 1796000000000000000ULL,
        .repository_root = "/data/profiles/plugins/profile",
        .session_id = "2026_01_02_03_04_05",
        .host_name = "10.0.0.1:8471",
    };
    expect_encoding(&rq, "unit/op_proto/request-levels.bin");
}

static int decode(const char *fixture, struct op_profile_response *out, struct k8s_error *err)
{
    size_t len;
    char *msg = ts_read_fixture(fixture, &len);
    int r = op_proto_decode_response(msg, len, out, err);
    free(msg);
    return r;
}

Test(op_proto, responses)
{
    struct op_profile_response r = {.tool_data = 99};
    cr_assert_eq(decode("unit/op_proto/response-empty-message.bin", &r, NULL), 0);
    cr_assert_eq(r.tool_data, 0);
    cr_assert_not(r.empty_trace, "a zero-length reply is a non-empty trace");
    cr_assert_eq(decode("unit/op_proto/response-empty-trace.bin", &r, NULL), 0);
    cr_assert(r.empty_trace);
    cr_assert_eq(decode("unit/op_proto/response-tools.bin", &r, NULL), 0);
    cr_assert_eq(r.tool_data, 2);
    cr_assert(r.has_xspace);
    cr_assert_not(r.empty_trace);
}

Test(op_proto, malformed_responses_are_named)
{
    static const struct {
        const char *file, *why;
    } bad[] = {
        {"unit/op_proto/bad-truncated-varint.bin", "truncated"},
        {"unit/op_proto/bad-wire-type.bin", "wrong wire type for empty_trace"},
        {"unit/op_proto/bad-group.bin", "truncated or invalid field"},
        {"unit/op_proto/bad-length.bin", "truncated or invalid field"},
        {"unit/op_proto/bad-field-zero.bin", "invalid field number"},
        {"unit/op_proto/bad-tool-data.bin", "malformed tool_data"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct op_profile_response r = {.tool_data = 7};
        struct k8s_error err = {0};
        cr_assert_eq(decode(bad[i].file, &r, &err), -K8S_EPARSE, "%s", bad[i].file);
        cr_assert(strstr(err.message, bad[i].why), "%s: %s", bad[i].file, err.message);
        cr_assert_eq(r.tool_data, 7, "untouched on failure");
    }
}

Test(op_proto, unframe)
{
    static const uint8_t one[] = {0, 0, 0, 0, 2, 0x38, 0x01};
    static const uint8_t two[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t zipped[] = {1, 0, 0, 0, 0};
    static const uint8_t short_body[] = {0, 0, 0, 0, 9, 1};
    const uint8_t *msg = (const uint8_t *)"x";
    size_t n = 5;
    struct k8s_error err;
    cr_assert_eq(op_grpc_unframe(NULL, 0, &msg, &n, NULL), 0);
    cr_assert_null(msg);
    cr_assert_eq(n, 0);
    cr_assert_eq(op_grpc_unframe(one, sizeof(one), &msg, &n, NULL), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(msg, one + 5);
    cr_assert_eq(op_grpc_unframe(two, sizeof(two), &msg, &n, &err), -K8S_EPARSE);
    cr_assert(strstr(err.message, "after the message"), "%s", err.message);
    cr_assert_eq(op_grpc_unframe(zipped, sizeof(zipped), &msg, &n, &err), -K8S_EPARSE);
    cr_assert(strstr(err.message, "compressed"), "%s", err.message);
    cr_assert_eq(op_grpc_unframe(short_body, sizeof(short_body), &msg, &n, &err), -K8S_EPARSE);
    cr_assert_eq(op_grpc_unframe(one, 3, &msg, &n, &err), -K8S_EPARSE);
}

Test(op_proto, grpc_timeout_never_shorter_and_at_most_eight_digits)
{
    char t[16];
    op_grpc_timeout(120000, t);
    cr_assert_str_eq(t, "120000m");
    op_grpc_timeout(0, t);
    cr_assert_str_eq(t, "1m");
    op_grpc_timeout(99999999, t);
    cr_assert_str_eq(t, "99999999m");
    op_grpc_timeout(100000000, t);
    cr_assert_str_eq(t, "100000S");
    op_grpc_timeout(100000001, t);
    cr_assert_str_eq(t, "100001S", "rounded up, never shorter");
}

Test(op_proto, grpc_message_percent_decoding)
{
    char out[64];
    const char *in = "Another%20profiling%20session%20active.";
    op_grpc_message_decode(in, strlen(in), out, sizeof(out));
    cr_assert_str_eq(out, "Another profiling session active.");
    in = "bad%zzescape%0Aline%";
    op_grpc_message_decode(in, strlen(in), out, sizeof(out));
    cr_assert_str_eq(out, "bad%zzescape line%");
    op_grpc_message_decode("abcdef", 6, out, 4);
    cr_assert_str_eq(out, "abc");
    cr_assert_str_eq(op_grpc_code_name(13), "INTERNAL");
    cr_assert_str_eq(op_grpc_code_name(14), "UNAVAILABLE");
    cr_assert_str_eq(op_grpc_code_name(99), "UNKNOWN_CODE");
}
