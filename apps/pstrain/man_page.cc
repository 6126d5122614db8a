#include "apps/pstrain/man_page.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace pstrain::apps {
namespace {

// The date the pages' hand-written prose last changed (man(7) wants one; a
// build date would make the committed pages differ on every build).
constexpr const char* kDate = "2026-01-15";

// Text made safe for a roff line: backslashes escaped, a leading '.' or '\''
// kept from being read as a request.
std::string Roff(const std::string& text) {
  std::string out;
  for (char c : text)
    out += c == '\\' ? std::string("\\e") : std::string(1, c);
  if (!out.empty() && (out[0] == '.' || out[0] == '\''))
    out = "\\&" + out;
  return out;
}

// A flag name with its dashes as roff minus signs: "\-\-world_size".
std::string Dashes(const std::string& name) {
  std::string out;
  for (char c : name)
    out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

std::string Upper(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void Head(std::ostream& s, const std::string& name, const std::string& summary,
          const std::string& version) {
  s << ".TH " << Upper(name) << " 1 " << kDate << " \"pstrain " << version
    << "\" \"User Commands\"\n"
    << ".SH NAME\n"
    << Dashes(name) << " \\- " << Roff(summary) << "\n";
}

void Flag(std::ostream& s, const FlagModel& f) {
  s << ".TP\n";
  for (size_t i = 0; i < f.names.size(); ++i) {
    s << (i ? ", " : "") << "\\fB" << Dashes(f.names[i]) << "\\fR";
  }
  if (!f.value_type.empty())
    s << " \\fI" << Roff(f.value_type) << "\\fR";
  s << "\n" << Roff(f.description.empty() ? "(no description)" : f.description);
  if (!f.default_value.empty())
    s << " (default: " << Roff(f.default_value) << ")";
  s << "\n";
}

// The flags of `c` under one .SS per --help group, in first-seen order.
void Flags(std::ostream& s, const CommandModel& c) {
  std::vector<std::string> groups;
  for (const FlagModel& f : c.flags) {
    if (std::find(groups.begin(), groups.end(), f.group) == groups.end()) {
      groups.push_back(f.group);
    }
  }
  for (const std::string& group : groups) {
    if (groups.size() > 1)
      s << ".SS \"" << Roff(group) << "\"\n";
    for (const FlagModel& f : c.flags) {
      if (f.group == group)
        Flag(s, f);
    }
  }
}

void Synopsis(std::ostream& s, const CommandModel& c) {
  s << ".B " << c.Joined(" ") << "\n";
  if (!c.children.empty())
    s << ".I subcommand\n";
  s << ".RI [ options ]\n";
}

const char kRootProse[] = R"(.SH DESCRIPTION
pstrain trains PyTorch models with the parameter-server paradigm: servers
(ranks 0 to num_servers\-1; rank 0 is also the master) hold the model's
parameters, workers pull them, compute gradients on their own shard of the
data and push them back.
.B pstrain launch
runs a whole job on one machine;
.B pstrain run
runs every process of a job started by srun, mpirun, torchrun or a
Kubernetes Indexed Job.
Every job flag can also come from a TOML or INI file given by
.BR \-\-config ;
flags on the command line win.
.SH ENVIRONMENT
Where
.BR \-\-rank ,
.BR \-\-world_size ,
.B \-\-master_addr
or
.B \-\-master_port
is not given, the first variable set is used:
.TP
rank
RANK (torchrun), OMPI_COMM_WORLD_RANK (Open MPI), SLURM_PROCID (Slurm)
.TP
world size
WORLD_SIZE, OMPI_COMM_WORLD_SIZE, SLURM_NTASKS
.TP
master address
MASTER_ADDR, the first host of SLURM_JOB_NODELIST
.TP
master port
MASTER_PORT
.SH EXIT STATUS
0 done, 1 the run failed (a peer lost or silent), 2 bad usage or bad input.
.SH FILES
.TP
pstrain\-model.pt
The trained model: a state_dict that Python's torch.load reads;
pstrain\-model.json beside it holds the job spec, version and step.
)";

std::string RootPage(const CommandModel& root, const std::string& version) {
  std::ostringstream s;
  Head(s, "pstrain", root.description.substr(root.description.find(": ") + 2),
       version);
  s << ".SH SYNOPSIS\n";
  for (const CommandModel& c : root.children) {
    Synopsis(s, c);
    s << ".br\n";
  }
  s << ".B pstrain \\-\\-version\n" << kRootProse << ".SH SUBCOMMANDS\n";
  for (const CommandModel& c : root.children) {
    s << ".TP\n.B " << c.Joined(" ") << "\n"
      << Roff(c.description) << "; see\n"
      << ".BR pstrain\\-" << c.path.back() << " (1).\n";
  }
  s << ".SH OPTIONS\n";
  Flags(s, root);
  s << ".SH SEE ALSO\n";
  for (size_t i = 0; i < root.children.size(); ++i) {
    s << ".BR pstrain\\-" << root.children[i].path.back() << " (1)"
      << (i + 1 < root.children.size() ? ",\n" : "\n");
  }
  return s.str();
}

std::string SubPage(const CommandModel& c, const std::string& version) {
  std::ostringstream s;
  Head(s, c.Joined("-"), c.description, version);
  s << ".SH SYNOPSIS\n";
  Synopsis(s, c);
  for (const CommandModel& child : c.children) {
    s << ".br\n";
    Synopsis(s, child);
  }
  s << ".SH DESCRIPTION\n"
    << Roff(c.description) << ".\n"
    << "Exit status: 0 done, 1 the run failed, 2 bad usage or bad input.\n"
    << ".SH OPTIONS\n";
  Flags(s, c);
  for (const CommandModel& child : c.children) {
    s << ".SH \"" << Upper(child.Joined(" ")) << "\"\n"
      << Roff(child.description) << ".\n";
    Flags(s, child);
  }
  s << ".SH SEE ALSO\n.BR pstrain (1)\n";
  return s.str();
}

}  // namespace

Result<std::string> ManPage(const CommandModel& root,
                            const std::string& subcommand,
                            const std::string& version) {
  if (subcommand.empty())
    return RootPage(root, version);
  for (const CommandModel& c : root.children) {
    if (c.path.back() == subcommand)
      return SubPage(c, version);
  }
  return InvalidArgument("man: no subcommand '" + subcommand + "'");
}

}  // namespace pstrain::apps
