// The native call chains the handler cost benchmark samples: a thread spins at the bottom of a
// recursion of about `levels` frames (four functions calling each other in turn, so that every
// frame needs its own unwind rule, as in real stacks) until `stop` is set. Two builds of the same
// code, so walkers are compared on the code they are meant for:
//   SpinWithFramePointers     compiled with the repository's -fno-omit-frame-pointer
//   SpinWithoutFramePointers  compiled -O2 -fomit-frame-pointer (as Debian's libraries and most
//                             release builds are): only a DWARF walker finds its callers
#ifndef CTXPROF_BENCH_SAMPLER_SPIN_CHAIN_H_
#define CTXPROF_BENCH_SAMPLER_SPIN_CHAIN_H_

#include <atomic>
#include <cstdint>

namespace ctxprof::bench {

uint64_t SpinWithFramePointers(int levels, const std::atomic<bool>* stop);
uint64_t SpinWithoutFramePointers(int levels, const std::atomic<bool>* stop);

}  // namespace ctxprof::bench

#endif  // CTXPROF_BENCH_SAMPLER_SPIN_CHAIN_H_
