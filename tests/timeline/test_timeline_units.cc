// The timeline's pieces on one rank: the straggler counts and report, the rings' order and
// overwriting, and the file a single rank writes (parsed back with the JSON library).
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include "src/straggler_stats.h"
#include "src/timeline.h"
#include "src/timeline_output.h"

using namespace ringsync::detail;

TEST_CASE("StragglerStats counts the last rank and what the others waited") {
  StragglerStats stats(3);
  const std::int64_t first[] = {100, 400, 250};   // rank 1 last: waited 300 + 0 + 150
  const std::int64_t second[] = {500, 200, 200};  // rank 0 last: 0 + 300 + 300
  const std::int64_t third[] = {10, 90, 40};      // rank 1 last: 80 + 0 + 50
  CHECK(stats.note(first, 3) == 1);
  CHECK(stats.note(second, 3) == 0);
  CHECK(stats.note(third, 3) == 1);
  CHECK(stats.calls() == 3);
  CHECK(stats.lastCount() == std::vector<std::uint64_t>{1, 2, 0});
  CHECK(stats.waitedNs() == std::vector<std::int64_t>{600, 580, 0});
  CHECK(stats.straggler() == 1);
  const std::string report = stats.report("communicator 0");
  CHECK(report.find("rank 1: last to arrive in 2 calls (66.7%)") != std::string::npos);
  CHECK(report.find("straggler: last in more than half") != std::string::npos);
  const std::int64_t tied[] = {7, 7, 7};  // nobody waited: the lowest rank counts as last
  StragglerStats even(3);
  CHECK(even.note(tied, 3) == 0);
  CHECK(even.note(second, 3) == 0);
  CHECK(even.note(first, 3) == 1);
  CHECK(even.note(third, 3) == 1);
  CHECK(even.straggler() == -1);  // last in exactly half is not more than half
}

TEST_CASE("the rings keep the latest records in order and count what they dropped") {
  Timeline timeline("/unused", 0, 2);
  const std::int64_t arrivals[2] = {10, 20};
  const std::size_t total = Timeline::kCallCapacity + 5;
  for (std::size_t i = 0; i < total; ++i) {
    CallRecord record;
    record.sequence = i;
    timeline.commitCall(record, arrivals);
  }
  const auto calls = static_cast<const Timeline&>(timeline).calls();
  REQUIRE(calls.size() == Timeline::kCallCapacity);
  CHECK(calls.front()->sequence == 5);
  CHECK(calls.back()->sequence == total - 1);
  CHECK(timeline.droppedCalls() == 5);
  timeline.instant(SpanKind::kMarkReady, 3);
  REQUIRE(timeline.spans().size() == 1);
  CHECK(timeline.spans()[0]->endNs == timeline.spans()[0]->startNs);
}

TEST_CASE("a call open while the ring turns over is not overwritten: it is committed when it ends") {
  // Another thread's calls may fill the whole ring while one call is still running (a long
  // collective beside a busy group): the open call lives with its caller until it ends.
  Timeline timeline("/unused", 0, 2);
  CallRecord open;
  open.sequence = 123456;
  const std::int64_t arrivals[2] = {7, 8};
  for (std::size_t i = 0; i < Timeline::kCallCapacity + 3; ++i) {
    CallRecord other;
    other.sequence = i;
    timeline.commitCall(other, arrivals);
  }
  open.arrivalCount = 2;
  open.lastRank = 1;
  const std::int64_t openArrivals[2] = {100, 200};
  timeline.commitCall(open, openArrivals);
  const auto calls = static_cast<const Timeline&>(timeline).calls();
  REQUIRE(calls.back()->sequence == 123456);
  const std::int64_t* kept = timeline.arrivalsOf(calls.back());
  REQUIRE(kept != nullptr);
  CHECK(kept[0] == 100);
  CHECK(kept[1] == 200);
}

TEST_CASE("one rank's trace is a complete file with its events") {
  Timeline timeline("/unused", 0, 1);
  const int track = 3;
  timeline.addTrack(track, "communicator 3 (world ranks 0)");
  CallRecord call;
  call.kind = 1;  // allreduce
  call.dataType = 8;
  call.startNs = 1000;
  call.endNs = 3500;
  call.track = track;
  call.backend = "host-ring";
  call.algorithm = "direct";
  timeline.commitCall(call, nullptr);
  { TimelineSpan bucket(&timeline, SpanKind::kBucket, 0); }
  timeline.addSummary(R"({"communicator":3,"calls":0})");
  // Shifted onto world rank 0's clock by 500 ns.
  const std::string file = traceFile({traceEvents(timeline, 500), ""}, {traceSummary(timeline), ""}, 2, 1);
  CHECK(file.back() == '\n');
  const nlohmann::json trace = nlohmann::json::parse(file);
  const nlohmann::json& events = trace.at("traceEvents");
  auto named = [&](const std::string& name) {
    std::vector<nlohmann::json> found;
    for (const nlohmann::json& e : events)
      if (e.at("name") == name) found.push_back(e);
    return found;
  };
  const auto allreduce = named("allreduce");
  REQUIRE(allreduce.size() == 1);
  CHECK(allreduce[0].at("ph") == "X");
  CHECK(allreduce[0].at("pid") == 0);
  CHECK(allreduce[0].at("tid") == 3);
  CHECK(allreduce[0].at("ts").get<double>() == 1.5);
  CHECK(allreduce[0].at("dur").get<double>() == 2.5);
  CHECK(allreduce[0].at("args").at("algorithm") == "direct");
  CHECK(allreduce[0].at("args").at("backend") == "host-ring");
  CHECK(named("bucket 0").size() == 1);
  CHECK(named("pack").empty());  // the bucket ran no collective
  const auto rows = named("thread_name");
  REQUIRE_FALSE(rows.empty());
  CHECK(rows[0].at("tid") == 3);
  CHECK(rows[0].at("args").at("name") == "communicator 3 (world ranks 0)");
  CHECK(trace.at("otherData").at("ranks") == 2);
  CHECK(trace.at("otherData").at("ranks_in_file") == 1);
  CHECK(trace.at("otherData").at("dropped_calls") == 0);
  CHECK(trace.at("otherData").at("stragglers").at(0).at("communicator") == 3);
  const std::string path = "/tmp/ringsync-timeline-unit-" + std::to_string(::getpid()) + ".json";
  REQUIRE(writeFileAtomically(path, file));
  std::ifstream in(path);
  std::stringstream read;
  read << in.rdbuf();
  CHECK(read.str() == file);
  std::remove(path.c_str());
  CHECK_FALSE(writeFileAtomically("/nonexistent-folder/trace.json", file));
}

// traceFile joins the ranks' arrays as text (no parse at rank 0): the result must still be one
// valid array, whatever parts are empty, and keep escaped strings as they were.
TEST_CASE("the ranks' parts are joined into one array of events") {
  auto names = [&](const std::vector<std::string>& parts) {
    const nlohmann::json trace = nlohmann::json::parse(traceFile(parts, {}, 3, 3));
    std::vector<std::string> found;
    for (const nlohmann::json& e : trace.at("traceEvents")) found.push_back(e.at("name"));
    return found;
  };
  const std::string quoted = nlohmann::json::array({{{"name", "q\"\\\n\x01"}}}).dump();
  CHECK(names({R"([{"name":"a"}])", "", "[]", R"([{"name":"b"},{"name":"c"}])", quoted}) ==
        std::vector<std::string>{"a", "b", "c", "q\"\\\n\x01"});
  CHECK(names({"", "[]"}).empty());
  CHECK(names({}).empty());
}

// Every part's summary: the straggler summaries of all of them, the dropped records added up.
TEST_CASE("the parts' summaries are merged into otherData") {
  const std::string a = R"({"stragglers":[{"communicator":0}],"dropped_calls":2,"dropped_averager_events":1})";
  const std::string b =
      R"({"stragglers":[{"communicator":1},{"communicator":2}],"dropped_calls":3,"dropped_averager_events":0})";
  const nlohmann::json trace = nlohmann::json::parse(traceFile({"[]", "", "[]"}, {a, "", b}, 3, 2));
  const nlohmann::json& other = trace.at("otherData");
  CHECK(other.at("dropped_calls") == 5);
  CHECK(other.at("dropped_averager_events") == 1);
  REQUIRE(other.at("stragglers").size() == 3);
  CHECK(other.at("stragglers").at(2).at("communicator") == 2);
}
