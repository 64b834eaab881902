// read_file: the bytes of a file, or an error naming the path and errno's text; a missing file
// is told apart (absent()), a directory and a file over the cap are errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/read_file.hpp"

namespace {

using vxfed::read_file;

class ReadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vxfed-read-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string dir_;
};

TEST_F(ReadFileTest, ANormalFileIsReadWholeWithItsBytesAsTheyAre) {
  std::string bytes = "line one\r\nline two\n";
  bytes.push_back('\0');
  bytes += std::string(200000, 'x');  // more than one read's buffer
  const auto path = write("normal", bytes);
  auto r = read_file(path);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, bytes);
}

TEST_F(ReadFileTest, AnEmptyFileIsEmptyNotAnError) {
  auto r = read_file(write("empty", ""));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, "");
}

TEST_F(ReadFileTest, AMissingFileIsAbsentAndTheErrorNamesThePathAndErrno) {
  const std::string path = dir_ + "/missing";
  auto r = read_file(path);
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().absent());
  EXPECT_EQ(r.error().code, ENOENT);
  EXPECT_EQ(r.error().path, path);
  EXPECT_EQ(r.error().message(), "cannot read " + path + ": No such file or directory");
}

TEST_F(ReadFileTest, ADirectoryIsAnErrorNotAnEmptyFile) {
  auto r = read_file(dir_);
  ASSERT_FALSE(r);
  EXPECT_FALSE(r.error().absent());
  EXPECT_EQ(r.error().code, EISDIR);
  EXPECT_EQ(r.error().message(), "cannot read " + dir_ + ": Is a directory");
}

TEST_F(ReadFileTest, AFileOverTheCapIsAnErrorAndOneAtTheCapIsRead) {
  const auto path = write("capped", std::string(100, 'a'));
  auto at = read_file(path, 100);
  ASSERT_TRUE(at) << at.error().message();
  EXPECT_EQ(at->size(), 100u);
  auto over = read_file(path, 99);
  ASSERT_FALSE(over);
  EXPECT_FALSE(over.error().absent());
  EXPECT_EQ(over.error().code, EFBIG);
  EXPECT_EQ(over.error().message(), "cannot read " + path + ": larger than 99 bytes");
  auto none = read_file(write("zero-cap", "a"), 0);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, EFBIG);
  auto empty = read_file(write("empty", ""), 0);
  EXPECT_TRUE(empty);
}

TEST_F(ReadFileTest, AFileWhoseSizeIsKnownOnlyByReadingItIsReadToItsEnd) {
  // /proc reports size 0; the cap still holds while reading.
  auto r = read_file("/proc/self/status");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_NE(r->find("Pid:"), std::string::npos);
  auto capped = read_file("/proc/self/status", 16);
  ASSERT_FALSE(capped);
  EXPECT_EQ(capped.error().code, EFBIG);
}

TEST_F(ReadFileTest, AnOpenErrorOtherThanAMissingFileIsNotAbsent) {
  const std::string path = write("plain", "x") + "/below";  // a path through a file
  auto r = read_file(path);
  ASSERT_FALSE(r);
  EXPECT_FALSE(r.error().absent());
  EXPECT_EQ(r.error().code, ENOTDIR);
  EXPECT_EQ(r.error().message(), "cannot read " + path + ": Not a directory");
}

}  // namespace
