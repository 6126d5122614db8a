#include "apps/pstrain/metrics_endpoint.h"

#include <chrono>
#include <thread>

#include "dashboard/page.h"
#include "util/resources.h"

namespace pstrain::apps {

namespace {

metrics::HttpHandler Fixed(std::string content_type, std::string body) {
  return [type = std::move(content_type), body = std::move(body)] {
    return metrics::HttpResponse{200, type, body};
  };
}

// Rank 0's dashboard: the live page and dygraphs, read once at start.
Status AddDashboard(std::map<std::string, metrics::HttpHandler>* routes) {
  dashboard::PageOptions page;
  PS_ASSIGN_OR_RETURN(std::string js,
                      dashboard::ReadDygraphsFile(page, "dygraph.min.js"));
  PS_ASSIGN_OR_RETURN(std::string css,
                      dashboard::ReadDygraphsFile(page, "dygraph.min.css"));
  (*routes)["/"] = Fixed("text/html; charset=utf-8", dashboard::LivePage(page));
  (*routes)["/dygraph.min.js"] =
      Fixed("text/javascript; charset=utf-8", std::move(js));
  (*routes)["/dygraph.min.css"] =
      Fixed("text/css; charset=utf-8", std::move(css));
  return Status::Ok();
}

std::map<std::string, metrics::HttpHandler> Routes(MetricsEndpoint* e,
                                                   int rank) {
  std::map<std::string, metrics::HttpHandler> routes;
  routes["/metrics"] = [e] {
    e->peak_rss->Set(static_cast<double>(PeakRssBytes()));
    return metrics::HttpResponse{200, "text/plain; version=0.0.4",
                                 e->registry.Render()};
  };
  if (rank == 0) {
    routes["/api/events"] = [e] {
      return metrics::HttpResponse{200, "application/json",
                                   e->history.RunsJson("live")};
    };
  }
  return routes;
}

}  // namespace

Result<std::unique_ptr<MetricsEndpoint>> StartMetrics(const LocalFlags& f,
                                                      int rank,
                                                      const std::string& role) {
  if (f.metrics_port < 0)
    return std::unique_ptr<MetricsEndpoint>();
  auto e = std::make_unique<MetricsEndpoint>();
  e->registry.SetLabel("rank", std::to_string(rank));
  e->registry.SetLabel("role", role);
  e->registry.SetLabel("job", "");
  e->peak_rss = metrics::AddProcessMetrics(&e->registry);
  if (rank == 0)
    e->eval = metrics::AddEvalMetrics(&e->registry);
  metrics::HttpServerOptions o;
  o.host = f.metrics_addr;
  o.port = f.metrics_port;
  auto routes = Routes(e.get(), rank);
  if (rank == 0)
    PS_RETURN_IF_ERROR(AddDashboard(&routes));
  e->http = std::make_unique<metrics::HttpServer>(o, std::move(routes));
  PS_RETURN_IF_ERROR(e->http->Start());
  return e;
}

std::unique_ptr<report::EventLog> MakeEventLog(const LocalFlags& f, int rank,
                                               const std::string& role,
                                               MetricsEndpoint* e) {
  report::EventLogOptions o = EventLogOptionsFor(f, rank, role);
  if (e != nullptr && rank == 0) {
    o.tap = [e](const nlohmann::json& event) {
      e->history.Add(event);
      metrics::NoteEval(e->eval, event);
    };
  }
  return std::make_unique<report::EventLog>(o);
}

void LingerForScrapes(const LocalFlags& f, const MetricsEndpoint* e) {
  if (e != nullptr && f.metrics_linger > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(
        static_cast<int64_t>(f.metrics_linger * 1000)));
  }
}

}  // namespace pstrain::apps
