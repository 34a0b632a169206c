// UTF-8 encoding of one code point, shared by the JFR reader (JFR char-array strings) and the
// JNI layer (Java strings), which both turn UTF-16 into the UTF-8 the rest of ctxprof stores.
#ifndef CTXPROF_PROFILER_JFR_UTF8_H_
#define CTXPROF_PROFILER_JFR_UTF8_H_

#include <string>

namespace ctxprof {

// Appends `code_point` (<= 0x10FFFF; surrogates are the caller's business) as 1-4 UTF-8 bytes.
void AppendUtf8(char32_t code_point, std::string* out);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_UTF8_H_
