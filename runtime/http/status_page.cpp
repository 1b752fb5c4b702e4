#include "runtime/http/status_page.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "runtime/ask.hpp"

namespace darcy::runtime {

namespace {

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string label(const metric_labels& labels, const std::string& name) {
  for (auto& [k, v] : labels)
    if (k == name)
      return v;
  return {};
}

std::string fixed(double v, int digits = 4) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, v);
  return buffer;
}

std::string cell(const std::string& text) {
  return "<td>" + html_escape(text) + "</td>";
}

/// A table of `rows` under `heading`, or a line saying there is none.
std::string table(const std::string& id, const std::string& heading,
                  const std::vector<std::string>& columns,
                  const std::vector<std::vector<std::string>>& rows, const std::string& row_class,
                  const std::string& none) {
  std::string out = "<section id=\"" + id + "\"><h2>" + heading + "</h2>";
  if (rows.empty())
    return out + "<p class=\"none\">" + none + "</p></section>";
  out += "<table><tr>";
  for (auto& c : columns)
    out += "<th>" + c + "</th>";
  out += "</tr>";
  for (auto& row : rows) {
    out += "<tr class=\"" + row_class + "\" data-name=\"" + html_escape(row.front()) + "\">";
    for (auto& value : row)
      out += cell(value);
    out += "</tr>";
  }
  return out + "</table></section>";
}

/// A polyline of the curve in a 360x120 box, with its last value as the caption. `points`
/// must not be empty.
std::string curve_figure(const std::string& name, const std::vector<curve_point>& points) {
  std::string out = "<figure class=\"curve\" data-name=\"" + html_escape(name) + "\">";
  {
    auto [lo_step, hi_step] = std::minmax_element(points.begin(), points.end(),
                                                  [](auto& a, auto& b) { return a.step < b.step; });
    auto [lo_value, hi_value] = std::minmax_element(
      points.begin(), points.end(), [](auto& a, auto& b) { return a.value < b.value; });
    double dx = std::max(hi_step->step - lo_step->step, 1e-12);
    double dy = std::max(hi_value->value - lo_value->value, 1e-12);
    out +=
      "<svg width=\"360\" height=\"120\" viewBox=\"0 0 360 120\"><polyline fill=\"none\" "
      "stroke=\"#1f6feb\" stroke-width=\"2\" points=\"";
    for (auto& p : points)
      out += fixed(5 + 350 * (p.step - lo_step->step) / dx, 6) + "," +
             fixed(115 - 110 * (p.value - lo_value->value) / dy, 6) + " ";
    out += "\"/></svg>";
  }
  auto& last = points.back();
  out += "<figcaption>" + html_escape(name) + ": " + fixed(last.value) + " at step " +
         fixed(last.step, 10) + " (" + std::to_string(points.size()) + " points)</figcaption>";
  return out + "</figure>";
}

} // namespace

node_view current_view(caf::actor_system& sys, const registry_actor& registry,
                       const std::string& node, std::chrono::milliseconds timeout) {
  node_view view;
  view.node = node;
  if (registry) {
    auto st = ask<cluster_status>(sys, registry, timeout, status_atom::value);
    if (st)
      view.cluster = std::move(*st);
    else
      view.cluster_error = render(st.error());
  } else {
    view.cluster_error = "this node has no registry";
  }
  auto& metrics = process_metrics();
  auto values =
    metrics.values({"darcy_store_rows", "darcy_restarts_total", "darcy_service_requests_total"});
  view.store_rows = std::move(values["darcy_store_rows"]);
  view.restarts = std::move(values["darcy_restarts_total"]);
  view.requests = std::move(values["darcy_service_requests_total"]);
  view.curves = metrics.curves();
  return view;
}

std::string render_status_page(const node_view& view) {
  std::string out =
    "<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" "
    "content=\"2\"><title>darcy node " +
    html_escape(view.node) +
    "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}.down{color:#b00}"
    "figure{display:inline-block;margin:0 1em 1em 0}</style></head><body><h1>darcy node " +
    html_escape(view.node) + "</h1>";
  if (!view.cluster) {
    out +=
      "<p class=\"error\">cluster status unavailable: " + html_escape(view.cluster_error) + "</p>";
  } else {
    std::vector<std::vector<std::string>> members, services;
    for (auto& m : view.cluster->members) {
      auto uptime = m.state == member_state::up
                      ? fixed((view.cluster->now_ms - m.joined_ms) / 1000.0, 6) + " s"
                      : std::string{"-"};
      auto page = m.http_port ? "http://" + m.host + ":" + std::to_string(m.http_port) + "/"
                              : std::string{"-"};
      members.push_back({m.name, m.host + ":" + std::to_string(m.port), to_string(m.state),
                         std::to_string(m.incarnation), uptime, page});
    }
    for (auto& s : view.cluster->services)
      services.push_back({s.name, s.node});
    out += "<p>seed: " + html_escape(view.cluster->seed) + "</p>";
    out += table("members", "Members",
                 {"name", "address", "state", "incarnation", "uptime", "status page"}, members,
                 "member", "no members");
    out += table("services", "Services", {"name", "node"}, services, "service", "no services");
  }
  std::vector<std::vector<std::string>> shards, restarts, requests;
  for (auto& [labels, rows] : view.store_rows)
    shards.push_back({label(labels, "instance"), label(labels, "table"), fixed(rows, 15)});
  for (auto& [labels, n] : view.restarts)
    restarts.push_back({label(labels, "child"), label(labels, "supervisor"), fixed(n, 15)});
  for (auto& [labels, n] : view.requests)
    requests.push_back({label(labels, "service") + " " + label(labels, "instance"),
                        label(labels, "op"), fixed(n, 15)});
  out += table("shards", "Shards on this node", {"shard", "table", "rows"}, shards, "shard",
               "no embedding shard runs here");
  out += table("restarts", "Restarts by supervisors here", {"child", "supervisor", "restarts"},
               restarts, "restart", "no restarts");
  out += table("requests", "Requests handled here", {"service", "operation", "requests"}, requests,
               "requests", "no requests yet");
  out += "<section id=\"curves\"><h2>Loss curves of jobs run here</h2>";
  if (view.curves.empty())
    out += "<p class=\"none\">no job has reported a loss here</p>";
  for (auto& [name, points] : view.curves)
    if (!points.empty())
      out += curve_figure(name, points);
  out +=
    "</section><p><a href=\"/metrics\">/metrics</a> · <a href=\"/status.json\">"
    "/status.json</a></p></body></html>\n";
  return out;
}

std::string render_status_json(const node_view& view) {
  nlohmann::json j;
  j["node"] = view.node;
  if (view.cluster) {
    j["seed"] = view.cluster->seed;
    for (auto& m : view.cluster->members)
      j["members"].push_back({{"name", m.name},
                              {"host", m.host},
                              {"port", m.port},
                              {"state", to_string(m.state)},
                              {"incarnation", m.incarnation},
                              {"http_port", m.http_port}});
    for (auto& s : view.cluster->services)
      j["services"].push_back({{"name", s.name}, {"node", s.node}});
  } else {
    j["cluster_error"] = view.cluster_error;
  }
  auto series = [](const std::vector<std::pair<metric_labels, double>>& values) {
    auto list = nlohmann::json::array();
    for (auto& [labels, value] : values) {
      nlohmann::json entry;
      for (auto& [k, v] : labels)
        entry[k] = v;
      entry["value"] = value;
      list.push_back(entry);
    }
    return list;
  };
  j["store_rows"] = series(view.store_rows);
  j["restarts"] = series(view.restarts);
  j["requests"] = series(view.requests);
  for (auto& [name, points] : view.curves)
    for (auto& p : points)
      j["curves"][name].push_back({p.step, p.value});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

http_handler node_http_handler(caf::actor_system& sys, registry_actor registry, std::string node,
                               std::chrono::milliseconds timeout) {
  return [&sys, registry, node, timeout](http_request req, http_responder respond) {
    auto path = req.target.substr(0, req.target.find('?'));
    if (path != "/" && path != "/metrics" && path != "/status.json")
      return respond({404, json_error("not_found", "no route " + path +
                                                     " (try /, /metrics or "
                                                     "/status.json)")});
    if (req.method != "GET")
      return respond({405, json_error("method_not_allowed", path + " answers GET only")});
    if (path == "/metrics")
      return respond({200, process_metrics().render(), "text/plain; version=0.0.4"});
    auto view = current_view(sys, registry, node, timeout);
    if (path == "/status.json")
      return respond({200, render_status_json(view)});
    respond({200, render_status_page(view), "text/html; charset=utf-8"});
  };
}

} // namespace darcy::runtime
