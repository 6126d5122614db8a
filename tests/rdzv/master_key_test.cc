// MasterKey and EtcdClient against a fake etcd on loopback: an HTTP server
// on a port the kernel picks that answers etcd's JSON gateway paths as the
// test says, and records what was asked. The real etcd is EtcdTest's.

#include "rdzv/master_key.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/streambuf.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pstrain::rdzv {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Answers each request with what `answer` returns for its path and body.
class FakeEtcd {
 public:
  using Answer = std::function<json(const std::string& path, const json& body)>;

  explicit FakeEtcd(Answer answer)
      : answer_(std::move(answer)),
        acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeEtcd() {
    stopping_ = true;
    asio::error_code ec;
    // Wakes the accept with a connection of our own.
    asio::ip::tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
  }
  std::string endpoint() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }
  std::vector<std::string> paths() {
    std::lock_guard<std::mutex> lock(mu_);
    return paths_;
  }

 private:
  void Serve() {
    while (!stopping_) {
      asio::ip::tcp::socket socket(io_);
      asio::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stopping_)
        continue;
      asio::streambuf in;
      const size_t head = asio::read_until(socket, in, "\r\n\r\n", ec);
      if (ec)
        continue;
      std::string text(asio::buffers_begin(in.data()),
                       asio::buffers_end(in.data()));
      const std::string header = text.substr(0, head);
      const std::string path = header.substr(5, header.find(' ', 5) - 5);
      const auto at = header.find("Content-Length: ");
      const size_t length = std::stoul(header.substr(at + 16));
      while (text.size() < head + length) {
        char more[4096];
        const size_t n = socket.read_some(asio::buffer(more), ec);
        if (ec)
          break;
        text.append(more, n);
      }
      const json body = json::parse(text.substr(head, length));
      {
        std::lock_guard<std::mutex> lock(mu_);
        paths_.push_back(path);
      }
      const std::string reply = answer_(path, body).dump();
      const std::string response =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
          "Content-Length: " +
          std::to_string(reply.size()) + "\r\n\r\n" + reply;
      asio::write(socket, asio::buffer(response), ec);
    }
  }

  Answer answer_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<std::string> paths_;
};

// A range answer holding `value` (base64 of it, as etcd writes) created at
// `revision`; none for "".
json Range(const std::string& base64_value, int64_t revision) {
  if (base64_value.empty())
    return {{"header", {{"revision", "9"}}}};
  return {{"kvs",
           {{{"key", "eA=="},
             {"value", base64_value},
             {"create_revision", std::to_string(revision)}}}}};
}

TEST(LeaseForTest, IsDeadAfterInWholeSecondsAtLeastTwo) {
  EXPECT_EQ(LeaseFor(3), std::chrono::seconds(3));
  EXPECT_EQ(LeaseFor(3.2), std::chrono::seconds(4));
  EXPECT_EQ(LeaseFor(0.5), std::chrono::seconds(2));
  EXPECT_EQ(LeaseFor(0), std::chrono::seconds(30));
}

TEST(EtcdClientTest, AnEndpointWithoutAPortIsRefusedNamingTheFlag) {
  EtcdClient client("localhost", 1s);
  const auto got = client.Get("k");
  ASSERT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("--rdzv_endpoint localhost"),
            std::string::npos);
}

TEST(MasterKeyTest, CampaignWinsOnlyWhereTheKeyIsFreeAndItsRevisionIsTheTerm) {
  std::atomic<bool> held{true};
  FakeEtcd etcd([&](const std::string& path, const json& body) -> json {
    if (path == "/v3/lease/grant")
      return {{"ID", "77"}, {"TTL", "2"}};
    if (path == "/v3/kv/txn") {
      // Create compares the key's creation with 0.
      EXPECT_EQ(body["compare"][0]["create_revision"], "0");
      EXPECT_EQ(body["success"][0]["request_put"]["lease"], "77");
      return {{"header", {{"revision", "12"}}}, {"succeeded", !held}};
    }
    return {{"result", {{"TTL", "2"}}}};  // revoke, keepalive
  });
  MasterKey key(etcd.endpoint(), "job", 5s);
  auto won = key.Campaign(2s, [](const Status&) {});
  ASSERT_TRUE(won.ok()) << won.status().ToString();
  EXPECT_FALSE(*won);
  EXPECT_EQ(key.term(), 0);
  // A lost campaign gives its lease back: the next takes a new one.
  EXPECT_EQ(etcd.paths()[2], "/v3/lease/revoke");
  held = false;
  won = key.Campaign(2s, [](const Status&) {});
  ASSERT_TRUE(won.ok()) << won.status().ToString();
  EXPECT_TRUE(*won);
  EXPECT_EQ(key.term(), 12);
}

TEST(MasterKeyTest, FindPrefersAnAddressOtherThanTheLostOne) {
  // "10.0.0.1:5" and "10.0.0.2:6" in base64.
  const std::string old_master = "MTAuMC4wLjE6NQ==";
  const std::string successor = "MTAuMC4wLjI6Ng==";
  std::atomic<int> asked{0};
  FakeEtcd etcd([&](const std::string&, const json&) -> json {
    const int n = ++asked;
    if (n <= 2)
      return Range(old_master, 3);  // the dead master's lease holds
    if (n == 3)
      return Range("", 0);  // lapsed
    return Range(successor, 8);
  });
  MasterKey key(etcd.endpoint(), "job", 5s);
  auto found = key.Find(60s, "10.0.0.1:5");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->address, "10.0.0.2:6");
  EXPECT_EQ(found->term, 8);
  // With nothing lost, the first announced one.
  asked = 0;
  found = key.Find(60s);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->address, "10.0.0.1:5");
}

TEST(MasterKeyTest, FindWithNoMasterSaysSoAfterItsWait) {
  FakeEtcd etcd([](const std::string&, const json&) { return Range("", 0); });
  MasterKey key(etcd.endpoint(), "job", 5s);
  const auto found = key.Find(0ms);
  ASSERT_EQ(found.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(found.status().message().find("/pstrain/job/master"),
            std::string::npos);
}

TEST(MasterKeyTest, AMasterWhoseLeaseLapsedIsToldOnceNamingItsTerm) {
  FakeEtcd etcd([](const std::string& path, const json&) -> json {
    if (path == "/v3/lease/grant")
      return {{"ID", "5"}, {"TTL", "2"}};
    if (path == "/v3/kv/txn")
      return {{"header", {{"revision", "4"}}}, {"succeeded", true}};
    return {{"result", {{"ID", "5"}}}};  // keepalive: no TTL left
  });
  std::mutex mu;
  std::condition_variable told;
  std::vector<std::string> why;
  MasterKey key(etcd.endpoint(), "job", 5s);
  auto won = key.Campaign(2s, [&](const Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    why.push_back(s.message());
    told.notify_all();
  });
  ASSERT_TRUE(won.ok() && *won);
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(told.wait_for(lock, 60s, [&] { return !why.empty(); }));
  EXPECT_NE(why[0].find("lost the master's lease in etcd (term 4)"),
            std::string::npos)
      << why[0];
}

}  // namespace
}  // namespace pstrain::rdzv
