#include "net/transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>

namespace pstrain::net {

const char* TransportName(Transport t) {
  switch (t) {
    case Transport::kAuto:
      return "auto";
    case Transport::kTcp:
      return "tcp";
    case Transport::kShm:
      return "shm";
  }
  return "?";
}

Result<Transport> ParseTransport(const std::string& text) {
  for (Transport t : {Transport::kAuto, Transport::kTcp, Transport::kShm}) {
    if (text == TransportName(t))
      return t;
  }
  return InvalidArgument("--transport '" + text +
                         "': expected auto, tcp or shm");
}

std::string HostIdentity() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(in, boot);
  struct stat ns {};
  if (boot.empty() || ::stat("/proc/self/ns/net", &ns) != 0)
    return "";
  return boot + "/net:" + std::to_string(ns.st_ino) +
         "/uid:" + std::to_string(::getuid());
}

bool SetNotSentLowat(int fd, uint64_t bytes) {
  const int lowat = static_cast<int>(
      std::min<uint64_t>(bytes, std::numeric_limits<int>::max()));
  return bytes > 0 && ::setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat,
                                   sizeof(lowat)) == 0;
}

}  // namespace pstrain::net
