#include "jni/vm_structs.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>

namespace ctxprof {
namespace {

// dlopen handle of the library that defines the running VM's JNI functions. dladdr and dlopen
// report no errno (dlerror's text says it all).
StatusOr<void*> OpenLibjvm(JNIEnv* jni) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(jni->functions->GetVersion), &info) == 0 ||
      info.dli_fname == nullptr) {
    return Status::Unavailable(
        "cannot tell which library implements the JVM's JNI functions (dladdr failed)", 0);
  }
  void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) {
    return Status::Unavailable(std::string("cannot reopen ") + info.dli_fname + ": " + dlerror(),
                               0);
  }
  return handle;
}

// The value of the uint64_t or pointer data symbol `name`; false, with *missing naming it (the
// first one only), when it is not exported.
template <typename T>
bool ReadSymbol(void* handle, const char* name, T* out, const char** missing) {
  const void* address = dlsym(handle, name);
  if (address == nullptr) {
    if (*missing == nullptr) *missing = name;
    return false;
  }
  memcpy(out, address, sizeof(T));
  return true;
}

template <typename T>
T Column(const char* entry, uint64_t offset) {
  T value;
  memcpy(&value, entry + offset, sizeof(T));
  return value;
}

}  // namespace

StatusOr<VmStructs> VmStructs::Open(JNIEnv* jni) {
  StatusOr<void*> opened = OpenLibjvm(jni);
  if (!opened.ok()) return opened.status();
  void* handle = opened.value();
  VmStructs t;
  const char* missing = nullptr;
  const bool found =
      ReadSymbol(handle, "gHotSpotVMTypes", &t.types_.first, &missing) &&
      ReadSymbol(handle, "gHotSpotVMTypeEntryArrayStride", &t.types_.stride, &missing) &&
      ReadSymbol(handle, "gHotSpotVMTypeEntryTypeNameOffset", &t.type_name_, &missing) &&
      ReadSymbol(handle, "gHotSpotVMTypeEntrySizeOffset", &t.type_size_, &missing) &&
      ReadSymbol(handle, "gHotSpotVMStructs", &t.fields_.first, &missing) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryArrayStride", &t.fields_.stride, &missing) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryTypeNameOffset", &t.field_type_name_, &missing) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryFieldNameOffset", &t.field_name_, &missing) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryTypeStringOffset", &t.field_type_string_,
                 &missing) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryIsStaticOffset", &t.field_is_static_, &missing) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryOffsetOffset", &t.field_offset_, &missing) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryAddressOffset", &t.field_address_, &missing) &&
      ReadSymbol(handle, "gHotSpotVMIntConstants", &t.int_constants_.first, &missing) &&
      ReadSymbol(handle, "gHotSpotVMIntConstantEntryArrayStride", &t.int_constants_.stride,
                 &missing) &&
      ReadSymbol(handle, "gHotSpotVMIntConstantEntryNameOffset", &t.constant_name_, &missing) &&
      ReadSymbol(handle, "gHotSpotVMIntConstantEntryValueOffset", &t.constant_value_, &missing);
  dlclose(handle);  // drops only the reference RTLD_NOLOAD took; libjvm stays loaded
  if (!found) {
    return Status::Unavailable(
        std::string("the JVM does not export ") + missing + " (not HotSpot?)", 0);
  }
  auto end_of = [](std::initializer_list<uint64_t> columns, uint64_t width) {
    return std::max(columns) + width;
  };
  if (!t.types_.Valid(end_of({t.type_name_, t.type_size_}, 8)) ||
      !t.fields_.Valid(end_of({t.field_type_name_, t.field_name_, t.field_type_string_,
                               t.field_is_static_, t.field_offset_, t.field_address_},
                              8)) ||
      !t.int_constants_.Valid(end_of({t.constant_name_}, 8)) ||
      !t.int_constants_.Valid(end_of({t.constant_value_}, 4))) {
    return Status::Unavailable(
        "the JVM's type and field tables have an unexpected layout (strides " +
            std::to_string(t.types_.stride) + ", " + std::to_string(t.fields_.stride) + ", " +
            std::to_string(t.int_constants_.stride) + ")",
        0);
  }
  return t;
}

uint64_t VmStructs::TypeSize(const std::string& type) const {
  if (types_.first == nullptr) return 0;
  for (int i = 0; i < kMaxEntries; i++) {
    const char* entry = types_.first + static_cast<uint64_t>(i) * types_.stride;
    const char* name = Column<const char*>(entry, type_name_);
    if (name == nullptr) return 0;
    if (type == name) return Column<uint64_t>(entry, type_size_);
  }
  return 0;
}

bool VmStructs::FindField(const std::string& type, const std::string& field, Field* out) const {
  if (fields_.first == nullptr) return false;
  for (int i = 0; i < kMaxEntries; i++) {
    const char* entry = fields_.first + static_cast<uint64_t>(i) * fields_.stride;
    const char* type_name = Column<const char*>(entry, field_type_name_);
    if (type_name == nullptr) return false;
    const char* field_name = Column<const char*>(entry, field_name_);
    if (field_name == nullptr || type != type_name || field != field_name) continue;
    const char* type_string = Column<const char*>(entry, field_type_string_);
    out->type = type_string != nullptr ? type_string : "";
    out->is_static = Column<int32_t>(entry, field_is_static_) != 0;
    out->offset = out->is_static ? 0 : Column<uint64_t>(entry, field_offset_);
    out->address = out->is_static ? Column<const void*>(entry, field_address_) : nullptr;
    return true;
  }
  return false;
}

bool VmStructs::IntConstant(const std::string& name, int32_t* value) const {
  if (int_constants_.first == nullptr) return false;
  for (int i = 0; i < kMaxEntries; i++) {
    const char* entry = int_constants_.first + static_cast<uint64_t>(i) * int_constants_.stride;
    const char* constant = Column<const char*>(entry, constant_name_);
    if (constant == nullptr) return false;
    if (name == constant) {
      *value = Column<int32_t>(entry, constant_value_);
      return true;
    }
  }
  return false;
}

}  // namespace ctxprof
