#include "machine_info.hpp"

#include <sys/utsname.h>

#include <fstream>
#include <sstream>

#include "gpufeed/detail/host_resources.hpp"

namespace gpufeed::bench {
namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo{"/proc/cpuinfo"};
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    auto const colon = line.find(':');
    if (colon == std::string::npos) break;
    auto const start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? std::string{} : line.substr(start);
  }
  return {};
}

std::uint64_t total_memory_bytes() {
  std::ifstream meminfo{"/proc/meminfo"};
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream fields{line.substr(9)};
    std::uint64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return 0;
}

// A fresh random id per boot: lent machines of one image share everything else.
std::string boot_id() {
  std::ifstream in{"/proc/sys/kernel/random/boot_id"};
  std::string id;
  std::getline(in, id);
  return id;
}

std::string kernel_release() {
  utsname names{};
  if (uname(&names) != 0) return {};
  return names.release;
}

std::array<double, 3> load_average() {
  std::array<double, 3> load{};
  std::ifstream loadavg{"/proc/loadavg"};
  loadavg >> load[0] >> load[1] >> load[2];
  return load;
}

}  // namespace

machine_info detect_machine() {
  machine_info machine;
  machine.cpus = gpufeed::detail::usable_cpus();
  machine.cpu_model = cpu_model_name();
  machine.memory_bytes = total_memory_bytes();
  machine.kernel = kernel_release();
  machine.boot_id = boot_id();
  machine.load_average = load_average();
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
