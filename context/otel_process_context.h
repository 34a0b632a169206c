// OpenTelemetry process context (OTEP 4719): the `OTEL_CTX` mapping that tells readers in other
// processes who this process is (resource attributes such as service.name) and how to decode
// the thread records of otel_thread_record.h (threadlocal.schema_version "tlsdesc_v1_dev" and
// threadlocal.attribute_key_map: element i = the name of attribute slot i).
//
// Layout: a 32-byte header {"OTEL_CTX", version 2, payload_size, monotonic_published_at_ns
// (CLOCK_BOOTTIME; 0 = being written), payload address} in a private mapping of a memfd named
// OTEL_CTX (an anonymous mapping when memfd is refused), MADV_DONTFORK, named with
// prctl(PR_SET_VMA_ANON_NAME, "OTEL_CTX") on every publish (errors ignored: old kernels refuse it,
// and eBPF readers hook the call itself). The payload is an opentelemetry.proto.processcontext.
// v1development.ProcessContext message on the heap, replaced (never freed: a reader may still
// copy it) on each update.
//
// Update protocol: timestamp = 0, full fence, payload and size, full fence, a timestamp greater
// than the last. A reader copies the payload between two reads of the timestamp and retries
// when they differ or it is 0, so it never decodes a mix of two payloads.
//
// Thread safety: Publish serializes on a mutex (one writer per process, as the OTEP requires).
// Not async-signal-safe.
#ifndef CTXPROF_CONTEXT_OTEL_PROCESS_CONTEXT_H_
#define CTXPROF_CONTEXT_OTEL_PROCESS_CONTEXT_H_

#include <string>
#include <utility>
#include <vector>

namespace ctxprof {

using OtelResource = std::vector<std::pair<std::string, std::string>>;

// Publishes (first call) or updates the process context. False with *error naming the system
// call and its error when neither a memfd nor an anonymous mapping could be made.
bool PublishOtelProcessContext(const OtelResource& resource,
                               const std::vector<std::string>& attribute_key_map,
                               std::string* error);

// The encoded ProcessContext message (for tests).
std::string EncodeOtelProcessContext(const OtelResource& resource,
                                     const std::vector<std::string>& attribute_key_map);

}  // namespace ctxprof

#endif  // CTXPROF_CONTEXT_OTEL_PROCESS_CONTEXT_H_
