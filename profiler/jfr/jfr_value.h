// JfrValue: one decoded JFR value (null, integer, float, string, object or array), and the
// metadata types that describe objects (JfrClass, JfrField). Produced by JfrReader.
//
// Values are immutable and share their strings and children (shared_ptr), so copying one is
// cheap; const access from several threads is safe.
#ifndef CTXPROF_PROFILER_JFR_JFR_VALUE_H_
#define CTXPROF_PROFILER_JFR_JFR_VALUE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ctxprof {

struct JfrField {
  std::string name;
  uint32_t type_id = 0;
  bool pooled = false;      // constantPool attribute present
  bool array = false;       // dimension="1"
  bool contextual = false;  // @jdk.jfr.Contextual
  // The unit of a number: @jdk.jfr.Timespan's value ("TICKS", "NANOSECONDS", "MILLISECONDS"...)
  // or @jdk.jfr.DataAmount's ("BYTES", "BITS"); "" when it has neither.
  std::string timespan;
  std::string data_amount;
};

struct JfrClass {
  uint32_t id = 0;
  std::string name;
  std::string super_type;
  bool simple = false;  // simpleType attribute present
  std::vector<JfrField> fields;

  bool is_event() const { return super_type == "jdk.jfr.Event"; }
  int FieldIndex(std::string_view field_name) const;  // -1 when absent
};

class JfrValue {
 public:
  enum class Kind : uint8_t { kNull, kInteger, kFloat, kString, kObject, kArray };

  JfrValue() = default;
  static JfrValue Integer(int64_t value);
  static JfrValue Float(double value);
  static JfrValue String(std::string value);
  static JfrValue Object(const JfrClass* type, std::vector<JfrValue> fields);
  static JfrValue Array(std::vector<JfrValue> elements);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  int64_t integer() const { return kind_ == Kind::kInteger ? integer_ : 0; }
  double floating() const { return kind_ == Kind::kFloat ? floating_ : 0; }
  // "" for anything but a string.
  const std::string& string() const;
  // The object's class; nullptr for non-objects.
  const JfrClass* type() const { return kind_ == Kind::kObject ? type_ : nullptr; }
  // An object's field by name; a null value when absent or not an object.
  const JfrValue& Field(std::string_view name) const;
  // An object's fields in declaration order, or an array's elements.
  const std::vector<JfrValue>& items() const;

 private:
  friend class JfrReader;
  Kind kind_ = Kind::kNull;
  int64_t integer_ = 0;
  double floating_ = 0;
  const JfrClass* type_ = nullptr;
  std::shared_ptr<const std::string> string_;
  std::shared_ptr<const std::vector<JfrValue>> items_;
  // Unresolved constant-pool reference (only while a chunk is being parsed).
  bool reference_ = false;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_VALUE_H_
