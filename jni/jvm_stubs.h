// JvmStubs: the names of code the JVM generates outside Java methods, for the JFR frame
// resolver: StubRoutines such as the intrinsics (the SHA-256 compressor
// "sha256_implCompressMB", array copies, CRC32), adapters and the interpreter's pieces, as JVMTI
// DynamicCodeGenerated announces them (name, start, length). A sample interrupted in such code
// gets it as its leaf frame (JavaStackWalker::Walk), named "[stub].<name>" like async-profiler's
// stub frames; without this table it would be an unnamed address. The JVM never frees this code,
// so an entry stays true for the VM's life.
//
// Thread safety: Add and Lookup are thread-safe (one mutex); never call them from a signal
// handler.
#ifndef CTXPROF_JNI_JVM_STUBS_H_
#define CTXPROF_JNI_JVM_STUBS_H_

#include <jni.h>

#include <cstdint>
#include <string>

namespace ctxprof {

class JvmStubs {
 public:
  // Records the code at [address, address + length); a later entry at the same address
  // replaces the earlier one. Ignores an empty range or a null name.
  static void Add(const char* name, const void* address, jint length);
  // The name of the stub whose code contains `pc`; false when none does.
  static bool Lookup(uint64_t pc, std::string* name);
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JVM_STUBS_H_
