// The 68-byte JFR chunk header's layout (big-endian fixed-width fields), shared by the writers
// of chunks: JfrChunkWriter and CopyChunks.
#ifndef CTXPROF_PROFILER_JFR_JFR_CHUNK_HEADER_H_
#define CTXPROF_PROFILER_JFR_JFR_CHUNK_HEADER_H_

#include <cstddef>
#include <cstdint>

namespace ctxprof {

inline constexpr size_t kChunkHeaderSize = 68;
inline constexpr size_t kChunkSizeOffset = 8;           // u64: bytes of the chunk, header included
inline constexpr size_t kChunkCheckpointOffset = 16;    // u64: the newest checkpoint's offset
inline constexpr size_t kChunkMetadataOffset = 24;      // u64: the metadata record's offset
inline constexpr size_t kChunkStartNanosOffset = 32;    // u64: epoch nanoseconds
inline constexpr size_t kChunkDurationOffset = 40;      // u64: nanoseconds
inline constexpr size_t kChunkStartTicksOffset = 48;    // u64
inline constexpr size_t kChunkGenerationOffset = 64;    // u8: 0 finished, 1..254 in progress
inline constexpr size_t kChunkFlagsOffset = 66;         // u16
inline constexpr uint8_t kChunkGenerationLocked = 255;  // the header is being rewritten
inline constexpr uint16_t kChunkFlagCompressedInts = 1;
inline constexpr uint16_t kChunkFlagFinal = 2;  // the last chunk of a recording

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_CHUNK_HEADER_H_
