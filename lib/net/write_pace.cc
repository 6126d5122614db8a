#include "net/write_pace.h"

#include "net/transport.h"

namespace pstrain::net {

void WritePace::SetSendWindow(uint64_t bytes) {
  if (bytes == window_bytes_)
    return;
  window_bytes_ = bytes;
  window_ = SetNotSentLowat(socket_.native_handle(), bytes);
}

}  // namespace pstrain::net
