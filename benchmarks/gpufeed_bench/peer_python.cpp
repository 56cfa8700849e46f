#include "peer_python.hpp"

#include <unistd.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string_view>

namespace gpufeed::bench {
namespace {

std::string shell_quote(std::string_view text) {
  std::string quoted = "'";
  for (char const c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted.push_back('\'');
  return quoted;
}

struct process_output {
  int status = 0;
  std::string text;
};

// Runs `command` through the shell, stderr merged into stdout.
process_output run_command(std::string const& command) {
  process_output out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error{"cannot start: " + command};
  std::array<char, 4096> buffer{};
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    out.text.append(buffer.data(), got);
  int const status = ::pclose(pipe);
  out.status =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return out;
}

// The last line of `text` that parses as a JSON object, or null.
json last_json_line(std::string const& text) {
  std::size_t end = text.size();
  while (end > 0) {
    auto const start = text.rfind('\n', end - 1);
    auto const begin = start == std::string::npos ? 0 : start + 1;
    std::string const line = text.substr(begin, end - begin);
    if (!line.empty() && line.front() == '{') {
      auto parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_object()) return parsed;
    }
    if (start == std::string::npos) break;
    end = start;
  }
  return nullptr;
}

std::string tail_lines(std::string const& text, std::size_t lines) {
  std::size_t pos = text.size();
  for (std::size_t n = 0; n <= lines && pos > 0; ++n) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos + 1);
}

std::string base_command(python_peer_config const& config) {
  return shell_quote(config.python) + " " + shell_quote(config.script);
}

}  // namespace

std::string find_python_script() {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
#ifdef GPUFEED_BENCH_PYTHON_DIR
  candidates.emplace_back(fs::path{GPUFEED_BENCH_PYTHON_DIR} / "torch_peer.py");
#endif
  std::error_code error;
  auto const self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    candidates.push_back(self.parent_path() / "../../benchmarks/python/torch_peer.py");
    candidates.push_back(self.parent_path() / "../share/gpufeed/python/torch_peer.py");
  }
  for (auto const& candidate : candidates) {
    if (fs::is_regular_file(candidate, error)) return fs::weakly_canonical(candidate).string();
  }
  return {};
}

std::optional<std::string> python_peer_unavailable(python_peer_config const& config,
                                                   json& versions) {
  if (::access(config.python.c_str(), X_OK) != 0) {
    return config.python + " is not an executable (use --python)";
  }
  if (config.script.empty()) return std::string{"benchmarks/python/torch_peer.py not found"};
  auto const out = run_command(base_command(config) + " --probe");
  json const answer = last_json_line(out.text);
  if (out.status != 0 || !answer.is_object() || answer.contains("error")) {
    if (answer.is_object() && answer.contains("error")) return answer["error"].get<std::string>();
    return "probe failed (status " + std::to_string(out.status) + "): " + tail_lines(out.text, 3);
  }
  versions = answer;
  return std::nullopt;
}

peer_run run_python_peer(python_peer_config const& config) {
  std::string command = base_command(config);
  auto const add = [&command](std::string_view flag, std::string const& value) {
    command.append(" ").append(flag).append(" ").append(value);
  };
  add("--dataset", shell_quote(config.dataset));
  add("--batch-size", std::to_string(config.batch_size));
  add("--workers", std::to_string(config.workers));
  add("--prefetch-factor", std::to_string(config.prefetch_factor));
  add("--warmup", std::to_string(config.warmup));
  add("--batches", std::to_string(config.batches));
  add("--seed", std::to_string(config.seed));
  add("--on-error", config.on_error);
  add("--samples", std::to_string(config.samples));
  std::string shape;
  for (auto const d : config.shape) {
    if (!shape.empty()) shape.push_back(',');
    shape.append(std::to_string(d));
  }
  if (!shape.empty()) add("--shape", shape);
  add("--cpu-cost-us", std::to_string(config.cpu_cost_us));
  add("--image-size", std::to_string(config.image_size));

  auto const out = run_command(command);
  json const answer = last_json_line(out.text);
  if (out.status != 0 || !answer.is_object() || answer.contains("error") ||
      !answer.contains("seconds")) {
    throw std::runtime_error{"torch_peer.py failed (status " + std::to_string(out.status) +
                             "): " + tail_lines(out.text, 5)};
  }
  peer_run run;
  run.seconds = answer["seconds"].get<double>();
  run.batches = answer["batches"].get<std::uint64_t>();
  run.samples = answer["samples"].get<std::uint64_t>();
  run.bytes = answer["bytes"].get<std::uint64_t>();
  run.skipped = answer["skipped"].get<std::uint64_t>();
  run.details = answer;
  return run;
}

}  // namespace gpufeed::bench
