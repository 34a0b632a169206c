#include "jni/vm_structs.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>

namespace ctxprof {
namespace {

// dlopen handle of the library that defines the running VM's JNI functions, or nullptr.
void* OpenLibjvm(JNIEnv* jni, std::string* error) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(jni->functions->GetVersion), &info) == 0 ||
      info.dli_fname == nullptr) {
    *error = "cannot tell which library implements the JVM's JNI functions (dladdr failed)";
    return nullptr;
  }
  void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) *error = std::string("cannot reopen ") + info.dli_fname + ": " + dlerror();
  return handle;
}

// The value of the uint64_t or pointer data symbol `name`; false when it is not exported.
template <typename T>
bool ReadSymbol(void* handle, const char* name, T* out, std::string* error) {
  const void* address = dlsym(handle, name);
  if (address == nullptr) {
    *error = std::string("the JVM does not export ") + name + " (not HotSpot?)";
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

bool VmStructs::Open(JNIEnv* jni, VmStructs* out, std::string* error) {
  void* handle = OpenLibjvm(jni, error);
  if (handle == nullptr) return false;
  VmStructs t;
  const bool found =
      ReadSymbol(handle, "gHotSpotVMTypes", &t.types_.first, error) &&
      ReadSymbol(handle, "gHotSpotVMTypeEntryArrayStride", &t.types_.stride, error) &&
      ReadSymbol(handle, "gHotSpotVMTypeEntryTypeNameOffset", &t.type_name_, error) &&
      ReadSymbol(handle, "gHotSpotVMTypeEntrySizeOffset", &t.type_size_, error) &&
      ReadSymbol(handle, "gHotSpotVMStructs", &t.fields_.first, error) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryArrayStride", &t.fields_.stride, error) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryTypeNameOffset", &t.field_type_name_, error) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryFieldNameOffset", &t.field_name_, error) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryTypeStringOffset", &t.field_type_string_, error) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryIsStaticOffset", &t.field_is_static_, error) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryOffsetOffset", &t.field_offset_, error) &&
      ReadSymbol(handle, "gHotSpotVMStructEntryAddressOffset", &t.field_address_, error) &&
      ReadSymbol(handle, "gHotSpotVMIntConstants", &t.int_constants_.first, error) &&
      ReadSymbol(handle, "gHotSpotVMIntConstantEntryArrayStride", &t.int_constants_.stride,
                 error) &&
      ReadSymbol(handle, "gHotSpotVMIntConstantEntryNameOffset", &t.constant_name_, error) &&
      ReadSymbol(handle, "gHotSpotVMIntConstantEntryValueOffset", &t.constant_value_, error);
  dlclose(handle);  // drops only the reference RTLD_NOLOAD took; libjvm stays loaded
  if (!found) return false;
  auto end_of = [](std::initializer_list<uint64_t> columns, uint64_t width) {
    return std::max(columns) + width;
  };
  if (!t.types_.Valid(end_of({t.type_name_, t.type_size_}, 8)) ||
      !t.fields_.Valid(end_of({t.field_type_name_, t.field_name_, t.field_type_string_,
                               t.field_is_static_, t.field_offset_, t.field_address_},
                              8)) ||
      !t.int_constants_.Valid(end_of({t.constant_name_}, 8)) ||
      !t.int_constants_.Valid(end_of({t.constant_value_}, 4))) {
    *error = "the JVM's type and field tables have an unexpected layout (strides " +
             std::to_string(t.types_.stride) + ", " + std::to_string(t.fields_.stride) + ", " +
             std::to_string(t.int_constants_.stride) + ")";
    return false;
  }
  *out = t;
  return true;
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
