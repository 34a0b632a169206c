#include "jni/java_strings.h"

#include <vector>

#include "profiler/jfr/utf8.h"

namespace ctxprof {

namespace {

constexpr char32_t kReplacement = 0xFFFD;

void AppendUtf16(char32_t code_point, std::u16string* out) {
  if (code_point < 0x10000) {
    out->push_back(static_cast<char16_t>(code_point));
  } else {
    code_point -= 0x10000;
    out->push_back(static_cast<char16_t>(0xD800 | (code_point >> 10)));
    out->push_back(static_cast<char16_t>(0xDC00 | (code_point & 0x3FF)));
  }
}

bool IsHighSurrogate(uint16_t unit) { return unit >= 0xD800 && unit <= 0xDBFF; }
bool IsLowSurrogate(uint16_t unit) { return unit >= 0xDC00 && unit <= 0xDFFF; }

}  // namespace

std::string Utf16ToUtf8(const uint16_t* units, size_t length) {
  std::string out;
  out.reserve(length);
  for (size_t i = 0; i < length; i++) {
    const uint16_t unit = units[i];
    if (IsHighSurrogate(unit) && i + 1 < length && IsLowSurrogate(units[i + 1])) {
      AppendUtf8(0x10000 + ((unit - 0xD800) << 10) + (units[i + 1] - 0xDC00), &out);
      i++;
    } else if (IsHighSurrogate(unit) || IsLowSurrogate(unit)) {
      AppendUtf8(kReplacement, &out);
    } else {
      AppendUtf8(unit, &out);
    }
  }
  return out;
}

std::u16string Utf8ToUtf16(std::string_view utf8) {
  std::u16string out;
  out.reserve(utf8.size());
  size_t i = 0;
  while (i < utf8.size()) {
    const unsigned char lead = static_cast<unsigned char>(utf8[i]);
    int extra;
    char32_t code_point;
    char32_t minimum;
    if (lead < 0x80) {
      out.push_back(lead);
      i++;
      continue;
    } else if ((lead & 0xE0) == 0xC0) {
      extra = 1, code_point = lead & 0x1F, minimum = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      extra = 2, code_point = lead & 0x0F, minimum = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      extra = 3, code_point = lead & 0x07, minimum = 0x10000;
    } else {
      AppendUtf16(kReplacement, &out);  // a stray continuation byte or an invalid lead byte
      i++;
      continue;
    }
    size_t j = i + 1;
    for (; j < utf8.size() && j <= i + extra; j++) {
      const unsigned char next = static_cast<unsigned char>(utf8[j]);
      if ((next & 0xC0) != 0x80) break;
      code_point = (code_point << 6) | (next & 0x3F);
    }
    const bool complete = j == i + 1 + extra;
    const bool valid = complete && code_point >= minimum && code_point <= 0x10FFFF &&
                       !(code_point >= 0xD800 && code_point <= 0xDFFF);
    AppendUtf16(valid ? code_point : kReplacement, &out);
    i = j;
  }
  return out;
}

std::string FromJavaString(JNIEnv* env, jstring value) {
  if (value == nullptr) return {};
  const jsize length = env->GetStringLength(value);
  std::vector<jchar> units(static_cast<size_t>(length));
  env->GetStringRegion(value, 0, length, units.data());
  static_assert(sizeof(jchar) == sizeof(uint16_t), "jchar is a UTF-16 unit");
  return Utf16ToUtf8(reinterpret_cast<const uint16_t*>(units.data()), units.size());
}

jstring ToJavaString(JNIEnv* env, std::string_view utf8) {
  const std::u16string units = Utf8ToUtf16(utf8);
  return env->NewString(reinterpret_cast<const jchar*>(units.data()),
                        static_cast<jsize>(units.size()));
}

}  // namespace ctxprof
