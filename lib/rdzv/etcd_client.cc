#include "rdzv/etcd_client.h"

#include <cstdlib>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

namespace pstrain::rdzv {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using nlohmann::json;

std::string Base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> FromBase64(const std::string& text) {
  std::string out(3 * (text.size() / 4) + 3, '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(text.data()),
                      static_cast<int>(text.size()));
  if (n < 0)
    return Corruption("etcd answered a value that is not base64");
  // EVP_DecodeBlock counts the padding's zero bytes too.
  size_t pad = 0;
  for (auto it = text.rbegin(); it != text.rend() && *it == '='; ++it)
    ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

// The gateway writes 64-bit integers as strings, and leaves out zeros.
int64_t Int(const json& object, const char* field) {
  const auto it = object.find(field);
  if (it == object.end())
    return 0;
  if (it->is_string())
    return std::strtoll(it->get_ref<const std::string&>().c_str(), nullptr, 10);
  return it->is_number_integer() ? it->get<int64_t>() : 0;
}

// A transaction that puts key = value under `lease` where the key was
// created at `revision` (0: where it does not exist).
std::string PutIfCreatedAt(const std::string& key, const std::string& value,
                           int64_t lease, int64_t revision) {
  const json txn = {{"compare",
                     {{{"key", Base64(key)},
                       {"result", "EQUAL"},
                       {"target", "CREATE"},
                       {"create_revision", std::to_string(revision)}}}},
                    {"success",
                     {{{"request_put",
                        {{"key", Base64(key)},
                         {"value", Base64(value)},
                         {"lease", std::to_string(lease)}}}}}}};
  return txn.dump();
}

Result<json> Parse(const std::string& text) {
  json answer = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object())
    return Corruption("etcd answered something that is not a JSON object");
  return answer;
}

}  // namespace

EtcdClient::EtcdClient(std::string endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout) {}

std::string EtcdClient::local_address() const {
  std::lock_guard<std::mutex> lock(mu_);
  return local_address_;
}

Result<std::string> EtcdClient::Post(const std::string& path,
                                     const std::string& body) {
  const auto colon = endpoint_.rfind(':');
  if (colon == std::string::npos || colon == 0 ||
      colon + 1 == endpoint_.size()) {
    return InvalidArgument("--rdzv_endpoint " + endpoint_ +
                           ": expected host:port of etcd's client URL");
  }
  const std::string host = endpoint_.substr(0, colon);
  const std::string port = endpoint_.substr(colon + 1);
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  http::request<http::string_body> request{http::verb::post, path, 11};
  request.set(http::field::host, host);
  request.set(http::field::content_type, "application/json");
  request.body() = body;
  request.prepare_payload();
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  beast::error_code failed;
  bool done = false;
  const auto fail = [&failed, &done](beast::error_code ec) {
    failed = ec;
    done = true;
  };
  // Asynchronous only for the deadline: tcp_stream's expiry covers each
  // step, and run_for the whole.
  stream.expires_after(timeout_);
  resolver.async_resolve(host, port, [&](beast::error_code ec, auto found) {
    if (ec)
      return fail(ec);
    stream.async_connect(found, [&](beast::error_code ec, auto) {
      if (ec)
        return fail(ec);
      const auto local = stream.socket().local_endpoint(ec);
      if (!ec) {
        std::lock_guard<std::mutex> lock(mu_);
        local_address_ = local.address().to_string();
      }
      http::async_write(stream, request, [&](beast::error_code ec, size_t) {
        if (ec)
          return fail(ec);
        http::async_read(stream, buffer, response,
                         [&](beast::error_code ec, size_t) { fail(ec); });
      });
    });
  });
  io.run_for(timeout_);
  const std::string at = "etcd at " + endpoint_ + " (--rdzv_endpoint)";
  if (!done)
    return Timeout(at + " did not answer " + path + " within the timeout");
  if (failed)
    return Unavailable(at + ": " + failed.message());
  if (response.result() != http::status::ok) {
    return Unavailable(at + " answered " + path + " with HTTP " +
                       std::to_string(response.result_int()) + ": " +
                       response.body());
  }
  return std::move(response.body());
}

Result<int64_t> EtcdClient::GrantLease(int64_t ttl) {
  PS_ASSIGN_OR_RETURN(std::string text,
                      Post("/v3/lease/grant", json{{"TTL", ttl}}.dump()));
  PS_ASSIGN_OR_RETURN(json answer, Parse(text));
  const int64_t id = Int(answer, "ID");
  if (id == 0)
    return Unavailable("etcd granted no lease: " + text);
  return id;
}

Result<int64_t> EtcdClient::KeepAlive(int64_t lease) {
  PS_ASSIGN_OR_RETURN(
      std::string text,
      Post("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump()));
  PS_ASSIGN_OR_RETURN(json answer, Parse(text));
  // A stream's answer: {"result": {...}}; an expired lease's has no TTL.
  const auto result = answer.find("result");
  if (result == answer.end() || !result->is_object())
    return Corruption("etcd's keepalive answer has no result: " + text);
  return Int(*result, "TTL");
}

Status EtcdClient::Revoke(int64_t lease) {
  return Post("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump())
      .status();
}

Result<std::optional<int64_t>> EtcdClient::Create(const std::string& key,
                                                  const std::string& value,
                                                  int64_t lease) {
  PS_ASSIGN_OR_RETURN(std::string text,
                      Post("/v3/kv/txn", PutIfCreatedAt(key, value, lease, 0)));
  PS_ASSIGN_OR_RETURN(json answer, Parse(text));
  if (!answer.value("succeeded", false))
    return std::optional<int64_t>();
  return std::optional<int64_t>(
      Int(answer.value("header", json::object()), "revision"));
}

Result<bool> EtcdClient::Update(const std::string& key,
                                const std::string& value, int64_t lease,
                                int64_t revision) {
  PS_ASSIGN_OR_RETURN(
      std::string text,
      Post("/v3/kv/txn", PutIfCreatedAt(key, value, lease, revision)));
  PS_ASSIGN_OR_RETURN(json answer, Parse(text));
  return answer.value("succeeded", false);
}

Result<std::optional<EtcdClient::Entry>> EtcdClient::Get(
    const std::string& key) {
  PS_ASSIGN_OR_RETURN(std::string text,
                      Post("/v3/kv/range", json{{"key", Base64(key)}}.dump()));
  PS_ASSIGN_OR_RETURN(json answer, Parse(text));
  const auto kvs = answer.find("kvs");
  if (kvs == answer.end() || !kvs->is_array() || kvs->empty())
    return std::optional<Entry>();
  const json& kv = kvs->front();
  Entry entry;
  PS_ASSIGN_OR_RETURN(entry.value, FromBase64(kv.value("value", "")));
  entry.create_revision = Int(kv, "create_revision");
  return std::optional<Entry>(std::move(entry));
}

}  // namespace pstrain::rdzv
