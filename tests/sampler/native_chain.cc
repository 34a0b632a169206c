#include "tests/sampler/native_chain.h"

#include <alloca.h>

namespace ctxprof::testing {

// noipa: no inlining, cloning or interprocedural shortcuts (a clone with a constant alloca size
// would lose the frame pointer). Every function uses its callee's result afterwards, so no call
// becomes a tail call and every level keeps a frame.

__attribute__((noipa)) uint64_t ChainLeaf(AtLeaf at_leaf, void* argument) {
  uint64_t value = 1;
  do {
    for (int i = 0; i < 20000; ++i) {
      value = value * 6364136223846793005ull + 1442695040888963407ull;
      asm volatile("" : "+r"(value));
    }
  } while (at_leaf(argument));
  return value;
}

__attribute__((noipa)) uint64_t ChainInner(AtLeaf at_leaf, void* argument) {
  volatile uint64_t scratch[6] = {1, 2, 3, 4, 5, 6};
  const uint64_t result = ChainLeaf(at_leaf, argument);
  return result + scratch[result & 3];
}

__attribute__((noipa)) uint64_t ChainMiddle(AtLeaf at_leaf, void* argument, int words) {
  // A dynamic allocation: the compiler keeps this frame's CFA in rbp (CFA = rbp + 16).
  auto* scratch = static_cast<volatile uint64_t*>(alloca(sizeof(uint64_t) * words));
  scratch[0] = 7;
  const uint64_t result = ChainInner(at_leaf, argument);
  return result + scratch[0];
}

__attribute__((noipa)) uint64_t ChainOuter(AtLeaf at_leaf, void* argument) {
  const uint64_t result = ChainMiddle(at_leaf, argument, 8);
  return result + 1;
}

}  // namespace ctxprof::testing
