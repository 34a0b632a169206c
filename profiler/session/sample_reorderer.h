// SampleReorderer: gives the JFR writer each thread's samples in tick order.
//
// The writer turns runs of same-context samples (and runtime events) of a thread into
// ctxprof.Context intervals and needs those records in time order, but the sample buffer hands
// records over in slot order: a drain that wraps around the ring, or a handler interrupted by
// another signal's handler (cpu and wall together), publishes a later sample before an earlier one.
// The reorderer holds samples back and releases them sorted by ticks once they are older than a
// horizon the caller chooses (now minus a window longer than any handler can take to publish), so a
// late sample is still sorted into place. Samples with equal ticks keep their arrival order.
//
// Memory: a held sample is stored as the sample buffer stores it (sample_buffer.h): the
// SampleRecord header followed by only its frame_count frames, in an arena of records; the sort
// moves 24-byte index entries, and a release hands the writer the arena's record itself (no
// copy). After a release the kept records are copied into a second arena and the two swap, so
// both keep their capacity: in steady state nothing is allocated and no fresh page is touched
// (why: docs/SAMPLER.md, "The background thread's profile").
// Adding during a release: `emit` may call Add (the session drains the sample buffer between the
// records it writes, session.h "Draining"). Such a record goes into the spare arena, which the
// release leaves alone until its emitting is done and then fills with the kept records, and is
// held for a later Release: the record `emit` is reading stays where it is.
// Thread safety: none; the recording's one consumer thread uses it.
#ifndef CTXPROF_PROFILER_SESSION_SAMPLE_REORDERER_H_
#define CTXPROF_PROFILER_SESSION_SAMPLE_REORDERER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "profiler/sampler/sample.h"

namespace ctxprof {

class SampleReorderer {
 public:
  SampleReorderer();

  void Add(const SampleRecord& record);
  // Calls `emit` for every held sample with ticks <= `horizon`, oldest first, and forgets them.
  // The record passed to `emit` is valid only during the call. Records Add()ed by `emit` are
  // held, not emitted by this call.
  void Release(uint64_t horizon, const std::function<void(const SampleRecord&)>& emit);
  // Records held and not emitted yet (during a release too).
  size_t held() const { return held_.size() - emitted_ + added_while_releasing_.size(); }

 private:
  // An allocator whose value-construction leaves words uninitialized, so that an append's
  // resize() does not zero what memcpy overwrites next (docs/SAMPLER.md, "The background
  // thread's profile").
  struct UninitializedWords : std::allocator<uint64_t> {
    template <typename Other>
    struct rebind {
      using other = UninitializedWords;
    };
    void construct(uint64_t* word) { ::new (static_cast<void*>(word)) uint64_t; }
  };
  using Arena = std::vector<uint64_t, UninitializedWords>;

  struct Held {
    uint64_t ticks;
    uint64_t arrival;
    size_t offset;  // of the record in arena_, in words
  };

  std::vector<Held> held_;
  Arena arena_;  // records, each 8-byte aligned (SampleRecord's alignment)
  Arena spare_;  // the next arena_ after a release; empty, with capacity
  // Records added while a release emits: their offsets are in spare_ (see Adding during a release).
  std::vector<Held> added_while_releasing_;
  bool releasing_ = false;
  size_t emitted_ = 0;  // by the release in progress
  uint64_t arrivals_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SESSION_SAMPLE_REORDERER_H_
