#include "bench/sampler/spin_chain.h"

#define SPIN_CHAIN_NAME SpinWithoutFramePointers
#include "bench/sampler/spin_chain.inc"
