// The hand-checkable workload of the ctxprof tool tests (see write_tools_recording.cc).
#ifndef CTXPROF_TESTS_TOOLS_TOOLS_WORKLOAD_H_
#define CTXPROF_TESTS_TOOLS_TOOLS_WORKLOAD_H_

#include <cstdint>

#include "tests/jfr/synthetic.h"

namespace ctxprof {

// 12 samples on threads 101 and 102, `spacing_ticks` apart from `first_ticks`:
//
//   #  tid kind stack (root first)                        endpoint   tenant
//   1  101 cpu  H1.method1;H2.method2;H4.method4          /checkout  acme
//   2  101 cpu  H1.method1;H2.method2;H4.method4          /checkout  acme
//   3  101 wall H1.method1;H2.method2;H5.method5          /checkout  acme
//   4  102 cpu  H1.method1;H3.method3;H6.method6          /search    acme
//   5  102 cpu  H1.method1;H3.method3;H1.method8;native3  /search    acme
//   6  102 wall H1.method1;H3.method3;H6.method6          /search    "a b;c=[x]%"
//   7  101 cpu  H1.method1;H2.method2;H5.method5          /checkout  globex
//   8  101 cpu  H1.method1;H1.größe_22                    (no context)
//   9  102 cpu  (empty stack)                             (no context)
//  10  102 wall H1.method1;H3.method3;H1.method8;native3  (unset)    acme
//  11  101 wall H1.method1;H2.method2;H4.method4          /checkout  globex
//  12  102 cpu  H1.method1;H3.method3;H6.method6          /search    acme
//
// Hn = com.example.svc.Handlern, native3 = libfake.so.native_function_3. Every context has a
// trace id and a span id.
Workload MakeToolsWorkload(uint64_t first_ticks, uint64_t spacing_ticks);

// The same stacks and contexts with runtime events instead, `spacing_ticks` apart (a wait's
// ticks are its end; waits are shorter than the spacing):
//
//   #  tid kind    stack  context               class                          amount
//   1  101 alloc   0      /checkout acme        [B                             1000 bytes
//   2  101 alloc   0      /checkout acme        java/lang/String               3000 bytes
//   3  102 alloc   2      /search acme          [B                              500 bytes
//   4  102 monitor 3      /search acme          java/lang/Object               2 ms
//   5  101 park    1      /checkout globex      ...ReentrantLock$NonfairSync   5 ms, timeout 1 ms
//   6  102 alloc   5      (no context)          [Ljava/lang/String;            7000 bytes
//   7  101 cpu     0      /checkout acme        (a CPU sample)
//
// `ticks_per_second` converts the waits' durations to ticks.
Workload MakeToolsEventWorkload(uint64_t first_ticks, uint64_t spacing_ticks,
                                uint64_t ticks_per_second);

}  // namespace ctxprof

#endif  // CTXPROF_TESTS_TOOLS_TOOLS_WORKLOAD_H_
