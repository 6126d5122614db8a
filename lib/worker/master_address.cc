#include "worker/master_address.h"

#include "net/address.h"
#include "rdzv/master_key.h"

namespace pstrain::worker {

MasterAddress::MasterAddress(std::string host, int port, rdzv::MasterKey* key,
                             std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), key_(key), timeout_(timeout) {}

Status MasterAddress::Find(bool again, double dead_after, std::string* host,
                           int* port) {
  *host = host_;
  *port = port_;
  if (key_ == nullptr)
    return Status::Ok();
  const auto wait =
      again ? std::chrono::milliseconds(2 * rdzv::LeaseFor(dead_after))
            : timeout_;
  PS_ASSIGN_OR_RETURN(rdzv::MasterKey::Master master,
                      key_->Find(wait, again ? found_ : ""));
  found_ = master.address;
  return net::SplitAddress(master.address, host, port);
}

}  // namespace pstrain::worker
