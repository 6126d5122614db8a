#include "util/sha256.h"

#include <openssl/evp.h>

#include "util/check.h"

namespace pstrain {

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  PS_CHECK(EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(),
                      nullptr) == 1)
      << "OpenSSL's SHA-256 failed";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

bool IsSha256Hex(std::string_view text) {
  if (text.size() != 64)
    return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  }
  return true;
}

}  // namespace pstrain
