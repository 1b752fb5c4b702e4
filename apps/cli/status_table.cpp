#include "apps/cli/status_table.hpp"

#include <iomanip>
#include <map>

namespace darcy::apps {

void print_status(std::ostream& out, const cluster_status& status) {
  std::map<std::string, std::string> services;
  for (auto& s : status.services) {
    auto& list = services[s.node];
    list += list.empty() ? s.name : "," + s.name;
  }
  size_t up = 0;
  for (auto& m : status.members)
    up += m.state == member_state::up ? 1 : 0;
  out << "cluster seed " << status.seed << ": " << up << " of " << status.members.size()
      << " members up, " << status.services.size() << " services\n";
  out << std::left << std::setw(14) << "NAME" << std::setw(22) << "ADDRESS" << std::setw(7)
      << "STATE" << std::setw(9) << "PID" << std::setw(11) << "UPTIME" << std::setw(6) << "GPUS"
      << "SERVICES\n";
  for (auto& m : status.members) {
    auto uptime = static_cast<double>(status.now_ms - m.joined_ms) / 1000.0;
    std::ostringstream up_text;
    up_text << std::fixed << std::setprecision(1) << uptime << "s";
    auto address = m.host + ":" + std::to_string(m.port);
    auto i = services.find(m.name);
    out << std::left << std::setw(14) << m.name << std::setw(22) << address << std::setw(7)
        << to_string(m.state) << std::setw(9) << m.pid << std::setw(11)
        << (m.state == member_state::up ? up_text.str() : "-") << std::setw(6) << m.gpus
        << (i == services.end() ? "-" : i->second);
    if (!m.reason.empty())
      out << "  (" << m.reason << ")";
    out << "\n";
  }
  std::string pages;
  for (auto& m : status.members)
    if (m.http_port > 0 && m.state == member_state::up)
      pages += "  " + m.name + " http://" + m.host + ":" + std::to_string(m.http_port) + "/\n";
  if (!pages.empty())
    out << "status pages and /metrics:\n" << pages;
  out.flush();
}

} // namespace darcy::apps
