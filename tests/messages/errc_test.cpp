#include "messages/error.hpp"

#include <set>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "messages/cluster/chaos_messages.hpp"
#include "messages/cluster/membership.hpp"
#include "messages/cluster/probe_messages.hpp"
#include "messages/cluster/supervision.hpp"
#include "tests/support/test_system.hpp"

namespace darcy {
namespace {

TEST(errc, EveryCodeHasADistinctReadableName) {
  std::set<std::string> ids, texts;
  for (uint8_t code = 1; code <= static_cast<uint8_t>(errc::unauthenticated); ++code) {
    auto x = static_cast<errc>(code);
    EXPECT_NE(to_string(x), "unknown") << int{code};
    EXPECT_TRUE(ids.insert(to_string(x)).second) << to_string(x);
    EXPECT_TRUE(texts.insert(describe(x)).second) << describe(x);
  }
}

TEST(errc, RendersOnOneLineWithContext) {
  struct row {
    caf::error error;
    std::string text;
  } rows[] = {
    {make_error(errc::unknown_service, "echo"), "unknown service: echo"},
    {make_error(errc::timeout), "timed out"},
    {make_error(errc::invalid_config, "a.toml:3:1: bad"), "invalid configuration: a.toml:3:1: bad"},
    {caf::error{}, "no error"},
    {caf::make_error(caf::sec::request_timeout), "request_timeout"},
  };
  for (auto& r : rows)
    EXPECT_EQ(render(r.error), r.text);
}

TEST(errc, IsMatchesCategoryAndCode) {
  auto err = make_error(errc::read_only, "x");
  EXPECT_TRUE(is(err, errc::read_only));
  EXPECT_FALSE(is(err, errc::timeout));
  EXPECT_FALSE(is(caf::make_error(caf::sec::request_timeout), errc::read_only));
  EXPECT_FALSE(is(caf::error{}, errc::read_only)) << "no error is no darcy error";
  EXPECT_EQ(err.category(), errc_category);
}

class serialization_test : public test::system_fixture {
protected:
  template <class T>
  T round_trip(T value) {
    std::vector<char> buffer;
    caf::binary_serializer sink{sys, buffer};
    EXPECT_FALSE(sink(value));
    T result;
    caf::binary_deserializer source{sys, buffer};
    auto err = source(result);
    EXPECT_FALSE(err) << sys.render(err);
    return result;
  }
};

TEST(errc, ToPlainKeepsDarcyCodesAndNamesWhatAPeerLeftUnanswered) {
  struct case_t {
    caf::error in;
    errc out;
  };
  const case_t cases[] = {
    {make_error(errc::not_found, "x"), errc::not_found},
    {caf::make_error(caf::sec::request_timeout), errc::deadline_exceeded},
    {caf::make_error(caf::sec::request_receiver_down), errc::unavailable},
    {caf::make_error(caf::sec::no_route_to_receiving_node), errc::unavailable},
    {caf::make_error(caf::sec::cannot_connect_to_node), errc::unavailable},
    {caf::make_error(caf::sec::unexpected_message), errc::io_error},
  };
  for (auto& c : cases) {
    auto plain = to_plain(c.in);
    EXPECT_EQ(plain.code, c.out) << render(c.in);
    EXPECT_FALSE(plain.context.empty()) << render(c.in);
  }
}

TEST_F(serialization_test, DarcyErrorSurvivesTheWireUnchanged) {
  auto err = make_error(errc::unknown_embedding, "user_emb");
  auto copy = round_trip(err);
  EXPECT_EQ(copy, err);
  EXPECT_EQ(render(copy), "unknown embedding: user_emb");
  EXPECT_EQ(sys.render(copy), "unknown embedding: user_emb");
}

TEST_F(serialization_test, ProtocolStructsSurviveTheWire) {
  supervisor_spec spec{"s",
                       restart_strategy::rest_for_one,
                       4,
                       1234,
                       {{"c",
                         "darcy.echo",
                         caf::make_message(std::string{"arg"}),
                         {"b", "c"},
                         restart_type::transient,
                         "echo"}}};
  auto copy = round_trip(spec);
  EXPECT_EQ(copy.name, "s");
  EXPECT_EQ(copy.strategy, restart_strategy::rest_for_one);
  EXPECT_EQ(copy.intensity, 4u);
  EXPECT_EQ(copy.period_ms, 1234);
  ASSERT_EQ(copy.children.size(), 1u);
  EXPECT_EQ(copy.children[0].nodes, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(copy.children[0].restart, restart_type::transient);
  EXPECT_EQ(copy.children[0].args.get_as<std::string>(0), "arg");
  // Structs holding actor handles need BASP's proxy registry to deserialize; the
  // integration tests carry them between real processes.
  probe_result probe{3, 1024, 2, 0.5, {10, 20, 30}};
  auto pc = round_trip(probe);
  EXPECT_EQ(pc.latencies_ns, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(pc.seconds, 0.5);
  disruption plan{0.25, 0.5, 7, 99};
  auto dc = round_trip(plan);
  EXPECT_EQ(dc.drop, 0.25);
  EXPECT_EQ(dc.delay_ms, 7);
  EXPECT_EQ(dc.seed, 99u);
}

} // namespace
} // namespace darcy
