// VmStructs: the layout of HotSpot's C++ types, from the tables libjvm.so exports for its
// serviceability agent. Read off the signal path only (agent load, VMInit); the signal-path code
// that uses the layout keeps the numbers it needs in a VmLayout of its own (vm_layout.h).
//
// What is read (data symbols of libjvm.so, version SUNWprivate_1.1, exported by every HotSpot
// since JDK 6; docs/JAVA.md "The VM walk's layout"):
//   gHotSpotVMTypes          type entries: name, sizeof; ends with a NULL name
//   gHotSpotVMStructs        field entries: type name, field name, type string, is-static,
//                            offset (instance fields) or address (static fields); ends with a
//                            NULL type name
//   gHotSpotVMIntConstants   name, int value; ends with a NULL name
// and, for each table, the descriptor symbols that say where an entry keeps each column and
// how far apart entries are (gHotSpotVMTypeEntryArrayStride, ...EntryTypeNameOffset, ...). The
// entry layout comes from those descriptors, never from constants here.
//
// Why a reader cannot crash: libjvm is the library that holds the JNI function table of the VM
// that loaded us (dladdr of a JNIEnv function, then dlopen RTLD_NOLOAD of that file), so no other
// JVM's table is read. Every symbol must exist; strides must be multiples of 8 and leave room for
// the columns at their offsets; walks stop after kMaxEntries entries. The tables are the
// library's own static data (written by its static initialisers, before any agent runs), so
// once the symbols exist the reads cannot fault and no FaultGuard is needed.
//
// Thread safety: Open and the lookups may run on any thread but a signal handler; a VmStructs
// is immutable once opened.
#ifndef CTXPROF_JNI_VM_STRUCTS_H_
#define CTXPROF_JNI_VM_STRUCTS_H_

#include <jni.h>

#include <cstdint>
#include <string>

#include "profiler/base/status.h"

namespace ctxprof {

class VmStructs {
 public:
  // A field of a HotSpot type as the struct table describes it.
  struct Field {
    // The field's C++ type as HotSpot spells it ("int", "int16_t", "address", "OopHandle", ...):
    // the width of a number field differs between JDKs (CodeBlob::_frame_complete_offset is an
    // int in 17, an int16_t in 25).
    std::string type;
    bool is_static = false;
    uint64_t offset = 0;            // instance field: bytes from the object's start
    const void* address = nullptr;  // static field: where it lives
  };

  // Finds libjvm through `jni` (any JNIEnv of the running VM) and its tables. Fails with
  // kUnavailable naming the missing piece (e.g. not a HotSpot VM).
  static StatusOr<VmStructs> Open(JNIEnv* jni);

  // sizeof(`type`) in the running VM, or 0 when the table does not list it.
  uint64_t TypeSize(const std::string& type) const;
  // `type`::`field`; false when the table does not list it.
  bool FindField(const std::string& type, const std::string& field, Field* out) const;
  // An int constant such as "frame::entry_frame_call_wrapper_offset"; false when not listed.
  bool IntConstant(const std::string& name, int32_t* value) const;

 private:
  static constexpr int kMaxEntries = 1 << 16;

  struct Table {
    const char* first = nullptr;  // the first entry
    uint64_t stride = 0;
    bool Valid(uint64_t column_end) const {
      return first != nullptr && stride != 0 && stride % 8 == 0 && column_end <= stride;
    }
  };

  Table types_;
  uint64_t type_name_ = 0;  // column offsets within an entry
  uint64_t type_size_ = 0;

  Table fields_;
  uint64_t field_type_name_ = 0;
  uint64_t field_name_ = 0;
  uint64_t field_type_string_ = 0;
  uint64_t field_is_static_ = 0;
  uint64_t field_offset_ = 0;
  uint64_t field_address_ = 0;

  Table int_constants_;
  uint64_t constant_name_ = 0;
  uint64_t constant_value_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_VM_STRUCTS_H_
