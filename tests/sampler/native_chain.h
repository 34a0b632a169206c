// Ground truth for the DWARF stack walker: a call chain compiled WITHOUT frame pointers
// (-O2 -fomit-frame-pointer, tests/sampler/BUILD.bazel), so only unwind tables find its callers:
//
//   ChainOuter -> ChainMiddle -> ChainInner -> ChainLeaf -> at_leaf(argument), repeatedly
//
// ChainLeaf computes for a while, then calls `at_leaf`, and again while it returns true: samples
// land in ChainLeaf's own loop or under the callback (which may raise a signal or walk the stack
// itself). Each level has a frame of a different shape: ChainMiddle allocates a variable-length
// array (the compiler then keeps its CFA in rbp), ChainInner keeps a fixed array on the stack.
#ifndef CTXPROF_TESTS_SAMPLER_NATIVE_CHAIN_H_
#define CTXPROF_TESTS_SAMPLER_NATIVE_CHAIN_H_

#include <cstdint>

namespace ctxprof::testing {

using AtLeaf = bool (*)(void* argument);

uint64_t ChainOuter(AtLeaf at_leaf, void* argument);

// The chain's functions, leaf first, as the symbolizer names them (FrameIs matches them).
inline constexpr const char* kChainLeafFirst[] = {
    "ctxprof::testing::ChainLeaf", "ctxprof::testing::ChainInner", "ctxprof::testing::ChainMiddle",
    "ctxprof::testing::ChainOuter"};

}  // namespace ctxprof::testing

#endif  // CTXPROF_TESTS_SAMPLER_NATIVE_CHAIN_H_
