#include "net/transport.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
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

}  // namespace pstrain::net
