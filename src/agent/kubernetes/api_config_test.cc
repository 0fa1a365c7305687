// SPDX-License-Identifier: Apache-2.0
#include "agent/kubernetes/api_config.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

namespace warpscope::agent::kubernetes {
namespace {

using ::testing::HasSubstr;

constexpr char kCa[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

GetEnv Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

class InClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sa_ = tmp_.path() + "/var/run/secrets/kubernetes.io/serviceaccount";
    std::filesystem::create_directories(sa_);
  }
  base::TempDir tmp_;
  std::string sa_;
};

TEST_F(InClusterTest, ReadsServiceAccountAndServiceEnvironment) {
  ASSERT_TRUE(base::WriteFile(sa_ + "/token", "tok-1\n").ok());
  ASSERT_TRUE(base::WriteFile(sa_ + "/ca.crt", kCa).ok());
  auto config = LoadInClusterConfig(
      Env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
      tmp_.path());
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->ca_pem, kCa);
  EXPECT_EQ(config->token_file, sa_ + "/token");
  EXPECT_EQ(config->origin, "in-cluster");
}

TEST_F(InClusterTest, BracketsAnIpv6ServiceHost) {
  ASSERT_TRUE(base::WriteFile(sa_ + "/token", "t").ok());
  ASSERT_TRUE(base::WriteFile(sa_ + "/ca.crt", kCa).ok());
  auto config = LoadInClusterConfig(
      Env({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "6443"}}),
      tmp_.path());
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->server, "https://[fd00::1]:6443");
}

TEST_F(InClusterTest, OutsideAPodSaysToGiveAKubeconfig) {
  auto config = LoadInClusterConfig(Env({}), tmp_.path());
  ASSERT_FALSE(config);
  EXPECT_THAT(config.error().message(), HasSubstr("KUBERNETES_SERVICE_HOST"));
  EXPECT_THAT(config.error().message(), HasSubstr("--kubeconfig"));
}

TEST_F(InClusterTest, MissingTokenIsNamed) {
  ASSERT_TRUE(base::WriteFile(sa_ + "/ca.crt", kCa).ok());
  auto config = LoadInClusterConfig(
      Env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
      tmp_.path());
  ASSERT_FALSE(config);
  EXPECT_THAT(config.error().message(), HasSubstr("service account token"));
  EXPECT_THAT(config.error().message(), HasSubstr(sa_ + "/token"));
}

TEST_F(InClusterTest, MissingCaIsNamed) {
  ASSERT_TRUE(base::WriteFile(sa_ + "/token", "t").ok());
  auto config = LoadInClusterConfig(
      Env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
      tmp_.path());
  ASSERT_FALSE(config);
  EXPECT_THAT(config.error().message(), HasSubstr("CA certificate"));
}

class KubeconfigTest : public ::testing::Test {
 protected:
  base::Result<ApiServerConfig> Load(const std::string& yaml) {
    path_ = tmp_.path() + "/config";
    EXPECT_TRUE(base::WriteFile(path_, yaml).ok());
    return LoadKubeconfig(path_);
  }
  base::TempDir tmp_;
  std::string path_;
};

constexpr char kConfigWithToken[] = R"(
apiVersion: v1
kind: Config
current-context: prod
contexts:
  - name: other
    context: {cluster: nowhere, user: nobody}
  - name: prod
    context: {cluster: c1, user: agent, namespace: ml}
clusters:
  - name: c1
    cluster:
      server: https://api.example:6443/
      certificate-authority: ca.pem
users:
  - name: agent
    user:
      token: abc123
)";

TEST_F(KubeconfigTest, CurrentContextGivesServerCaAndToken) {
  ASSERT_TRUE(base::WriteFile(tmp_.path() + "/ca.pem", kCa).ok());
  auto config = Load(kConfigWithToken);
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->server, "https://api.example:6443");
  EXPECT_EQ(config->ca_pem, kCa);  // relative to the kubeconfig's directory
  EXPECT_EQ(config->token, "abc123");
  EXPECT_TRUE(config->token_file.empty());
  EXPECT_EQ(config->origin, path_);
}

TEST_F(KubeconfigTest, DataFieldsAreBase64AndTokenFileIsKept) {
  ASSERT_TRUE(base::WriteFile(tmp_.path() + "/tok", "from-file\n").ok());
  auto config = Load(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://1.2.3.4", certificate-authority-data: "Q0EtUEVN"}}]
users:
  - name: u
    user:
      tokenFile: tok
      client-certificate-data: "Q0VSVA=="
      client-key-data: "S0VZ"
)");
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->ca_pem, "CA-PEM");
  EXPECT_EQ(config->client_cert_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
  EXPECT_EQ(config->token_file, tmp_.path() + "/tok");
}

TEST_F(KubeconfigTest, BadFilesGiveClearErrors) {
  struct Case {
    const char* yaml;
    const char* expect;
  } cases[] = {
      {"{{{", "not YAML"},
      {"- a list", "not a kubeconfig"},
      {"clusters: []", "no current-context"},
      {"current-context: x\ncontexts: []", "no entry named 'x' in 'contexts'"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: \"ftp://h\"}}]",
       "expected an https:// URL"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: \"https://h\"}}]\n"
       "users: [{name: u, user: {exec: {command: aws}}}]",
       "exec credentials"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: \"https://h\"}}]\n"
       "users: [{name: u, user: {client-certificate-data: \"Q0VSVA==\"}}]",
       "without its key"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: \"https://h\", certificate-authority: /nope}}]",
       "certificate-authority (/nope)"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: \"https://h\", certificate-authority-data: "
       "\"!!\"}}]",
       "not base64"},
  };
  for (const Case& c : cases) {
    auto config = Load(c.yaml);
    ASSERT_FALSE(config) << c.yaml;
    EXPECT_THAT(config.error().message(), HasSubstr(c.expect)) << c.yaml;
    EXPECT_THAT(config.error().message(), HasSubstr("--kubeconfig")) << c.yaml;
  }
}

TEST_F(KubeconfigTest, MissingFileIsNamed) {
  auto config = LoadKubeconfig(tmp_.path() + "/absent");
  ASSERT_FALSE(config);
  EXPECT_THAT(config.error().message(), HasSubstr("absent"));
}

TEST(DecodeBase64Test, DecodesPaddedAndWrapped) {
  EXPECT_EQ(DecodeBase64("aGVsbG8=").value_or("?"), "hello");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8h").value_or("?"), "hello!");
  EXPECT_EQ(DecodeBase64("aGk=").value_or("?"), "hi");
  EXPECT_FALSE(DecodeBase64("abc"));
}

TEST(TokenFileTest, RereadsWhenTheFileChanges) {
  base::TempDir tmp;
  const std::string path = tmp.path() + "/token";
  ASSERT_TRUE(base::WriteFile(path, "first\n").ok());
  TokenFile token(path);
  EXPECT_EQ(token.Get().value_or("?"), "first");
  EXPECT_EQ(token.Get().value_or("?"), "first");
  EXPECT_EQ(token.reads(), 1u);
  // A rotated token: new content, size and modification time.
  ASSERT_TRUE(base::WriteFile(path, "second-token").ok());
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  EXPECT_EQ(token.Get().value_or("?"), "second-token");
  EXPECT_EQ(token.reads(), 2u);
  ASSERT_TRUE(base::WriteFile(path, "").ok());
  struct timespec later[2] = {{0, UTIME_OMIT}, {23456, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), later, 0), 0);
  EXPECT_FALSE(token.Get());
}

}  // namespace
}  // namespace warpscope::agent::kubernetes
