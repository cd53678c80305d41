/*
 * libFuzzer target: the operator's reading of profiler replies — the gRPC
 * frame of a unary reply, the ProfileResponse decoder and grpc-message
 * percent-decoding. Every input must decode or be refused with an error;
 * on success the decoder's view must be self-consistent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "op_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct op_profile_response r;
    struct k8s_error err;
    /* as a bare message */
    if (op_proto_decode_response(data, size, &r, &err) == 0 && size == 0 &&
        (r.tool_data || r.empty_trace))
        abort();
    /* as a framed reply */
    const uint8_t *msg;
    size_t len;
    if (op_grpc_unframe(data, size, &msg, &len, &err) == 0) {
        if (size && (msg != data + 5 || len + 5 != size))
            abort();
        (void)op_proto_decode_response(msg, len, &r, &err);
    }
    /* as a grpc-message header value */
    char text[64];
    op_grpc_message_decode((const char *)data, size, text, sizeof(text));
    if (strlen(text) >= sizeof(text))
        abort();
    for (const char *p = text; *p; p++)
        if ((unsigned char)*p < 0x20)
            abort(); /* one line */
    return 0;
}
