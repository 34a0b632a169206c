// An OpenTelemetry context reader for ANOTHER process, written from OTEP 4947 (thread context)
// and OTEP 4719 (process context) alone, the way an external profiler reads what
// otelcontext=true publishes (docs/JAVA.md "OpenTelemetry readers"):
//   * process context: the mapping named OTEL_CTX in /proc/PID/maps, its 32-byte header, the
//     protobuf payload read between two reads of the timestamp (a payload being replaced is
//     read again);
//   * thread context: otel_thread_ctx_v1 in the mapped libctxprof.so's .dynsym (STT_TLS, 8
//     bytes), its R_X86_64_TLSDESC GOT slot, the thread's fs base from PTRACE_GETREGS while the
//     thread is ptrace-stopped (the OTEP reads only a stopped thread), then the static-TLS offset
//     or the DTV walk, the pointer, the record.
// Used by `ctxprof otel PID` and tests/otel's reader test.
//
// Thread safety: plain functions; ReadThreadContext ptrace-attaches to the thread, so one caller
// per target thread at a time. Every read of the target goes through process_vm_readv: an
// address that is not mapped is a failed read, never a fault in the reader.
#ifndef CTXPROF_TOOLS_OTEL_READER_H_
#define CTXPROF_TOOLS_OTEL_READER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/base/status.h"

namespace ctxprof::tools {

// The OTEP 4719 context: resource attributes (string values) and the other attributes
// (threadlocal.schema_version, threadlocal.attribute_key_map: strings or arrays of strings).
struct ProcessContextView {
  std::map<std::string, std::string> resource;
  std::map<std::string, std::vector<std::string>> attributes;
};
StatusOr<ProcessContextView> ReadProcessContext(pid_t pid);

// Where otel_thread_ctx_v1's TLS descriptor (the TLSDESC GOT slot) is in the target.
struct TlsSlot {
  uint64_t descriptor = 0;
};
// From the libctxprof.so mapped in `pid` (its first mapping, offset 0).
StatusOr<TlsSlot> FindThreadContextSlot(pid_t pid);
// From the ELF file `path` loaded at `base`.
StatusOr<TlsSlot> FindTlsDescriptor(const std::string& path, uint64_t base);

struct ThreadView {
  bool present = false;      // pointer non-null and valid == 1
  bool dynamic_tls = false;  // found through the DTV (the OTEP's reader must support it)
  std::string trace, span;   // lowercase hex
  std::map<int, std::string> attributes;  // key index -> value (last one wins)
};
// Stops `tid` with PTRACE_SEIZE + PTRACE_INTERRUPT, reads its record, detaches.
StatusOr<ThreadView> ReadThreadContext(pid_t pid, pid_t tid, const TlsSlot& slot);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_OTEL_READER_H_
