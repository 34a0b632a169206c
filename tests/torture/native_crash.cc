// A deliberate application bug for fault_test.sh's "native crash" case: a JNI method that writes
// to address 16, as a null struct-member store in real native code would.
#include <jni.h>

extern "C" JNIEXPORT void JNICALL Java_io_ctxprof_torture_FaultWorkload_writeToAddress16(JNIEnv*,
                                                                                         jclass) {
  // volatile: the compiler must emit the store (a plain null store is UB it may drop).
  *reinterpret_cast<volatile int*>(16) = 1;
}
