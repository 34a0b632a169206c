#include "profiler/jfr/jfr_value.h"

namespace ctxprof {

namespace {

const std::vector<JfrValue>& EmptyItems() {
  static const std::vector<JfrValue>* empty = new std::vector<JfrValue>();
  return *empty;
}

const JfrValue& NullValue() {
  static const JfrValue* null = new JfrValue();
  return *null;
}

}  // namespace

int JfrClass::FieldIndex(std::string_view field_name) const {
  for (size_t i = 0; i < fields.size(); i++) {
    if (fields[i].name == field_name) return static_cast<int>(i);
  }
  return -1;
}

JfrValue JfrValue::Integer(int64_t value) {
  JfrValue v;
  v.kind_ = Kind::kInteger;
  v.integer_ = value;
  return v;
}

JfrValue JfrValue::Float(double value) {
  JfrValue v;
  v.kind_ = Kind::kFloat;
  v.floating_ = value;
  return v;
}

JfrValue JfrValue::String(std::string value) {
  JfrValue v;
  v.kind_ = Kind::kString;
  v.string_ = std::make_shared<const std::string>(std::move(value));
  return v;
}

JfrValue JfrValue::Object(const JfrClass* type, std::vector<JfrValue> fields) {
  JfrValue v;
  v.kind_ = Kind::kObject;
  v.type_ = type;
  v.items_ = std::make_shared<const std::vector<JfrValue>>(std::move(fields));
  return v;
}

JfrValue JfrValue::Array(std::vector<JfrValue> elements) {
  JfrValue v;
  v.kind_ = Kind::kArray;
  v.items_ = std::make_shared<const std::vector<JfrValue>>(std::move(elements));
  return v;
}

const std::string& JfrValue::string() const {
  static const std::string* empty = new std::string();
  return kind_ == Kind::kString ? *string_ : *empty;
}

const JfrValue& JfrValue::Field(std::string_view name) const {
  if (kind_ != Kind::kObject) return NullValue();
  const int index = type_->FieldIndex(name);
  if (index < 0 || static_cast<size_t>(index) >= items_->size()) return NullValue();
  return (*items_)[index];
}

const std::vector<JfrValue>& JfrValue::items() const {
  return (kind_ == Kind::kObject || kind_ == Kind::kArray) ? *items_ : EmptyItems();
}

}  // namespace ctxprof
