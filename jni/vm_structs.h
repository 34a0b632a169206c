// VmStructs: the sizes of HotSpot's C++ types, from the table libjvm.so exports for its
// serviceability agent. Read at agent load only, never in a signal handler.
//
// What is read (data symbols of libjvm.so, version SUNWprivate_1.1; exported by every HotSpot
// since JDK 6, seen on OpenJDK 17.0.21 and Temurin 25.0.3, and declared in JDK 21's
// vmStructs.cpp):
//   gHotSpotVMTypes                     address of the first type entry; the array ends with an
//                                       entry whose type name is NULL
//   gHotSpotVMTypeEntryArrayStride      bytes from one entry to the next (40 on 17 and 25)
//   gHotSpotVMTypeEntryTypeNameOffset   where an entry keeps its `const char*` type name
//   gHotSpotVMTypeEntrySizeOffset       where an entry keeps sizeof(type) as a uint64_t
// The entry layout comes from those descriptor symbols, never from constants here.
//
// How the reads are guarded: libjvm is the library that holds the JNI function table of the VM
// that loaded us (dladdr of a JNIEnv function, then dlopen RTLD_NOLOAD of that file), so no other
// JVM's table is read. Every symbol must exist; the stride must be a multiple of 8 and leave room
// for both fields at their offsets; the walk stops after kMaxTypes entries. The table is the
// library's own static data (written once by its static initialisers, before any agent runs),
// so once the symbols exist the reads cannot fault and no FaultGuard is needed.
//
// Why only types: the field table (gHotSpotVMStructs) does not list JavaThread's JNIEnv
// (_jni_environment) in JDK 17, 21 or 25, so java_thread_env.h measures its offset and uses
// the type sizes here to check the measurement.
//
// Thread safety: Open and TypeSize may run on any thread; a VmStructs is immutable once opened.
#ifndef CTXPROF_JNI_VM_STRUCTS_H_
#define CTXPROF_JNI_VM_STRUCTS_H_

#include <jni.h>

#include <cstdint>
#include <string>

namespace ctxprof {

class VmStructs {
 public:
  // Finds libjvm through `jni` (any JNIEnv of the running VM) and its type table. False with
  // *error naming the missing piece (e.g. not a HotSpot VM).
  static bool Open(JNIEnv* jni, VmStructs* out, std::string* error);

  // sizeof(`type`) in the running VM, or 0 when the table does not list it.
  uint64_t TypeSize(const std::string& type) const;

 private:
  static constexpr int kMaxTypes = 1 << 16;

  const char* types_ = nullptr;  // the first entry
  uint64_t stride_ = 0;
  uint64_t name_offset_ = 0;
  uint64_t size_offset_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_VM_STRUCTS_H_
