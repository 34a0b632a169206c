#include "bench/sampler/spin_chain.h"

#define SPIN_CHAIN_NAME SpinWithFramePointers
#include "bench/sampler/spin_chain.inc"
