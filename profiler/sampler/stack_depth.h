// Stack depth limits, shared by the sample layout (sample.h) and the option parser (options.h),
// which the ctxprof command links without the rest of the sampler.
#ifndef CTXPROF_PROFILER_SAMPLER_STACK_DEPTH_H_
#define CTXPROF_PROFILER_SAMPLER_STACK_DEPTH_H_

namespace ctxprof {

inline constexpr int kMaxStackDepth = 2048;  // upper bound of the depth= option
inline constexpr int kDefaultStackDepth = 128;

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_STACK_DEPTH_H_
