// Conversions between Java strings (UTF-16) and the UTF-8 the native side stores.
//
// JNI's GetStringUTFChars/NewStringUTF use *modified* UTF-8 (NUL as C0 80, supplementary
// characters as two 3-byte surrogates), and NewStringUTF given bytes that are not valid modified
// UTF-8 can abort the JVM. So values cross the boundary as UTF-16 and are converted here: real
// UTF-8 in both directions, with every malformed sequence (lone surrogate, invalid byte)
// replaced by U+FFFD rather than passed on.
#ifndef CTXPROF_JNI_JAVA_STRINGS_H_
#define CTXPROF_JNI_JAVA_STRINGS_H_

#include <jni.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace ctxprof {

std::string Utf16ToUtf8(const uint16_t* units, size_t length);
std::u16string Utf8ToUtf16(std::string_view utf8);

// The UTF-8 bytes of a Java string; empty for null.
std::string FromJavaString(JNIEnv* env, jstring value);
// A new Java string from UTF-8 bytes (nullptr if the JVM is out of memory: an exception is then
// pending).
jstring ToJavaString(JNIEnv* env, std::string_view utf8);

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JAVA_STRINGS_H_
