#include "profiler/wire/gzip.h"

#include <zlib.h>

namespace ctxprof {

StatusOr<std::string> Gzip(std::string_view data, int level) {
  z_stream stream{};
  // 15 window bits + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Status::Unavailable("zlib: deflateInit2 failed", 0);
  }
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(&out[0]);
  stream.avail_out = static_cast<uInt>(out.size());
  const int result = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) {
    return Status::Unavailable("zlib: deflate failed (" + std::to_string(result) + ")", 0);
  }
  return out;
}

}  // namespace ctxprof
