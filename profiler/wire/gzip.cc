#include "profiler/wire/gzip.h"

#include <zlib.h>

namespace ctxprof {

bool Gzip(std::string_view data, int level, std::string* out, std::string* error) {
  z_stream stream{};
  // 15 window bits + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    *error = "zlib: deflateInit2 failed";
    return false;
  }
  out->resize(deflateBound(&stream, data.size()));
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(&(*out)[0]);
  stream.avail_out = static_cast<uInt>(out->size());
  const int result = deflate(&stream, Z_FINISH);
  out->resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) {
    *error = "zlib: deflate failed (" + std::to_string(result) + ")";
    return false;
  }
  return true;
}

}  // namespace ctxprof
