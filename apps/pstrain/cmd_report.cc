// pstrain report RUN.jsonl [RUN2.jsonl ...] -o report.html: one
// self-contained HTML page that draws the runs' curves overlaid, for
// comparing runs (lib/dashboard; share/doc/dashboard.md).

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
#include "dashboard/page.h"
#include "dashboard/run_events.h"

namespace pstrain::apps {

namespace {

struct ReportFlags {
  std::vector<std::string> runs;
  std::string output = "report.html";
  std::vector<std::string> names;  // empty: the files' stems
  std::string title;               // "": "pstrain report: <names>"
  size_t max_points = dashboard::RunEventsOptions().max_points_per_rank;
  dashboard::PageOptions page;
};

Result<std::vector<dashboard::Run>> ReadRuns(const ReportFlags& f) {
  if (!f.names.empty() && f.names.size() != f.runs.size()) {
    return InvalidArgument("--name needs one name per run file: " +
                           std::to_string(f.names.size()) + " given for " +
                           std::to_string(f.runs.size()));
  }
  dashboard::RunEventsOptions options;
  options.max_points_per_rank = f.max_points;
  std::vector<dashboard::Run> runs;
  for (size_t i = 0; i < f.runs.size(); ++i) {
    PS_ASSIGN_OR_RETURN(dashboard::Run run,
                        dashboard::ReadRunEvents(f.runs[i], options));
    if (!f.names.empty())
      run.name = f.names[i];
    runs.push_back(std::move(run));
  }
  return runs;
}

Status WriteReport(ReportFlags& f) {
  PS_ASSIGN_OR_RETURN(std::vector<dashboard::Run> runs, ReadRuns(f));
  size_t events = 0;
  f.page.title = f.title;
  for (const dashboard::Run& run : runs) {
    events += run.events.size();
    if (f.title.empty())
      f.page.title +=
          (f.page.title.empty() ? "pstrain report: " : ", ") + run.name;
  }
  PS_ASSIGN_OR_RETURN(std::string html,
                      dashboard::ReportPage(std::move(runs), f.page));
  std::ofstream out(f.output, std::ios::binary | std::ios::trunc);
  if (!(out << html) || !out.flush())
    return InvalidArgument("-o " + f.output + ": cannot write it");
  std::cerr << "pstrain: wrote " << f.output << " (" << f.runs.size()
            << " runs, " << events << " events, " << html.size() << " bytes)\n";
  return Status::Ok();
}

}  // namespace

RunFn SetupReport(CLI::App* sub) {
  auto f = std::make_shared<ReportFlags>();
  sub->add_option("runs", f->runs,
                  "The JSON Lines output of pstrain serve, work or launch "
                  "(their JSON option), one file per run")
      ->required();
  sub->add_option("-o,--output", f->output, "The HTML file to write")
      ->capture_default_str();
  sub->add_option("--name", f->names,
                  "The runs' names in legends, one per file, in order "
                  "(comma-separated or repeated); default: the files' names "
                  "without extension")
      ->delimiter(',');
  sub->add_option("--title", f->title,
                  "The page's title; default: pstrain report: and the names");
  sub->add_option("--max_points", f->max_points,
                  "Most step events kept per rank and run (evenly thinned, "
                  "the last one kept)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{2}, size_t{1} << 30));
  sub->add_option("--dygraphs_dir", f->page.dygraphs_dir,
                  "Folder of dygraph.min.js and dygraph.min.css (Debian's "
                  "libjs-dygraphs), inlined in the page")
      ->capture_default_str();
  return [f] {
    const Status s = WriteReport(*f);
    if (s.ok())
      return 0;
    std::cerr << "pstrain: error: " << s.message() << "\n";
    return ExitCodeFor(s);
  };
}

}  // namespace pstrain::apps
