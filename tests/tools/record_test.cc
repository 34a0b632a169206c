// `ctxprof record`: argument parsing, the agent option string, the JVM command line, the
// library search, the option check with the agent's parser, whether the recording was written,
// and the exit status of the child.
#include "tools/record.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

namespace ctxprof::tools {
namespace {

using Args = std::vector<std::string>;

TEST(RecordTest, MapsFlagsToAgentKeysInOrder) {
  RecordOptions options;
  std::string error;
  ASSERT_TRUE(ParseRecordArguments(
      {"--event", "cpu", "--interval", "10ms", "--wall", "20ms", "--attributes", "endpoint;tenant",
       "-o", "out.jfr", "--option", "buffer=1024", "--", "java", "-Xmx1g", "-jar", "app.jar",
       "--port", "8080"},
      &options, &error))
      << error;
  std::string agent;
  ASSERT_TRUE(AgentOptionString("record", options, &agent, &error)) << error;
  EXPECT_EQ(agent,
            "start,event=cpu,interval=10ms,wall=20ms,attributes=endpoint;tenant,buffer=1024,"
            "file=out.jfr");
  std::vector<std::string> command;
  ASSERT_TRUE(JvmCommand(options, "/opt/ctxprof/libctxprof.so", agent, &command, &error));
  // The agent goes before the JVM's other options; the program's own "--port" stays after.
  EXPECT_EQ(command, (Args{"java",
                           "-agentpath:/opt/ctxprof/libctxprof.so=start,event=cpu,interval=10ms,"
                           "wall=20ms,attributes=endpoint;tenant,buffer=1024,file=out.jfr",
                           "-Xmx1g", "-jar", "app.jar", "--port", "8080"}));
}

// The options are checked with the agent's own parser before a JVM starts.
TEST(RecordTest, ChecksTheOptionsWithTheAgentsParser) {
  std::string error;
  EXPECT_TRUE(CheckAgentOptions("record", "start,event=cpu,interval=10ms,file=x.jfr", &error))
      << error;
  EXPECT_FALSE(CheckAgentOptions("record", "start,event=bogus,file=x.jfr", &error));
  EXPECT_EQ(error.rfind("record: option 'event'", 0), 0u) << error;
  EXPECT_FALSE(CheckAgentOptions("record", "start,nosuch=1,file=x.jfr", &error));
  EXPECT_EQ(error.rfind("record: unknown option 'nosuch'", 0), 0u) << error;
}

// A recording counts as written when the file appeared, or changed since the JVM started.
TEST(RecordTest, TellsWhetherTheRecordingWasWritten) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/written.jfr";
  const FileState missing = StateOf(path);
  EXPECT_FALSE(missing.exists);
  EXPECT_FALSE(RecordingWritten(missing, StateOf(path)));
  std::ofstream(path) << "one";
  const FileState created = StateOf(path);
  EXPECT_TRUE(RecordingWritten(missing, created));
  EXPECT_FALSE(RecordingWritten(created, StateOf(path)));
  std::ofstream(path, std::ios::app) << "more";
  EXPECT_TRUE(RecordingWritten(created, StateOf(path)));
}

TEST(RecordTest, EventFlagsIncludingLiveWithoutAValue) {
  RecordOptions options;
  std::string error, agent;
  ASSERT_TRUE(ParseRecordArguments({"--alloc", "512k", "--live", "--lock", "10ms", "--select",
                                    "if-context", "--", "java", "Main"},
                                   &options, &error))
      << error;
  ASSERT_TRUE(AgentOptionString("record", options, &agent, &error)) << error;
  EXPECT_EQ(agent, "start,alloc=512k,live,lock=10ms,select=if-context,file=ctxprof.jfr");
}

TEST(RecordTest, JfrSyncFlag) {
  RecordOptions options;
  std::string error, agent;
  ASSERT_TRUE(ParseRecordArguments(
      {"--jfrsync", "+jdk.FileRead+shop.Order", "-o", "out.jfr", "--", "java", "Main"}, &options,
      &error))
      << error;
  ASSERT_TRUE(AgentOptionString("record", options, &agent, &error)) << error;
  EXPECT_EQ(agent, "start,jfrsync=+jdk.FileRead+shop.Order,file=out.jfr");
}

// A repository (what otlp= and upload= need) replaces the file: the agent refuses both at once.
TEST(RecordTest, RepositoryReplacesFile) {
  RecordOptions options;
  std::string error, agent;
  ASSERT_TRUE(ParseRecordArguments({"--option", "repository=/tmp/repo", "--option",
                                    "otlp=http://127.0.0.1:4318", "--", "java", "Main"},
                                   &options, &error))
      << error;
  EXPECT_EQ(RepositoryOf(options), "/tmp/repo");
  ASSERT_TRUE(AgentOptionString("record", options, &agent, &error)) << error;
  EXPECT_EQ(agent, "start,repository=/tmp/repo,otlp=http://127.0.0.1:4318");
  EXPECT_TRUE(CheckAgentOptions("record", agent, &error)) << error;
}

TEST(RecordTest, DefaultsToCtxprofJfr) {
  RecordOptions options;
  std::string error, agent;
  ASSERT_TRUE(ParseRecordArguments({"--", "java", "Main"}, &options, &error)) << error;
  ASSERT_TRUE(AgentOptionString("record", options, &agent, &error));
  EXPECT_EQ(agent, "start,file=ctxprof.jfr");
  EXPECT_EQ(options.command, (Args{"java", "Main"}));
}

TEST(RecordTest, UsageErrorsNameTheProblem) {
  struct Case {
    Args args;
    const char* message;
  };
  const Case cases[] = {
      {{"--event", "cpu"}, "no command"},
      {{"--event", "cpu", "--"}, "no command"},
      {{"--frobnicate", "1", "--", "java"}, "unknown option \"--frobnicate\""},
      {{"--interval", "--", "java"}, "--interval needs a value"},
      {{"--option", "novalue", "--", "java"}, "--option wants key=value"},
      {{"java", "Main"}, "unexpected \"java\"; the java command goes after \"--\""},
  };
  for (const Case& c : cases) {
    RecordOptions options;
    std::string error;
    EXPECT_FALSE(ParseRecordArguments(c.args, &options, &error)) << c.message;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
  RecordOptions options;
  std::string error, agent;
  ASSERT_TRUE(ParseRecordArguments({"-o", "a,b.jfr", "--", "java"}, &options, &error));
  EXPECT_FALSE(AgentOptionString("record", options, &agent, &error));
  EXPECT_NE(error.find("file=\"a,b.jfr\""), std::string::npos) << error;
  std::vector<std::string> command;
  EXPECT_FALSE(JvmCommand(options, "/tmp/a=b/libctxprof.so", "start", &command, &error));
  EXPECT_NE(error.find("holds '='"), std::string::npos) << error;
}

TEST(RecordTest, FindsTheLibraryNextToTheBinaryOrInBazelsJniFolder) {
  const std::string root = std::string(getenv("TEST_TMPDIR")) + "/find";
  ASSERT_EQ(system(("rm -rf " + root + " && mkdir -p " + root + "/tools " + root + "/jni").c_str()),
            0);
  std::string library, error;
  EXPECT_FALSE(FindAgentLibrary("record", "", root + "/tools/ctxprof", &library, &error));
  EXPECT_NE(error.find("--lib"), std::string::npos) << error;
  std::ofstream(root + "/jni/libctxprof.so") << "x";
  ASSERT_TRUE(FindAgentLibrary("record", "", root + "/tools/ctxprof", &library, &error)) << error;
  EXPECT_EQ(library, root + "/tools/../jni/libctxprof.so");
  std::ofstream(root + "/tools/libctxprof.so") << "x";
  ASSERT_TRUE(FindAgentLibrary("record", "", root + "/tools/ctxprof", &library, &error)) << error;
  EXPECT_EQ(library, root + "/tools/libctxprof.so");
  ASSERT_TRUE(FindAgentLibrary("record", root + "/jni/libctxprof.so", "ctxprof", &library, &error));
  EXPECT_EQ(library, root + "/jni/libctxprof.so");
  EXPECT_FALSE(FindAgentLibrary("record", root + "/missing.so", "ctxprof", &library, &error));
  EXPECT_NE(error.find(root + "/missing.so: no such file"), std::string::npos) << error;
}

// The release archive (bin/ctxprof, lib/libctxprof.so) and the Debian package (/usr/bin/ctxprof,
// /usr/lib/ctxprof/libctxprof.so); a miss names every place tried.
TEST(RecordTest, FindsTheLibraryOfTheReleaseLayouts) {
  const std::string root = std::string(getenv("TEST_TMPDIR")) + "/layouts";
  ASSERT_EQ(system(("rm -rf " + root + " && mkdir -p " + root + "/release/bin " + root +
                    "/release/lib " + root + "/usr/bin " + root + "/usr/lib/ctxprof")
                       .c_str()),
            0);
  std::string library, error;
  EXPECT_FALSE(FindAgentLibrary("attach", "", root + "/release/bin/ctxprof", &library, &error));
  for (const char* tried :
       {"/release/bin/../lib/libctxprof.so", "/release/bin/../lib/ctxprof/libctxprof.so",
        "/release/bin/libctxprof.so", "/release/bin/../jni/libctxprof.so"}) {
    EXPECT_NE(error.find(root + tried), std::string::npos) << tried << ": " << error;
  }
  EXPECT_NE(error.find("/proc/self/exe"), std::string::npos) << error;
  std::ofstream(root + "/release/lib/libctxprof.so") << "x";
  ASSERT_TRUE(FindAgentLibrary("attach", "", root + "/release/bin/ctxprof", &library, &error))
      << error;
  EXPECT_EQ(library, root + "/release/bin/../lib/libctxprof.so");
  std::ofstream(root + "/usr/lib/ctxprof/libctxprof.so") << "x";
  ASSERT_TRUE(FindAgentLibrary("record", "", root + "/usr/bin/ctxprof", &library, &error)) << error;
  EXPECT_EQ(library, root + "/usr/bin/../lib/ctxprof/libctxprof.so");
}

TEST(RecordTest, PropagatesTheChildsExitStatus) {
  std::string error;
  EXPECT_EQ(RunCommand({"/bin/sh", "-c", "exit 0"}, &error), 0);
  EXPECT_EQ(RunCommand({"sh", "-c", "exit 3"}, &error), 3);  // PATH lookup
  EXPECT_EQ(RunCommand({"/bin/sh", "-c", "kill -KILL $$"}, &error), 128 + 9);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_EQ(RunCommand({"/nonexistent/java", "-version"}, &error), 127);
  EXPECT_NE(error.find("cannot run /nonexistent/java: No such file"), std::string::npos) << error;
}

}  // namespace
}  // namespace ctxprof::tools
