#include "machine_info.hpp"

#include <sys/utsname.h>

#include <sstream>

#include "gpufeed/observe/proc_stat.hpp"
#include "gpufeed/observe/process.hpp"

namespace gpufeed::bench {
namespace {

namespace observe = gpufeed::observe;

std::string proc_text(char const* path) {
  return observe::read_proc_file(path).value_or(std::string{});
}

// The first "model name" line of /proc/cpuinfo ("model name\t: AMD EPYC ...").
std::string cpu_model_name() {
  std::istringstream cpuinfo{proc_text("/proc/cpuinfo")};
  for (std::string line; std::getline(cpuinfo, line);) {
    if (!line.starts_with("model name")) continue;
    auto const start = line.find_first_not_of(' ', line.find(':') + 1);
    return start == std::string::npos ? std::string{} : line.substr(start);
  }
  return {};
}

}  // namespace

machine_info detect_machine() {
  machine_info machine;
  machine.cpus = observe::usable_cpus();
  machine.cpu_model = cpu_model_name();
  if (auto const memory = observe::parse_meminfo(proc_text("/proc/meminfo"))) {
    machine.memory_bytes = memory->total;
  }
  utsname names{};
  if (uname(&names) == 0) machine.kernel = names.release;
  // A fresh random id per boot: lent machines of one image share everything else.
  std::istringstream{proc_text("/proc/sys/kernel/random/boot_id")} >> machine.boot_id;
  std::istringstream{proc_text("/proc/loadavg")} >> machine.load_average[0] >>
      machine.load_average[1] >> machine.load_average[2];
  return machine;  // gpu stays empty here: the GPU subcommands fill it in (h2d, overlap)
}

json to_json(machine_info const& machine) {
  return {{"cpus", machine.cpus},
          {"gpu", machine.gpu ? json(*machine.gpu) : json(nullptr)},
          {"cpu_model", machine.cpu_model},
          {"memory_bytes", machine.memory_bytes},
          {"kernel", machine.kernel},
          {"boot_id", machine.boot_id},
          {"load_average", machine.load_average}};
}

}  // namespace gpufeed::bench
