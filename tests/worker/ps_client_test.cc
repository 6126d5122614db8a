// What a worker makes of the job spec rank 0 sends at the handshake: one
// that is not valid is refused with kInvalidArgument naming it, before any
// of it is used.

#include "worker/ps_client.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/fake_master.h"
#include "util/sha256.h"

namespace pstrain::worker {
namespace {

using pstrain::testing::FakeMaster;

// A valid job spec of two processes, one server and one worker, edited.
std::string JobJson(const std::function<void(nlohmann::json&)>& edit) {
  ps::JobSpec spec;
  spec.world_size = 2;
  nlohmann::json j = ps::ToJson(spec);
  edit(j);
  return j.dump();
}

// What PsClient::Handshake as rank 1 of `world_size` makes of `job_json`.
Result<ps::JobSpec> HandshakeWith(const std::string& job_json,
                                  int world_size = 2) {
  FakeMaster master(job_json);
  PsClient client(std::chrono::seconds(10), net::ConnectionOptions{});
  Status connected = client.Connect("127.0.0.1", master.port());
  if (!connected.ok())
    return connected;
  return client.Handshake(1, world_size);
}

TEST(PsClientTest, TakesAValidJobSpec) {
  auto spec = HandshakeWith(JobJson([](nlohmann::json& j) { j["lr"] = 0.5; }));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->lr, 0.5);
}

TEST(PsClientTest, RefusesABadJobSpecNamingIt) {
  struct Case {
    std::string json;
    std::string message;
  };
  const Case cases[] = {
      {"{", "the job spec from rank 0 is not JSON"},
      {JobJson([](nlohmann::json& j) { j["log_interval"] = 0; }),
       "the job spec from rank 0: --log_interval 0: expected >= 1"},
      {JobJson([](nlohmann::json& j) { j["batch_size"] = -3; }),
       "the job spec from rank 0: --batch_size -3: expected >= 1"},
      {JobJson([](nlohmann::json& j) { j["num_servers"] = 2; }),
       "the job spec from rank 0: world_size 2, num_servers 2: expected at "
       "least one "
       "server and one worker"},
      {JobJson([](nlohmann::json& j) {
         j["server_addrs"] = {"a:1", "b:2"};
       }),
       "the job spec from rank 0: 2 server addresses, expected none or "
       "num_servers 1"},
  };
  for (const Case& c : cases) {
    auto spec = HandshakeWith(c.json);
    ASSERT_FALSE(spec.ok()) << c.json;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << c.json;
    EXPECT_EQ(spec.status().message(), c.message) << c.json;
  }
}

TEST(PsClientTest, RefusesAMissingOrMistypedField) {
  for (const auto& edit : std::vector<std::function<void(nlohmann::json&)>>{
           [](nlohmann::json& j) { j.erase("lr"); },
           [](nlohmann::json& j) { j["lr"] = "fast"; }}) {
    auto spec = HandshakeWith(JobJson(edit));
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(spec.status().message().rfind("the job spec from rank 0: ", 0),
              0u)
        << spec.status().message();
    EXPECT_NE(spec.status().message().find("lr"), std::string::npos)
        << spec.status().message();
  }
}

TEST(PsClientTest, RefusesAJobSpecOfAnotherWorld) {
  auto spec = HandshakeWith(JobJson([](nlohmann::json&) {}), 3);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(
      spec.status().message(),
      "the job spec from rank 0: world_size 2, expected this process's 3");
  spec = HandshakeWith(JobJson([](nlohmann::json& j) {
                         j["world_size"] = 3;
                         j["num_servers"] = 2;
                         j["server_addrs"] = {"a:1", "b:2"};
                       }),
                       3);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "the job spec from rank 0: num_servers 2 makes this worker's rank "
            "1 a server");
}

// What FetchModule makes of rank 0's module reply: the bytes, once they hash
// to the job's SHA-256.
Result<std::shared_ptr<const std::string>> FetchFrom(
    const std::string& announced, const std::string& bytes,
    const std::string& job_sha256) {
  FakeMaster master(JobJson([](nlohmann::json&) {}), announced, bytes);
  PsClient client(std::chrono::seconds(10), net::ConnectionOptions{});
  Status connected = client.Connect("127.0.0.1", master.port());
  if (!connected.ok())
    return connected;
  auto spec = client.Handshake(1, 2);
  if (!spec.ok())
    return spec.status();
  return client.FetchModule(job_sha256);
}

TEST(PsClientTest, FetchesTheModuleRankZeroSends) {
  const std::string bytes(300000, 'm');
  const std::string sha = Sha256Hex(bytes);
  auto module = FetchFrom(sha, bytes, sha);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  EXPECT_EQ(**module, bytes);
}

TEST(PsClientTest, RefusesAModuleOfAnotherHash) {
  const std::string bytes = "module", other = "modulf";
  const std::string sha = Sha256Hex(bytes);
  auto named = FetchFrom(Sha256Hex(other), other, sha);
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(named.status().message(),
            "the module from rank 0 is named SHA-256 " + Sha256Hex(other) +
                ", the job's is " + sha);
  auto altered = FetchFrom(sha, other, sha);
  ASSERT_FALSE(altered.ok());
  EXPECT_EQ(altered.status().message(), "the module from rank 0 has SHA-256 " +
                                            Sha256Hex(other) +
                                            ", the job's is " + sha);
}

}  // namespace
}  // namespace pstrain::worker
