/*
 * op_proto — the wire of tensorflow.ProfilerService/Profile (DESIGN §4.3):
 * a hand-encoded ProfileRequest in its gRPC length-prefixed frame, a
 * validating ProfileResponse decoder, and the small gRPC text formats
 * (grpc-timeout, percent-encoded grpc-message, status code names).
 *
 * ProfileRequest: 1 duration_ms, 2 max_events (1000000), 4 opts,
 * 5 repository_root, 6 session_id, 7 host_name. ProfileOptions:
 * 1 include_dataset_ops (true), 2 host_tracer_level, 3 device_tracer_level,
 * 4 python_tracer_level (the request's levels; a 0 is left out, as
 * protobuf leaves out a proto3 field at its default), 5 version (1:
 * without it the server ignores every option), 8 start_timestamp_ns,
 * 9 duration_ms (the one the server waits on). ProfileResponse:
 * 6 tool_data (repeated message), 7 empty_trace, 8 xspace.
 *
 * Thread-safety: all functions are reentrant.
 */
#ifndef OP_PROTO_H
#define OP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_buf.h"
#include "k8s_err.h"

/* gRPC status codes (grpc/status.h). */
enum op_grpc_code {
    OP_GRPC_OK = 0,
    OP_GRPC_CANCELLED = 1,
    OP_GRPC_UNKNOWN = 2,
    OP_GRPC_INVALID_ARGUMENT = 3,
    OP_GRPC_DEADLINE_EXCEEDED = 4,
    OP_GRPC_NOT_FOUND = 5,
    OP_GRPC_ALREADY_EXISTS = 6,
    OP_GRPC_PERMISSION_DENIED = 7,
    OP_GRPC_RESOURCE_EXHAUSTED = 8,
    OP_GRPC_FAILED_PRECONDITION = 9,
    OP_GRPC_ABORTED = 10,
    OP_GRPC_OUT_OF_RANGE = 11,
    OP_GRPC_UNIMPLEMENTED = 12,
    OP_GRPC_INTERNAL = 13,
    OP_GRPC_UNAVAILABLE = 14,
    OP_GRPC_DATA_LOSS = 15,
    OP_GRPC_UNAUTHENTICATED = 16,
};

#define OP_PROFILE_MAX_EVENTS 1000000

/* What the profiler records (ProfileOptions 2, 3, 4). */
struct op_tracer_levels {
    uint32_t host;   /* 0 off, 1 user TraceMe, 2 + high-level execution, 3 verbose */
    uint32_t device; /* 0 off, 1 on */
    uint32_t python; /* 0 off, 1 on */
};

/* jax.profiler's own client's levels (DefaultPythonProfileOptions): what a
 * capture that sets none sends. Levels are sent as given: a zeroed struct
 * turns every tracer off. */
#define OP_TRACER_HOST_DEFAULT   2
#define OP_TRACER_DEVICE_DEFAULT 1
#define OP_TRACER_PYTHON_DEFAULT 1
#define OP_TRACER_LEVELS_DEFAULT                                                                   \
    ((struct op_tracer_levels){OP_TRACER_HOST_DEFAULT, OP_TRACER_DEVICE_DEFAULT,                   \
                               OP_TRACER_PYTHON_DEFAULT})

struct op_profile_request {
    uint64_t duration_ms; /* fields 1 and opts.9 alike */
    struct op_tracer_levels levels;
    uint64_t start_timestamp_ns; /* opts.8; 0: start at once */
    const char *repository_root; /* 5 */
    const char *session_id;      /* 6 */
    const char *host_name;       /* 7; NULL or "": omitted (the server names the file) */
};

/* Append the request as one gRPC message frame (flag 0, 4-byte big-endian
 * length, the message) to out. k8s_buf errors. */
int op_proto_encode_request(const struct op_profile_request *rq,
                            struct k8s_buf *out) K8S_MUST_CHECK;

struct op_profile_response {
    size_t tool_data; /* ProfileToolData entries */
    bool empty_trace;
    bool has_xspace;
};

/* Decode a ProfileResponse message (not framed; a zero-length message is
 * a valid, non-empty trace). Unknown fields are skipped by wire type;
 * -K8S_EPARSE with reterr for truncated varints or lengths, group wire
 * types, field 0, or a known field with the wrong wire type. *ret is
 * untouched on failure. */
int op_proto_decode_response(const void *msg, size_t n, struct op_profile_response *ret,
                             struct k8s_error *reterr) K8S_MUST_CHECK;

/* The message of a unary reply body: *ret_msg and *ret_len (borrowed from body)
 * for one frame, NULL/0 for an empty body. -K8S_EPARSE for a compressed
 * frame (we never ask for compression), a truncated frame, or more than
 * one message. */
int op_grpc_unframe(const void *body, size_t n, const uint8_t **ret_msg, size_t *ret_len,
                    struct k8s_error *reterr) K8S_MUST_CHECK;

/* grpc-timeout value for ms (at most 8 digits: milliseconds, else seconds,
 * else minutes, else hours), e.g. "120000m"; out gets NUL-terminated. */
void op_grpc_timeout(int64_t ms, char out[static 16]);

/* Decode a percent-encoded grpc-message into out (NUL-terminated, cut at
 * cap - 1 bytes; control bytes become spaces so it fits on one line). */
void op_grpc_message_decode(const char *in, size_t n, char *out, size_t cap);

/* "OK", "CANCELLED", ... "UNAUTHENTICATED"; "UNKNOWN_CODE" for a number
 * outside 0..16. Static string. */
const char *op_grpc_code_name(int code);

#endif
