// OtlpConfigFromOptions: the endpoint and headers the OTEL_EXPORTER_OTLP_* variables give, as
// profiler/export/otlp_exporter.h states them (the push itself: otlp_test.sh).
#include "profiler/export/otlp_exporter.h"

#include <stdlib.h>

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace ctxprof {
namespace {

class OtlpExporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : kVariables) unsetenv(name);
  }

  static UploaderConfig ConfigOk(const std::string& otlp) {
    StatusOr<Options> options = ParseOptions("repository=/tmp/r,otlp=" + otlp);
    EXPECT_TRUE(options.ok()) << options.status().message();
    StatusOr<UploaderConfig> config = OtlpConfigFromOptions(options.value());
    EXPECT_TRUE(config.ok()) << config.status().message();
    return config.ok() ? config.value() : UploaderConfig{};
  }
  static std::string ErrorOf(const std::string& otlp) {
    StatusOr<UploaderConfig> config =
        OtlpConfigFromOptions(ParseOptions("repository=/tmp/r,otlp=" + otlp).value());
    EXPECT_FALSE(config.ok());
    return config.ok() ? "" : config.status().message();
  }

  static constexpr const char* kVariables[] = {
      "OTEL_EXPORTER_OTLP_ENDPOINT",    "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT",
      "OTEL_EXPORTER_OTLP_HEADERS",     "OTEL_EXPORTER_OTLP_PROFILES_HEADERS",
      "OTEL_EXPORTER_OTLP_TIMEOUT",     "OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT",
      "OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE"};
};

TEST_F(OtlpExporterTest, ExplicitUrlGetsTheProfilesPath) {
  const UploaderConfig config = ConfigOk("https://collector.example/otel/");
  EXPECT_TRUE(config.server.https);
  EXPECT_EQ(config.server.host, "collector.example");
  EXPECT_EQ(config.server.port, 443);
  EXPECT_EQ(config.what, "POST /otel/v1development/profiles");
  EXPECT_EQ(config.option, "otlp");
  EXPECT_EQ(config.retry_statuses, (std::vector<int>{429, 502, 503, 504}));
}

TEST_F(OtlpExporterTest, EnvironmentEndpoints) {
  // Neither variable: the spec's default.
  UploaderConfig config = ConfigOk("env");
  EXPECT_EQ(config.server.host, "localhost");
  EXPECT_EQ(config.server.port, 4318);
  EXPECT_EQ(config.what, "POST /v1development/profiles");
  // The base endpoint gets the path appended, a trailing '/' or not.
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://10.0.0.1:4000/base/", 1);
  EXPECT_EQ(ConfigOk("env").what, "POST /base/v1development/profiles");
  // The per-signal one wins and is used as is ("/" when it has no path).
  setenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "http://10.0.0.2:5000/custom/in/", 1);
  config = ConfigOk("env");
  EXPECT_EQ(config.server.host, "10.0.0.2");
  EXPECT_EQ(config.what, "POST /custom/in/");
  setenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "http://10.0.0.2:5000", 1);
  EXPECT_EQ(ConfigOk("env").what, "POST /");
  // Empty = unset.
  setenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "", 1);
  EXPECT_EQ(ConfigOk("env").what, "POST /base/v1development/profiles");
  // otlp=URL ignores the variables.
  EXPECT_EQ(ConfigOk("http://h:1").what, "POST /v1development/profiles");
}

TEST_F(OtlpExporterTest, BadEndpointVariableIsNamed) {
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", 1);
  const std::string message = ErrorOf("env");
  EXPECT_NE(message.find("OTEL_EXPORTER_OTLP_ENDPOINT"), std::string::npos) << message;
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://u:hunter2@collector:4318", 1);
  EXPECT_EQ(ErrorOf("env").find("hunter2"), std::string::npos);
}

TEST_F(OtlpExporterTest, HeadersArePercentDecodedAndPerSignalWins) {
  setenv("OTEL_EXPORTER_OTLP_HEADERS", " api-key = a%2Cb%3Dc , X-Team=core,,", 1);
  setenv("OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "x-team=profiling,Extra=1", 1);
  const UploaderConfig config = ConfigOk("env");
  EXPECT_EQ(config.headers, (std::vector<std::pair<std::string, std::string>>{
                                {"api-key", "a,b=c"}, {"X-Team", "profiling"}, {"Extra", "1"}}));
}

TEST_F(OtlpExporterTest, BadHeadersNeverRepeatTheValue) {
  for (const char* bad : {"Authorization=Bearer%zzsecret", "secret-without-equals", "=secretvalue",
                          "Bad Name=secret", "k=line%0Asecret"}) {
    setenv("OTEL_EXPORTER_OTLP_HEADERS", bad, 1);
    const std::string message = ErrorOf("http://h:1");
    EXPECT_NE(message.find("OTEL_EXPORTER_OTLP_HEADERS"), std::string::npos) << bad;
    EXPECT_EQ(message.find("secret"), std::string::npos) << message;
  }
}

TEST_F(OtlpExporterTest, TimeoutAndCertificate) {
  EXPECT_EQ(ConfigOk("env").request_timeout, std::chrono::milliseconds(10000));
  EXPECT_EQ(ConfigOk("env").server.ca_file, "");
  setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2500", 1);
  setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/otel/ca.pem", 1);
  EXPECT_EQ(ConfigOk("env").request_timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(ConfigOk("env").server.ca_file, "/etc/otel/ca.pem");
  EXPECT_EQ(ConfigOk("env").server.ca_source, "OTEL_EXPORTER_OTLP_CERTIFICATE");
  setenv("OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "0", 1);  // no limit but the stop bound
  setenv("OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE", "/etc/otel/profiles-ca.pem", 1);
  EXPECT_EQ(ConfigOk("env").request_timeout, std::chrono::hours(1));
  EXPECT_EQ(ConfigOk("env").server.ca_source, "OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE");
  setenv("OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "-5", 1);  // a notice, then the default
  EXPECT_EQ(ConfigOk("env").request_timeout, std::chrono::milliseconds(10000));
}

}  // namespace
}  // namespace ctxprof
